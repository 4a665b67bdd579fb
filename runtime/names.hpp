// names — the one validator for every name a caller sends that becomes part of a host
// path, a mount option, a cgroup or a runtime container id: sandbox ids and template
// names. Both are 1-64 characters of [a-z0-9_-], the first a letter or digit. Such a
// name holds no '/', '.', ',', ':', NUL or whitespace, so it is always one path
// component below the directory it is joined to, never an option or a flag, and never
// a prefix-ambiguous runtime id once the driver has appended its suffix.
#pragma once

#include "base/snapshot_id.hpp"
#include "runtime/errc.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sandboxd::runtime {

inline constexpr std::size_t k_max_name_length = 64;

// True when `name` follows the rule above.
bool is_valid_name(std::string_view name);

// True when `name` is one plain path component: not empty, not "." or "..", and
// without '/' or NUL.
bool is_plain_component(std::string_view name);
// Throws std::invalid_argument naming `what` unless is_plain_component(name). This is the
// last guard before a name becomes part of a path the driver writes, mounts or deletes
// below its data directory: it holds even for a name that no validator looked at.
void require_plain_component(std::string_view name, const char* what);

// invalid_argument naming the sandbox id and the rule, or ok.
outcome<void> check_sandbox_id(std::string_view id);
// Snapshot ids (docs/snapshots.md) are chosen by sandboxd: "snap-" and 16 lowercase hex
// digits. A forged one (any other form) is invalid_argument naming the rule.
using sandboxd::is_snapshot_id;
outcome<void> check_snapshot_id(std::string_view id);
// invalid_argument naming the template name and the rule, or ok.
outcome<void> check_template_name(std::string_view name);
// A sandbox's environment: names of [A-Za-z_][A-Za-z0-9_]* (at most 256 bytes), values
// without NUL, in UTF-8 (what OCI runtimes take). invalid_argument names the variable,
// never its value (which may be a secret); or ok.
outcome<void> check_env(const std::vector<std::pair<std::string, std::string>>& env);

} // namespace sandboxd::runtime
