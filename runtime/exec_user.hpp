// exec_user — who an exec runs as inside its sandbox: a user as a template's USER or a
// request names it (`name`, `uid`, `name:group`, `uid:gid`, ...), resolved the way an OCI
// image's user is, against the sandbox's own /etc/passwd and /etc/group. Pure: the caller
// reads the two files (bounded) and hands their text in.
//
// Every id is one of the sandbox's own: its user namespace maps ids 0-65535 to its range of
// host ids (runtime/id_map.hpp), so a uid or gid above 65535 is refused here rather than
// left for setuid(2) to fail on.
#pragma once

#include "runtime/errc.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sandboxd::runtime {

// The highest id inside a sandbox (its user namespace maps 65536 ids).
inline constexpr std::uint32_t k_max_sandbox_id = 65535;
// Supplementary groups an exec gets at most (SBA_MAX_GROUPS).
inline constexpr std::size_t k_max_exec_groups = 64;

struct exec_user {
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::vector<std::uint32_t> groups; // supplementary, sorted, without gid
  std::string home = "/root";        // HOME: the user's directory in /etc/passwd, else "/"
  bool operator==(const exec_user&) const = default;
};

// Whether `spec` means the sandbox's root with no lookup at all ("", "root", "0", "0:0").
bool is_root_user(std::string_view spec);

// `spec` is `user[:group]`, each a name or a decimal id. A user name must be in `passwd`
// (its uid, primary gid and home); a numeric uid need not be (gid 0 then, home "/"); a
// group (name in `group`, or id) replaces the primary gid. Without `:group` the user's
// supplementary groups are those of `group` that list the user's name. invalid_argument,
// naming the user or group and what to give instead, for a name that is not there, an id
// above 65535, or a spec that is not of that form.
outcome<exec_user> resolve_exec_user(std::string_view spec, std::string_view passwd,
                                     std::string_view group);

} // namespace sandboxd::runtime
