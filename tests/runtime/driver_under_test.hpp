// driver_under_test — what the driver conformance suite needs to know of the driver it
// runs against, chosen at compile time (SANDBOXD_TEST_DRIVER_HOLLOW, _CRUN, _RUNSC):
// how to make one, why it cannot run here (if it cannot), and how code inside a
// sandbox plants a symlink (for the escape tests).
#pragma once

#include "runtime/driver.hpp"
#include "runtime/hollow_driver.hpp"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#if defined(SANDBOXD_TEST_DRIVER_CRUN) || defined(SANDBOXD_TEST_DRIVER_RUNSC)
#include "runtime/oci_driver.hpp"
#endif

namespace sandboxd::test {

struct driver_under_test {
#if defined(SANDBOXD_TEST_DRIVER_HOLLOW)
  static constexpr bool runs_processes = false;
  static std::optional<std::string> unavailable() {
    return std::nullopt;
  }
  static std::unique_ptr<runtime::driver> make(const std::string& data_dir) {
    return std::make_unique<runtime::hollow_driver>(runtime::hollow_options{data_dir, {}});
  }
  // Hollow has no processes: the test plays the sandbox and writes its layer itself.
  static void plant_symlink(runtime::driver&, const std::string& data_dir, const std::string& id,
                            const std::string& link, const std::string& target) {
    auto p = std::filesystem::path(data_dir + "/sandboxes/" + id + "/upper" + link);
    std::filesystem::create_directories(p.parent_path());
    std::filesystem::create_symlink(target, p);
  }
#else
  static constexpr bool runs_processes = true;
#if defined(SANDBOXD_TEST_DRIVER_CRUN)
  static constexpr runtime::oci_runtime kind = runtime::oci_runtime::crun;
#else
  static constexpr runtime::oci_runtime kind = runtime::oci_runtime::runsc;
#endif
  static std::optional<std::string> unavailable() {
    return runtime::oci_unavailable(kind);
  }
  // `agent` off: new containers run without the agent and exec through the runtime.
  static std::unique_ptr<runtime::driver> make(const std::string& data_dir, bool agent = true) {
    runtime::oci_options o;
    o.runtime = kind;
    o.data_dir = data_dir;
    o.agent = agent;
    return std::make_unique<runtime::oci_driver>(o);
  }
  // Code inside the running sandbox makes the link.
  static void plant_symlink(runtime::driver& d, const std::string&, const std::string& id,
                            const std::string& link, const std::string& target) {
    runtime::exec_request r;
    r.argv = {"/bin/sh", "-c", "mkdir -p \"$(dirname \"$1\")\" && ln -s \"$2\" \"$1\"",
              "sh",      link, target};
    auto res = d.exec(id, r);
    if (!res || res->exit_code != 0)
      throw std::runtime_error("planting " + link +
                               " failed: " + (res ? res->stderr_data : res.err().message));
  }
#endif
};

} // namespace sandboxd::test
