// file_log_reader.hpp — a file log opened read-only: what a data directory holds (a copy of
// a node's, or one a running daemon holds), read without changing a byte of it.
//
// Where file_log (file_log.hpp) owns its directory — takes LOCK, cuts a torn tail, writes
// indexes and META — the reader only opens files O_RDONLY and maps them: no file in the
// directory is created, written, truncated or renamed, and no lock is taken, so it also
// reads a log another process holds (as of the moment it was opened).
//
// Guarantees:
// - The records it serves are exactly those file_log would serve after opening the same
//   directory: every batch and record is checked (CRC-32C, dense offsets per partition),
//   sealed segments must be whole, and a torn last batch of the last segment (a crash, or
//   a write in flight) is left out, not cut: torn_bytes() says how many bytes that was.
// - Damage (a bad CRC followed by more data, a missing segment, a record of a partition
//   the log does not have) is a log_fault naming the file and byte, never a silent skip.
// - It is an event_log that refuses appends (errc::permission_denied) and never grows:
//   wait_for returns at once.
#pragma once

#include "events/event_log.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace sandboxd::events {

class file_log_reader final : public event_log {
public:
  // Opens the log in `dir` (the directory holding META and the segments). Throws log_fault
  // when it is not a file log or is damaged.
  explicit file_log_reader(const std::string& dir);
  ~file_log_reader() override;
  file_log_reader(const file_log_reader&) = delete;
  file_log_reader& operator=(const file_log_reader&) = delete;

  std::int32_t partitions() const override;
  std::string describe() const override;

  // Calls `visit(offset, key, value)` for the records of `partition` from offset `from` on,
  // in offset order, without copying them (the views live as long as the reader); stops
  // early when `visit` returns false. An invalid partition is an invalid_argument error.
  using record_visitor =
    std::function<bool(std::int64_t offset, std::string_view key, std::string_view value)>;
  std::optional<error> visit(std::int32_t partition, std::int64_t from,
                             const record_visitor& visit) const;

  // Calls `visit(partition, offset, key, value)` for every record of every partition in the
  // order the records lie in the segments (each partition's records still in offset order):
  // one sequential pass over the files, where reading partition after partition crosses
  // every segment once per partition. Stops early when `visit` returns false.
  using any_record_visitor = std::function<bool(std::int32_t partition, std::int64_t offset,
                                                std::string_view key, std::string_view value)>;
  void visit_all(const any_record_visitor& visit) const;

  // Bytes of a torn last batch that the reader left out (0 when the log ends cleanly).
  std::uint64_t torn_bytes() const;

protected:
  // Appends are refused (permission_denied); reads see the log as it was when opened.
  void do_append(std::vector<log_record> batch, append_callback done) override;
  read_result do_read(std::int32_t partition, std::int64_t from, std::size_t max) override;
  offset_result do_end_offset(std::int32_t partition) override;
  bool do_wait_for(std::int32_t partition, std::int64_t offset,
                   std::chrono::milliseconds timeout) override;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace sandboxd::events
