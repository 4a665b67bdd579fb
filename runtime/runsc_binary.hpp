// runsc_binary — which runsc the oci driver runs, and what it can do.
//
// In order: $SANDBOXD_RUNSC; the build of gvisor.dev/gvisor at the pinned version that
// scripts/setup makes, $SANDBOXD_CACHE (default ~/.cache/sandboxd)/runsc-<version>/runsc;
// `runsc` in PATH (Debian 12's, from December 2022).
//
// A runsc is `current` when it has the systrap platform: such releases also implement
// child subreapers (the exec guard relies on them) and default to exclusive file access
// (docs/security.md). With an older one the driver falls back to ptrace and shared file
// access, and `note` says what the sandboxes then lack. `oci_seccomp` says whether it
// can load the OCI seccomp profile inside gVisor (Debian's 2022 runsc can too).
#pragma once

#include <string>

namespace sandboxd::runtime {

inline constexpr const char* k_runsc_version = "20260905035102-160fafc42237";

struct runsc_binary {
  std::string path;         // empty: no runsc at all
  bool current = false;     // systrap, subreapers, exclusive file access
  bool oci_seccomp = false; // --oci-seccomp
  std::string note;         // which binary was chosen and why, in a sentence
};

// Looks the binary up (and asks it for its flags) once per process and path.
runsc_binary find_runsc(const std::string& explicit_path = "");

} // namespace sandboxd::runtime
