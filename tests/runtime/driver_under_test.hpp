// driver_under_test — what the runtime and attack suites need to know of the driver they run
// against: how to make one, why it cannot run here (if it cannot), and how code inside a
// sandbox plants a symlink (for the escape tests). One binary serves every driver: the
// ctest entry names it in the environment, SANDBOXD_TEST_DRIVER=hollow|crun|runsc
// (sandboxd_driver_test in cmake/sandboxd.cmake). A binary compiled with
// SANDBOXD_TEST_DRIVER_HOLLOW, _CRUN or _RUNSC runs on that driver when the environment
// names none; with neither, `unavailable()` says so (the suites are skipped with that
// reason) and `make()` throws. A binary that names its drivers itself passes one.
#pragma once

#include "runtime/driver.hpp"
#include "runtime/hollow_driver.hpp"
#include "runtime/oci_driver.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

namespace sandboxd::test {

// `none`: the environment named no driver.
enum class test_driver { hollow, crun, runsc, none };

inline const char* to_string(test_driver d) {
  switch (d) {
  case test_driver::hollow:
    return "hollow";
  case test_driver::crun:
    return "crun";
  case test_driver::runsc:
    return "runsc";
  case test_driver::none:
    break;
  }
  return "none";
}

// SANDBOXD_TEST_DRIVER, else the compiled-in default, else none. A name that is no driver
// stops the binary at once, saying what to set.
inline test_driver driver_from_environment() {
  const char* v = std::getenv("SANDBOXD_TEST_DRIVER");
  std::string s = v ? v : "";
#if defined(SANDBOXD_TEST_DRIVER_HOLLOW)
  if (s.empty())
    s = "hollow";
#elif defined(SANDBOXD_TEST_DRIVER_CRUN)
  if (s.empty())
    s = "crun";
#elif defined(SANDBOXD_TEST_DRIVER_RUNSC)
  if (s.empty())
    s = "runsc";
#endif
  if (s.empty())
    return test_driver::none;
  for (auto d : {test_driver::hollow, test_driver::crun, test_driver::runsc})
    if (s == to_string(d))
      return d;
  std::fprintf(stderr,
               "SANDBOXD_TEST_DRIVER is '%s'; it names the driver under test: hollow, crun or "
               "runsc (the ctest entries set it)\n",
               s.c_str());
  std::exit(2);
}

struct driver_under_test {
  // Which driver this run is on, read once at start-up.
  static inline const test_driver which = driver_from_environment();
  static inline const bool runs_processes =
    which != test_driver::hollow && which != test_driver::none;
  // The OCI runtime of a crun or runsc run (crun for a hollow run, which has none).
  static inline const runtime::oci_runtime kind =
    which == test_driver::runsc ? runtime::oci_runtime::runsc : runtime::oci_runtime::crun;

  static std::optional<std::string> unavailable(test_driver d = which) {
    if (d == test_driver::none)
      return "SANDBOXD_TEST_DRIVER names no driver (hollow, crun or runsc)";
    if (d == test_driver::hollow)
      return std::nullopt;
    return runtime::oci_unavailable(d == test_driver::runsc ? runtime::oci_runtime::runsc
                                                            : runtime::oci_runtime::crun);
  }
  // `agent` off: new containers run without the agent and exec through the runtime.
  static std::unique_ptr<runtime::driver> make(const std::string& data_dir, bool agent = true,
                                               test_driver d = which) {
    if (d == test_driver::none)
      throw std::runtime_error("SANDBOXD_TEST_DRIVER names no driver (hollow, crun or runsc)");
    if (d == test_driver::hollow)
      return std::make_unique<runtime::hollow_driver>(runtime::hollow_options{data_dir, {}});
    runtime::oci_options o;
    o.runtime = d == test_driver::runsc ? runtime::oci_runtime::runsc : runtime::oci_runtime::crun;
    o.data_dir = data_dir;
    o.agent = agent;
    return std::make_unique<runtime::oci_driver>(o);
  }

  // Hollow has no processes: the test plays the sandbox and writes its layer itself. On the
  // others, code inside the running sandbox makes the link.
  static void plant_symlink(runtime::driver& d, const std::string& data_dir, const std::string& id,
                            const std::string& link, const std::string& target) {
    if (!runs_processes) {
      auto p = std::filesystem::path(data_dir + "/sandboxes/" + id + "/upper" + link);
      std::filesystem::create_directories(p.parent_path());
      std::filesystem::create_symlink(target, p);
      return;
    }
    runtime::exec_request r;
    r.argv = {"/bin/sh", "-c", "mkdir -p \"$(dirname \"$1\")\" && ln -s \"$2\" \"$1\"",
              "sh",      link, target};
    auto res = d.exec(id, r);
    if (!res || res->exit_code != 0)
      throw std::runtime_error("planting " + link +
                               " failed: " + (res ? res->stderr_data : res.err().message));
  }
};

} // namespace sandboxd::test
