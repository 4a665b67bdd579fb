// metered_driver — a runtime::driver that forwards every call to another and times it
// into the node's probe (sandboxd_driver_call_seconds{runtime,call}, failures by call).
//
// It adds no guarantee and takes none away: same results, same threads, same blocking;
// never_blocks() and name() are the inner driver's.
#pragma once

#include "node/node_probe.hpp"
#include "runtime/driver.hpp"

namespace sandboxd::node {

class metered_driver final : public runtime::driver {
public:
  metered_driver(runtime::driver& inner, node_probe& probe);

  std::string_view name() const override { return inner_.name(); }
  bool never_blocks() const override { return inner_.never_blocks(); }
  runtime::outcome<runtime::sandbox_info> create(const runtime::create_request& request) override;
  runtime::outcome<void> start(const std::string& id) override;
  runtime::outcome<runtime::exec_result> exec(const std::string& id,
                                              const runtime::exec_request& request) override;
  runtime::outcome<void> pause(const std::string& id, runtime::pause_mode mode) override;
  runtime::outcome<void> resume(const std::string& id) override;
  runtime::outcome<void> remove(const std::string& id) override;
  runtime::outcome<std::string> read_file(const std::string& id, const std::string& path) override;
  runtime::outcome<void> write_file(const std::string& id, const std::string& path,
                                    std::string_view content, std::uint32_t mode) override;
  runtime::outcome<runtime::dir_listing> list_dir(const std::string& id,
                                                  const std::string& path) override;
  runtime::outcome<runtime::file_info> stat(const std::string& id,
                                            const std::string& path) override;
  runtime::outcome<void> signal_exec(const std::string& id, const std::string& exec_id,
                                     int signal) override {
    return inner_.signal_exec(id, exec_id, signal);
  }
  runtime::outcome<void> make_dir(const std::string& id, const std::string& path, bool parents,
                                  std::uint32_t mode) override {
    return inner_.make_dir(id, path, parents, mode);
  }
  runtime::outcome<void> remove_path(const std::string& id, const std::string& path,
                                     bool recursive) override {
    return inner_.remove_path(id, path, recursive);
  }
  runtime::outcome<void> rename_path(const std::string& id, const std::string& from,
                                     const std::string& to) override {
    return inner_.rename_path(id, from, to);
  }
  runtime::outcome<runtime::usage_info> usage(const std::string& id) override;
  runtime::outcome<runtime::sandbox_info> inspect(const std::string& id) override;
  runtime::outcome<std::vector<runtime::sandbox_info>> list() override;

  runtime::driver& inner() { return inner_; }

private:
  template <class F>
  auto timed(driver_call call, F&& f) -> decltype(f());

  runtime::driver& inner_;
  node_probe::driver_instruments& metrics_;
};

} // namespace sandboxd::node
