#include "runtime/lifecycle_rules.hpp"

namespace sandboxd::runtime {

outcome<void> check_allowed(const sandbox_info& s, operation op) {
  auto st = s.status;
  auto refuse = [&](const char* what, const char* remedy) -> outcome<void> {
    return make_error(errc::conflict, "sandbox " + s.id + " is " + to_string(st) + "; " + remedy +
                                        " before " + what);
  };
  switch (op) {
  case operation::start:
    if (st == sandbox_status::created || st == sandbox_status::stopped)
      return {};
    if (st == sandbox_status::running)
      return make_error(errc::conflict, "sandbox " + s.id + " is already running");
    return make_error(errc::conflict,
                      "sandbox " + s.id + " is " + to_string(st) + "; resume it instead of start");
  case operation::exec:
    if (st == sandbox_status::running)
      return {};
    return refuse("exec", st == sandbox_status::created || st == sandbox_status::stopped
                            ? "start it"
                            : "resume it");
  case operation::pause:
    if (st == sandbox_status::running)
      return {};
    return refuse("pause", "start or resume it");
  case operation::resume:
    if (st == sandbox_status::paused_filesystem || st == sandbox_status::paused_memory)
      return {};
    return refuse("resume", "pause it");
  case operation::write:
    if (st != sandbox_status::paused_memory)
      return {};
    return refuse("writing files", "resume it or pause it in filesystem mode");
  }
  return {};
}

} // namespace sandboxd::runtime
