// metered_driver — a runtime::driver that forwards every call to another and times it
// into the node's probe (sandboxd_driver_call_seconds{runtime,call}, failures by call).
//
// Same results, same threads, same blocking; never_blocks() and name() are the inner
// driver's. One addition, for the node's stop: it knows the execs in flight, and
// end_execs() signals each of them (an exec without a timeout would otherwise hold the
// stop forever) and refuses execs from then on, so the stop waits for nothing that never
// ends; the execs' outcomes are what the signal made of them (killed).
#pragma once

#include "node/node_probe.hpp"
#include "runtime/driver.hpp"

#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <utility>

namespace sandboxd::node {

class metered_driver final : public runtime::driver {
public:
  metered_driver(runtime::driver& inner, node_probe& probe);

  std::string_view name() const override { return inner_.name(); }
  bool never_blocks() const override { return inner_.never_blocks(); }
  void set_failure_listener(runtime::failure_listener l) override {
    inner_.set_failure_listener(std::move(l));
  }
  runtime::outcome<runtime::sandbox_info> create(const runtime::create_request& request) override;
  runtime::outcome<void> start(const std::string& id) override;
  runtime::outcome<runtime::exec_result> exec(const std::string& id,
                                              const runtime::exec_request& request) override;
  runtime::outcome<void> signal_exec(const std::string& id, const std::string& exec_id,
                                     int signal) override;
  runtime::outcome<void> pause(const std::string& id, runtime::pause_mode mode) override;
  runtime::outcome<void> resume(const std::string& id) override;
  runtime::outcome<void> remove(const std::string& id) override;
  runtime::outcome<void>
  set_env(const std::string& id,
          const std::vector<std::pair<std::string, std::string>>& env) override;
  runtime::outcome<std::string> read_file(const std::string& id, const std::string& path) override;
  runtime::outcome<void> write_file(const std::string& id, const std::string& path,
                                    std::string_view content, std::uint32_t mode) override;
  runtime::outcome<runtime::dir_listing> list_dir(const std::string& id,
                                                  const std::string& path) override;
  runtime::outcome<runtime::file_info> stat(const std::string& id,
                                            const std::string& path) override;
  runtime::outcome<void> make_dir(const std::string& id, const std::string& path, bool parents,
                                  std::uint32_t mode) override;
  runtime::outcome<void> remove_path(const std::string& id, const std::string& path,
                                     bool recursive) override;
  runtime::outcome<void> rename_path(const std::string& id, const std::string& from,
                                     const std::string& to) override;
  runtime::outcome<runtime::usage_info> usage(const std::string& id) override;
  runtime::outcome<runtime::sandbox_info> inspect(const std::string& id) override;
  runtime::outcome<std::vector<runtime::sandbox_info>> list() override;
  runtime::outcome<runtime::writable_layer> open_writable_layer(const std::string& id) override {
    return inner_.open_writable_layer(id);
  }
  runtime::outcome<runtime::snapshot_info> snapshot(const std::string& id,
                                                    const std::string& snapshot_id) override {
    return inner_.snapshot(id, snapshot_id);
  }
  runtime::outcome<void> remove_snapshot(const std::string& snapshot_id) override {
    return inner_.remove_snapshot(snapshot_id);
  }
  runtime::outcome<std::vector<std::string>> list_snapshots() override {
    return inner_.list_snapshots();
  }

  runtime::driver& inner() { return inner_; }

  // Told of each sandbox a create gave a link (after the create, before its start) and of
  // each removed sandbox (after the remove), for the node's egress table (egress.hpp). Set
  // before the first create; run on the driver call's thread.
  void set_link_listeners(std::function<void(const runtime::sandbox_info&)> made,
                          std::function<void(const std::string&)> removed) {
    link_made_ = std::move(made);
    link_removed_ = std::move(removed);
  }

  // Signals every exec in flight with `signal`; later execs answer unavailable. Thread-safe.
  void end_execs(int signal);

private:
  template <class F>
  auto timed(driver_call call, F&& f) -> decltype(f());

  runtime::driver& inner_;
  node_probe::driver_instruments& metrics_;
  std::mutex execs_mu_;
  std::multiset<std::pair<std::string, std::string>> execs_; // (sandbox, exec id) in flight
  bool ending_ = false;
  std::function<void(const runtime::sandbox_info&)> link_made_;
  std::function<void(const std::string&)> link_removed_;
};

} // namespace sandboxd::node
