// seccomp_profile — the system calls a crun sandbox may make, as data: the OCI
// `linux.seccomp` object put into every config.json (and, with a runsc that can load
// OCI filters, into gVisor's own kernel).
//
// The reference is Docker's default profile (moby profiles/seccomp/default.json) for a
// process without CAP_SYS_ADMIN and the other capabilities sandboxes do not get: an
// allow list on x86-64 (and its x86 and x32 views), everything else fails with EPERM.
// So a sandbox cannot make a new user namespace (unshare, clone or clone3 with namespace
// flags), mount anything (mount, fsopen, open_tree, move_mount), load BPF, use keyrings
// (add_key, keyctl, request_key), userfaultfd, perf_event_open, kexec, modules, reboot,
// or settimeofday. Tighter than Docker's: ptrace, process_vm_readv/writev, kcmp and the
// io_uring calls are not allowed either (a sandbox has no CAP_SYS_PTRACE and io_uring is
// a kernel surface no agent needs).
#pragma once

#include <nlohmann/json.hpp>

#include <string_view>
#include <vector>

namespace sandboxd::runtime {

// The profile as an OCI `linux.seccomp` object.
nlohmann::json default_seccomp_profile();

// The names the profile allows without conditions (for tests and docs/security.md).
const std::vector<std::string_view>& seccomp_allowed_syscalls();

} // namespace sandboxd::runtime
