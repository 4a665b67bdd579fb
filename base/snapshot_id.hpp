// snapshot_id — the form of a snapshot's id (docs/snapshots.md): "snap-" and 16 lowercase hex
// digits, chosen by sandboxd. Every layer that takes one from a caller checks it with this one
// function, so a forged id ("../x", "snap-1", a path) is refused before it names anything.
#pragma once

#include <string_view>

namespace sandboxd {

inline constexpr std::size_t k_snapshot_id_length = 21;

constexpr bool is_snapshot_id(std::string_view id) {
  if (id.size() != k_snapshot_id_length || id.substr(0, 5) != "snap-")
    return false;
  for (char c : id.substr(5))
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return true;
}

} // namespace sandboxd
