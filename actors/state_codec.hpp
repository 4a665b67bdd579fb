// state_codec.hpp — a sandbox's state and event offsets as bytes, for state snapshots
// (docs/actors.md, "Snapshot format").
//
// Guarantees: decode_state(encode_state(x)) == x for every state; decoding bytes that are
// not an encoded state returns nullopt, never crashes. A state written before a field was
// added (the fields after the offsets) still decodes, with that field empty. The creation spec is
// stored as an encoded `created` event, so it follows the event schema's compatibility rules.
#pragma once

#include "actors/sandbox_machine.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandboxd::actors {

// One sandbox as recovery knows it: its state and the offsets of its events in its
// partition, in sequence order (what reactivation reads back from the log).
struct recovered_sandbox {
  sandbox_state state;
  std::vector<std::int64_t> offsets;
  bool operator==(const recovered_sandbox&) const = default;
};

void encode_state(const recovered_sandbox& s, std::string& out);
std::optional<recovered_sandbox> decode_state(std::string_view bytes);

} // namespace sandboxd::actors
