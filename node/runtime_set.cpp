#include "node/runtime_set.hpp"

#include "node/start_error.hpp"
#include "runtime/hollow_driver.hpp"
#include "runtime/oci_driver.hpp"

#include <algorithm>

namespace sandboxd::node {

using events::runtime_kind;

std::optional<std::string> runtime_unavailable(runtime_kind kind) {
  switch (kind) {
  case runtime_kind::runsc:
    return runtime::oci_unavailable(runtime::oci_runtime::runsc);
  case runtime_kind::crun:
    return runtime::oci_unavailable(runtime::oci_runtime::crun);
  case runtime_kind::hollow:
    return std::nullopt;
  }
  return "runtime " + events::to_string(kind) + " is unknown to this sandboxd";
}

std::optional<runtime_kind> parse_runtime_kind(std::string_view name) {
  for (auto k : {runtime_kind::runsc, runtime_kind::crun, runtime_kind::hollow})
    if (events::to_string(k) == name)
      return k;
  return std::nullopt;
}

runtime_choice choose_runtimes(const std::vector<runtime_kind>& configured,
                               std::optional<runtime_kind> configured_default,
                               const unavailable_fn& unavailable) {
  runtime_choice c;
  if (configured.empty()) {
    // Every OCI runtime that can run here; runsc is the default (below).
    const auto runsc = unavailable(runtime_kind::runsc);
    const auto crun = unavailable(runtime_kind::crun);
    if (runsc && crun)
      throw start_error("no sandbox runtime can run here: runsc: " + *runsc + "; crun: " + *crun +
                        "; install one (scripts/setup) or fix what the message names");
    if (!runsc)
      c.kinds.push_back(runtime_kind::runsc);
    if (!crun)
      c.kinds.push_back(runtime_kind::crun);
    if (runsc)
      c.warnings.push_back("runsc (gVisor) cannot run sandboxes here (" + *runsc +
                           "); using crun, whose boundary is the host kernel with seccomp. "
                           "Fix runsc, or choose crun explicitly with --runtime crun");
    else if (crun)
      c.warnings.push_back("crun cannot run sandboxes here (" + *crun +
                           "); sandboxes run on runsc only. Fix crun, or choose runsc "
                           "explicitly with --runtime runsc");
  } else {
    for (auto k : configured)
      if (std::find(c.kinds.begin(), c.kinds.end(), k) == c.kinds.end())
        c.kinds.push_back(k);
    for (auto k : c.kinds)
      if (auto why = unavailable(k))
        throw start_error("runtime " + events::to_string(k) + " cannot run sandboxes here: " +
                          *why + "; fix it, or leave it out of --runtime");
  }
  if (std::find(c.kinds.begin(), c.kinds.end(), runtime_kind::hollow) != c.kinds.end())
    c.warnings.push_back("runtime hollow runs no processes and keeps no real files: it is for "
                         "tests and benchmarks only");
  if (configured_default) {
    if (std::find(c.kinds.begin(), c.kinds.end(), *configured_default) == c.kinds.end()) {
      std::string held;
      for (auto k : c.kinds)
        held += (held.empty() ? "" : ", ") + events::to_string(k);
      throw start_error("the default runtime " + events::to_string(*configured_default) +
                        " is not among the runtimes this node holds (" + held +
                        "); add it to --runtime or choose one of those");
    }
    c.default_kind = *configured_default;
  } else if (std::find(c.kinds.begin(), c.kinds.end(), runtime_kind::runsc) != c.kinds.end()) {
    c.default_kind = runtime_kind::runsc;
  } else {
    c.default_kind = c.kinds.front();
  }
  return c;
}

runtime_set::runtime_set(const runtime_choice& choice, const std::string& runtimes_dir,
                         node_probe& probe, std::shared_ptr<runtime::layer_store> layers,
                         const std::string& link_range, const std::string& link_instance)
    : runtimes_dir_(runtimes_dir), kinds_(choice.kinds), default_(choice.default_kind) {
  const auto oci =
    std::count_if(kinds_.begin(), kinds_.end(), [](auto k) { return k != runtime_kind::hollow; });
  const auto parsed = link_range.empty() ? std::nullopt : runtime::parse_link_range(link_range);
  if (!link_range.empty() && (!parsed || (oci > 1 && parsed->prefix > 29)))
    throw start_error("link range " + link_range +
                      " is not an IPv4 block large enough for the node's runtimes; give one "
                      "like 10.200.0.0/16");
  // The part of the link range of `k`: runsc's the first half, crun's the second.
  const runtime::link_range whole = parsed.value_or(runtime::link_range{});
  auto part_of = [&](runtime_kind k) -> std::string {
    if (link_range.empty())
      return "";
    runtime::link_range r = whole;
    if (oci > 1) {
      r.prefix = static_cast<std::uint8_t>(r.prefix + 1);
      if (k == runtime_kind::crun)
        r.base += 1u << (32 - r.prefix);
    }
    return std::to_string(r.base >> 24) + "." + std::to_string((r.base >> 16) & 255) + "." +
           std::to_string((r.base >> 8) & 255) + "." + std::to_string(r.base & 255) + "/" +
           std::to_string(r.prefix);
  };
  for (auto k : kinds_) {
    std::unique_ptr<runtime::driver> d;
    try {
      if (k == runtime_kind::hollow) {
        d = std::make_unique<runtime::hollow_driver>(runtime::hollow_options{dir_of(k), {}});
      } else {
        runtime::oci_options o;
        o.runtime =
          k == runtime_kind::crun ? runtime::oci_runtime::crun : runtime::oci_runtime::runsc;
        o.data_dir = dir_of(k);
        o.template_layers = layers;
        o.link_range = part_of(k);
        o.link_instance = link_instance;
        d = std::make_unique<runtime::oci_driver>(o);
      }
    } catch (const std::exception& e) {
      throw start_error("cannot open runtime " + events::to_string(k) + " on " + dir_of(k) + ": " +
                        e.what());
    }
    metered_[k] = std::make_unique<metered_driver>(*d, probe);
    drivers_[k] = std::move(d);
  }
}

runtime_set::~runtime_set() {
  metered_.clear();
  drivers_.clear();
}

runtime::driver* runtime_set::find(runtime_kind kind) {
  auto it = metered_.find(kind);
  return it == metered_.end() ? nullptr : it->second.get();
}

std::string runtime_set::dir_of(runtime_kind kind) const {
  return runtimes_dir_ + "/" + events::to_string(kind);
}

void runtime_set::end_execs(int signal) {
  for (auto& [kind, d] : metered_)
    d->end_execs(signal);
}

} // namespace sandboxd::node
