// hollow_driver — a driver with no processes, for control-plane scale benchmarks and
// actor tests only; never a default. It keeps the same lifecycle rules and file
// semantics as the real drivers (see lifecycle_rules.hpp, rooted_fs.hpp), with the
// sandbox's files in a plain directory, `<data_dir>/sandboxes/<id>/upper`, made when the
// first file is written, and every sandbox's status in memory and in an append-only
// journal (hollow_table.hpp), so it survives a restart of the process: a new
// hollow_driver on the same data directory sees every sandbox. One driver per data
// directory at a time.
//
// State changes are serialised by one mutex held for an in-memory change and one
// write(); removing a sandbox's files, file operations and exec run outside it.
//
// Which sandboxes have a directory under `sandboxes/` is cached from a listing, trusted
// only while the directory's mtime is the one seen at the listing and that mtime was at
// least 50 ms older than the listing (so a change in the same timestamp tick is never
// missed); then a sandbox with no directory costs no negative path lookup in create,
// usage and remove. Files made behind the driver (tests planting a layer) change the
// mtime and are seen. With more than 4,096 directories listed the cache is given up.
//
// exec runs no program. It understands `echo ARGS...` (prints ARGS and a newline),
// `cat` (copies stdin, chunk by chunk as it is pulled), `env` (prints the sandbox's
// environment with the exec's over it, one NAME=VALUE a line), `sleep SECONDS` (waits,
// until signal_exec or the timeout ends it), `true` and `false`; any other program exits
// 127 with a message on stderr. A sandbox's environment is kept in its record
// (sandbox_record.hpp) in `sandboxes/<id>/`. Every call first waits `latency`, to model a
// real runtime.
#pragma once

#include "runtime/driver.hpp"
#include "runtime/exec_registry.hpp"
#include "runtime/hollow_table.hpp"
#include "runtime/lifecycle_rules.hpp"

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>

namespace sandboxd::runtime {

struct hollow_options {
  std::string data_dir; // created if missing
  std::chrono::microseconds latency{0};
  // fdatasync the journal on every state change. Off, a crash of the process loses
  // nothing (the page cache keeps every write); a power loss may lose the last changes.
  bool sync = false;
};

class hollow_driver final : public driver {
public:
  explicit hollow_driver(hollow_options options);
  ~hollow_driver() override;
  hollow_driver(const hollow_driver&) = delete;
  hollow_driver& operator=(const hollow_driver&) = delete;

  std::string_view name() const override { return "hollow"; }
  // Without latency and without sync: its lifecycle calls wait for nothing.
  bool never_blocks() const override { return options_.latency.count() == 0 && !options_.sync; }
  outcome<sandbox_info> create(const create_request& request) override;
  outcome<void> start(const std::string& id) override;
  outcome<exec_result> exec(const std::string& id, const exec_request& request) override;
  outcome<void> signal_exec(const std::string& id, const std::string& exec_id, int signal) override;
  outcome<void> pause(const std::string& id, pause_mode mode) override;
  outcome<void> resume(const std::string& id) override;
  outcome<void> remove(const std::string& id) override;
  outcome<void> set_env(const std::string& id,
                        const std::vector<std::pair<std::string, std::string>>& env) override;
  outcome<std::string> read_file(const std::string& id, const std::string& path) override;
  outcome<void> write_file(const std::string& id, const std::string& path, std::string_view content,
                           std::uint32_t mode) override;
  outcome<dir_listing> list_dir(const std::string& id, const std::string& path) override;
  outcome<file_info> stat(const std::string& id, const std::string& path) override;
  outcome<void> make_dir(const std::string& id, const std::string& path, bool parents,
                         std::uint32_t mode) override;
  outcome<void> remove_path(const std::string& id, const std::string& path,
                            bool recursive) override;
  outcome<void> rename_path(const std::string& id, const std::string& from,
                            const std::string& to) override;
  outcome<usage_info> usage(const std::string& id) override;
  outcome<sandbox_info> inspect(const std::string& id) override;
  outcome<std::vector<sandbox_info>> list() override;

private:
  void wait_latency() const;
  outcome<void> transition(const std::string& id, operation op, sandbox_status to);
  // The sandbox's info, or not_found (also while it is being removed).
  outcome<sandbox_info> find(const std::string& id) const;
  // Runs f(layer root, info) for a change of the sandbox's files, with the layer made.
  template <class F>
  outcome<void> change_files(const std::string& id, F&& f);
  // The sandbox's environment (create_request::env), from its record.
  std::vector<std::pair<std::string, std::string>> env_of(const std::string& id) const;
  // The directory file reads resolve in: the sandbox's layer, or an empty directory
  // while it has none.
  std::string read_root(const std::string& id) const;
  // True when `id` surely has no directory under sandboxes/ (the cached listing says so);
  // false when it has one or the cache cannot tell.
  bool surely_no_dir(const std::string& id) const;

  hollow_options options_;
  std::string empty_root_;
  mutable std::mutex mu_; // guards table_ and removing_
  hollow_table table_;
  std::unordered_set<std::string> removing_;
  exec_registry execs_;

  int sandboxes_fd_ = -1; // <data_dir>/sandboxes, for fstat
  mutable std::mutex dirs_mu_;
  mutable std::int64_t dirs_mtime_ns_ = -1; // sandboxes/' mtime at the trusted listing
  mutable std::unordered_set<std::string> dirs_;
  mutable bool dirs_disabled_ = false; // more than 4,096 directories were listed: no cache
};

} // namespace sandboxd::runtime
