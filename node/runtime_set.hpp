// runtime_set — the sandbox runtimes a node holds: which ones (chosen from the config and
// what this machine can run), and one driver for each, metered into the node's probe.
//
// Each driver has its own data directory, DATA_DIR/runtimes/<kind>, so a driver's list()
// holds only its own sandboxes (two drivers on one directory would each see the other's
// sandboxes as orphans to remove).
#pragma once

#include "events/event.hpp"
#include "node/metered_driver.hpp"
#include "node/node_probe.hpp"
#include "runtime/driver.hpp"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandboxd::runtime {
class layer_store;
}

namespace sandboxd::node {

struct runtime_choice {
  std::vector<events::runtime_kind> kinds; // no duplicates, in the configured order
  events::runtime_kind default_kind = events::runtime_kind::runsc;
  std::vector<std::string> warnings; // for the log: a fallback taken, hollow held
};

// Why `kind` cannot run sandboxes on this machine, or nullopt.
using unavailable_fn = std::function<std::optional<std::string>(events::runtime_kind)>;
std::optional<std::string> runtime_unavailable(events::runtime_kind kind);

// The runtimes a node holds:
// - none configured: runsc; where runsc cannot run, crun with a warning that says why;
//   neither: start_error naming both reasons;
// - configured: each must be able to run here (start_error naming the runtime, why, and
//   what to do otherwise); hollow always can, with a warning that it runs no processes.
// The default is `configured_default` (start_error unless it is held), else runsc when
// held, else the first.
runtime_choice choose_runtimes(const std::vector<events::runtime_kind>& configured,
                               std::optional<events::runtime_kind> configured_default,
                               const unavailable_fn& unavailable = runtime_unavailable);

// "runsc", "crun", "hollow"; nullopt for anything else.
std::optional<events::runtime_kind> parse_runtime_kind(std::string_view name);

class runtime_set {
public:
  // Makes one driver per chosen runtime under `runtimes_dir`/<kind>; the OCI drivers stack
  // sandboxes on `layers` (may be null: only their own `base`). Throws start_error.
  // With a `link_range` ("10.200.0.0/16"), the OCI drivers number their sandboxes' links
  // from disjoint parts of it (runsc the first half, crun the second; one OCI runtime the
  // whole), their interfaces named by `link_instance`; without, no sandbox has a network.
  runtime_set(const runtime_choice& choice, const std::string& runtimes_dir, node_probe& probe,
              std::shared_ptr<runtime::layer_store> layers = nullptr,
              const std::string& link_range = "", const std::string& link_instance = "");
  ~runtime_set();
  runtime_set(const runtime_set&) = delete;
  runtime_set& operator=(const runtime_set&) = delete;

  const std::vector<events::runtime_kind>& kinds() const { return kinds_; }
  events::runtime_kind default_kind() const { return default_; }
  // The metered driver of `kind`; nullptr when the node does not hold it.
  runtime::driver* find(events::runtime_kind kind);
  runtime::driver& default_driver() { return *find(default_); }
  // The data directory of `kind`'s driver.
  std::string dir_of(events::runtime_kind kind) const;
  // At stop: every exec in flight on every runtime gets `signal`, later execs are refused
  // (metered_driver::end_execs).
  void end_execs(int signal);

private:
  std::string runtimes_dir_;
  std::vector<events::runtime_kind> kinds_;
  events::runtime_kind default_;
  std::map<events::runtime_kind, std::unique_ptr<runtime::driver>> drivers_;
  std::map<events::runtime_kind, std::unique_ptr<metered_driver>> metered_;
};

} // namespace sandboxd::node
