// file_log_segment.hpp — one segment file of file_log: how it is created, mapped for
// reading, appended to, scanned and repaired.
//
// A segment is written by one thread (the log's writer) and read through a shared
// read-only mapping by any number of threads. The mapping covers `capacity()` bytes from
// creation on, so readers never see it move; readers only touch bytes below size(), which
// the writer moves past a batch in sync_written(), after the batch's fdatasync returned.
#pragma once

#include "events/file_log_format.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sandboxd::events {

// fsyncs directory `dir`, so that the entries made in it are durable. Throws log_fault.
void sync_directory(const std::string& dir);

class log_segment {
public:
  // Creates segment `number` in `dir` with its header, synced together with the directory
  // entry, mapped for `capacity` bytes. Throws log_fault.
  static std::unique_ptr<log_segment> create(const std::string& dir, std::uint64_t number,
                                             std::uint64_t capacity);
  // Opens an existing segment; `writable` for the last one. Throws log_fault.
  static std::unique_ptr<log_segment> open(const std::string& dir, std::uint64_t number,
                                           bool writable, std::uint64_t capacity);
  ~log_segment();
  log_segment(const log_segment&) = delete;
  log_segment& operator=(const log_segment&) = delete;

  std::uint64_t number() const { return number_; }
  const std::string& path() const { return path_; }
  // Bytes in the file that belong to the log (header and whole batches). Any thread may
  // read it: it grows only after the bytes below it were written (and synced).
  std::uint64_t size() const { return size_.load(std::memory_order_acquire); }
  std::uint64_t capacity() const { return capacity_; }
  // The mapping; valid for [0, capacity()), readable below size().
  const char* data() const { return data_; }

  // A batch is appended in two steps: write() puts it into the file at size() (one
  // pwritev) without moving size(); sync_written() fdatasyncs it, then moves size() past
  // it. Between the two the writer may do other work (wake the appenders of the previous
  // batch). Both throw log_fault on any failure; the segment must not be written again
  // afterwards.
  void write(const char* header, std::size_t header_size, std::string_view body);
  void sync_written();
  // Maps `capacity` bytes instead; only while no reader can hold a position in the segment.
  void remap(std::uint64_t capacity);
  // Closes the file of a sealed segment; the mapping stays readable.
  void seal();
  // Cuts the file to `size` bytes and syncs it (recovery of a torn tail, and the zeroed room
  // of a segment that is being sealed).
  void truncate(std::uint64_t size);
  // Rewrites a missing or torn segment header (a crash right after creation).
  void rewrite_header();

  // The index of a sealed segment, written next to it (not synced: it is rebuilt by a
  // scan whenever it is missing or does not check out).
  void write_index(const std::vector<file_log_format::index_entry>& entries) const;
  bool read_index(std::vector<file_log_format::index_entry>& entries) const;
  void remove_index() const;

private:
  log_segment(std::string dir, std::uint64_t number);
  void map(std::uint64_t capacity);

  std::string dir_;
  std::string path_;
  std::uint64_t number_;
  int fd_ = -1;
  std::atomic<std::uint64_t> size_{0};
  std::uint64_t written_ = 0; // bytes write() put after size(), not yet synced
  // End of the bytes the file holds: size(), then zeros written ahead of the batches (see
  // write()), so that a batch's fdatasync overwrites blocks the file already has and need
  // not commit the file system's metadata (block allocation, file size) with it.
  std::uint64_t file_end_ = 0;
  void zero_ahead(std::uint64_t end);
  std::uint64_t capacity_ = 0;
  char* data_ = nullptr;
};

// What a scan of one segment found.
struct segment_scan {
  enum class outcome {
    clean,     // every byte belongs to a valid batch
    torn_tail, // valid batches, then what an interrupted last write and zeros leave
    corrupt,   // an invalid batch that a later write follows: damage, not a torn write
  };
  outcome result = outcome::clean;
  std::vector<file_log_format::index_entry> entries;
  std::uint64_t valid_end = 0;    // end of the last valid batch
  std::uint64_t bad_position = 0; // where the first invalid batch starts
  std::string problem;            // what is wrong there
};

// Scans the batches of `segment` from its header on, by the lengths their headers declare,
// checking every batch's and record's CRC. At the first batch that does not check out, the
// end of its bytes is found by declared lengths only (its header's length when the header
// is sound and fits the file, else the run of whole CRC-valid records of its body): record
// values are never searched. It is a torn tail when only zeros follow that end (only the
// last write, never acknowledged, can be torn, and the writer writes nothing but zeros
// after it); corruption when a declared end is followed by anything, or a walked end by a
// whole valid batch. docs/log-format.md has the rule and what it cannot tell apart.
segment_scan scan_segment(const log_segment& segment, std::uint64_t file_size);

// The numbers of the segment files in `dir`, in order. Throws log_fault naming the first
// missing one unless they run 0, 1, 2, ... without a gap.
std::vector<std::uint64_t> list_segments(const std::string& dir);

// Why index entry `e` cannot be the next record of its partition, which holds `records`
// already, in a log of `partitions` partitions; empty when it can (offsets are dense).
std::string misplaced_entry(const file_log_format::index_entry& e, std::int32_t partitions,
                            std::size_t records);

} // namespace sandboxd::events
