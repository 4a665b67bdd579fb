// hollow_table — the hollow driver's sandboxes (id -> sandbox_info) in memory, persisted
// as an append-only journal, `<data_dir>/hollow.journal`, so that a new hollow driver on
// the same data directory sees every sandbox with its status (format: docs/runtime.md).
//
// Every change appends one small record with one write() before the table changes; a
// failed write leaves neither the file nor the table changed (the file is cut back) and
// throws. On open the records are replayed; a torn or damaged record and everything
// after it are dropped and cut off (the last changes before a power loss may be lost
// unless `sync` is set; the caller reconciles from its own log). When most records are
// dead the journal is rewritten with one record per live sandbox (temporary file,
// renamed over).
//
// Not thread-safe: the owner serialises every call. One table per file at a time.
#pragma once

#include "runtime/driver.hpp"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace sandboxd::runtime {

class hollow_table {
public:
  // Opens (or creates) the journal at `path` and replays it. With `sync`, every change
  // is fdatasynced before it returns. Throws std::system_error on I/O faults and
  // std::runtime_error if the file is not a hollow journal.
  hollow_table(std::string path, bool sync);
  ~hollow_table();
  hollow_table(const hollow_table&) = delete;
  hollow_table& operator=(const hollow_table&) = delete;

  // nullptr when `id` is not in the table; valid until the next change.
  const sandbox_info* find(const std::string& id) const;
  // Adds a sandbox that is not in the table.
  void insert(const sandbox_info& info);
  // Changes the status of a sandbox in the table.
  void set_status(const std::string& id, sandbox_status status);
  // Removes a sandbox in the table.
  void erase(const std::string& id);

  std::vector<sandbox_info> all() const;
  std::size_t size() const { return table_.size(); }
  // Records in the file (live and dead), for tests.
  std::uint64_t records() const { return records_; }

private:
  void replay();
  void append(const std::string& record);
  void compact_if_worthwhile();

  std::string path_;
  bool sync_;
  int fd_ = -1;
  std::uint64_t size_ = 0;    // bytes of whole records in the file (its length)
  std::uint64_t records_ = 0; // records in the file
  std::unordered_map<std::string, sandbox_info> table_;
};

} // namespace sandboxd::runtime
