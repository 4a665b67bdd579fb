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

// The kernel that applies the filter. Linux honours an errno action's `errnoRet`; gVisor's
// OCI filter loader does not (runsc/specutils/seccomp: every SCMP_ACT_ERRNO returns
// EPERM), so there clone3 is refused with SCMP_ACT_TRACE, which with no tracer returns
// ENOSYS in gVisor as in Linux. Either way libc's pthread_create and fork fall back to
// clone(), whose flags the filter reads; an EPERM from clone3 would make them fail
// instead (no thread could start: python's threading, node).
enum class seccomp_kernel { linux_kernel, gvisor };

// The profile as an OCI `linux.seccomp` object.
nlohmann::json default_seccomp_profile(seccomp_kernel kernel = seccomp_kernel::linux_kernel);

// The names the profile allows without conditions (for tests and docs/security.md).
const std::vector<std::string_view>& seccomp_allowed_syscalls();

} // namespace sandboxd::runtime
