#include "node/metered_driver.hpp"

#include <chrono>
#include <exception>
#include <string>
#include <vector>

namespace sandboxd::node {

metered_driver::metered_driver(runtime::driver& inner, node_probe& probe)
    : inner_(inner), metrics_(probe.driver(inner.name())) {}

template <class F>
auto metered_driver::timed(driver_call call, F&& f) -> decltype(f()) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = f();
  const auto i = static_cast<std::size_t>(call);
  metrics_.seconds[i]->Observe(
    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (!r.ok())
    metrics_.failures[i]->Increment();
  return r;
}

runtime::outcome<runtime::sandbox_info>
metered_driver::create(const runtime::create_request& request) {
  auto r = timed(driver_call::create, [&] { return inner_.create(request); });
  if (r && r.value().link && link_made_) {
    try {
      link_made_(r.value());
    } catch (const std::exception& e) {
      // Without its elements in the egress table the link leads nowhere: the sandbox is
      // not made (a create that fails removes what it made).
      (void)inner_.remove(request.id);
      return runtime::make_error(runtime::errc::unavailable,
                                 std::string(e.what()) + "; try the create again");
    }
  }
  return r;
}

runtime::outcome<void> metered_driver::start(const std::string& id) {
  return timed(driver_call::start, [&] { return inner_.start(id); });
}

runtime::outcome<runtime::exec_result> metered_driver::exec(const std::string& id,
                                                            const runtime::exec_request& request) {
  const std::pair<std::string, std::string> key{id, request.exec_id};
  {
    std::lock_guard l(execs_mu_);
    if (ending_)
      return runtime::make_error(runtime::errc::unavailable,
                                 "sandboxd is stopping; run the exec again once it runs");
    execs_.insert(key);
  }
  auto r = timed(driver_call::exec, [&] { return inner_.exec(id, request); });
  std::lock_guard l(execs_mu_);
  execs_.erase(execs_.find(key));
  return r;
}

void metered_driver::end_execs(int signal) {
  std::vector<std::pair<std::string, std::string>> running;
  {
    std::lock_guard l(execs_mu_);
    ending_ = true;
    running.assign(execs_.begin(), execs_.end());
  }
  for (const auto& [id, exec_id] : running)
    inner_.signal_exec(id, exec_id, signal); // not_found: it ended meanwhile
}

runtime::outcome<void> metered_driver::signal_exec(const std::string& id,
                                                   const std::string& exec_id, int signal) {
  return timed(driver_call::signal_exec, [&] { return inner_.signal_exec(id, exec_id, signal); });
}

runtime::outcome<void> metered_driver::pause(const std::string& id, runtime::pause_mode mode) {
  return timed(driver_call::pause, [&] { return inner_.pause(id, mode); });
}

runtime::outcome<void> metered_driver::resume(const std::string& id) {
  return timed(driver_call::resume, [&] { return inner_.resume(id); });
}

runtime::outcome<void> metered_driver::remove(const std::string& id) {
  auto r = timed(driver_call::remove, [&] { return inner_.remove(id); });
  if (r && link_removed_)
    link_removed_(id);
  return r;
}

runtime::outcome<std::string> metered_driver::read_file(const std::string& id,
                                                        const std::string& path) {
  return timed(driver_call::read_file, [&] { return inner_.read_file(id, path); });
}

runtime::outcome<void> metered_driver::write_file(const std::string& id, const std::string& path,
                                                  std::string_view content, std::uint32_t mode) {
  return timed(driver_call::write_file, [&] { return inner_.write_file(id, path, content, mode); });
}

runtime::outcome<runtime::dir_listing> metered_driver::list_dir(const std::string& id,
                                                                const std::string& path) {
  return timed(driver_call::list_dir, [&] { return inner_.list_dir(id, path); });
}

runtime::outcome<runtime::file_info> metered_driver::stat(const std::string& id,
                                                          const std::string& path) {
  return timed(driver_call::stat, [&] { return inner_.stat(id, path); });
}

runtime::outcome<void> metered_driver::make_dir(const std::string& id, const std::string& path,
                                                bool parents, std::uint32_t mode) {
  return timed(driver_call::make_dir, [&] { return inner_.make_dir(id, path, parents, mode); });
}

runtime::outcome<void> metered_driver::remove_path(const std::string& id, const std::string& path,
                                                   bool recursive) {
  return timed(driver_call::remove_path, [&] { return inner_.remove_path(id, path, recursive); });
}

runtime::outcome<void>
metered_driver::set_env(const std::string& id,
                        const std::vector<std::pair<std::string, std::string>>& env) {
  return timed(driver_call::set_env, [&] { return inner_.set_env(id, env); });
}

runtime::outcome<void> metered_driver::rename_path(const std::string& id, const std::string& from,
                                                   const std::string& to) {
  return timed(driver_call::rename_path, [&] { return inner_.rename_path(id, from, to); });
}

runtime::outcome<runtime::usage_info> metered_driver::usage(const std::string& id) {
  return timed(driver_call::usage, [&] { return inner_.usage(id); });
}

runtime::outcome<runtime::sandbox_info> metered_driver::inspect(const std::string& id) {
  return timed(driver_call::inspect, [&] { return inner_.inspect(id); });
}

runtime::outcome<std::vector<runtime::sandbox_info>> metered_driver::list() {
  return timed(driver_call::list, [&] { return inner_.list(); });
}

} // namespace sandboxd::node
