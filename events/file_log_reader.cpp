// file_log_reader: the segments of a file log mapped read-only and checked batch by batch
// (scan_segment), their records located per partition; nothing in the directory changes.
#include "events/file_log_reader.hpp"

#include "events/file_log_format.hpp"
#include "events/file_log_segment.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace sandboxd::events {

namespace fmt = file_log_format;

namespace {

struct location {
  std::uint32_t segment;
  std::uint32_t position;
};

std::int32_t read_partition_count(const std::string& dir) {
  const std::string path = dir + "/META";
  std::ifstream in(path);
  std::string first, word;
  std::int32_t partitions = 0;
  if (!in || !std::getline(in, first))
    throw log_fault("file log: " + path +
                    " cannot be read; give the directory of a sandboxd file log (the one "
                    "holding META and the .log segments, DATA_DIR/log of a node)");
  if (first != "sandboxd file log 1" || !(in >> word >> partitions) || word != "partitions" ||
      partitions <= 0)
    throw log_fault("file log: " + path +
                    " is not the META file of a sandboxd file log (version 1)");
  return partitions;
}

} // namespace

struct file_log_reader::impl {
  std::string dir;
  std::int32_t partitions = 0;
  std::vector<std::unique_ptr<log_segment>> segments;
  std::vector<std::vector<location>> locations; // per partition, by offset
  std::uint64_t torn = 0;

  [[noreturn]] void corrupt(const log_segment& s, std::uint64_t position,
                            const std::string& problem) const {
    throw log_fault("file log: corrupt segment " + s.path() + " at byte " +
                    std::to_string(position) + ": " + problem +
                    ". Restore the log from a backup or replica (the reader does not skip "
                    "damage)");
  }

  void open() {
    partitions = read_partition_count(dir);
    locations.resize(partitions);
    const auto numbers = list_segments(dir);
    for (std::size_t i = 0; i < numbers.size(); ++i) {
      const bool last = i + 1 == numbers.size();
      auto seg = log_segment::open(dir, numbers[i], false, 0);
      add(*seg, last);
      segments.push_back(std::move(seg));
    }
  }

  void add(const log_segment& seg, bool last) {
    const std::uint64_t size = seg.size();
    // A crash right after the last segment was created can leave its header unwritten.
    if (!fmt::check_segment_header(seg.data(), size, seg.number())) {
      if (last && size <= fmt::k_segment_header_size)
        return;
      corrupt(seg, 0, "no valid segment header");
    }
    auto scan = scan_segment(seg, size);
    if (scan.result == segment_scan::outcome::corrupt)
      corrupt(seg, scan.bad_position, scan.problem);
    if (scan.result == segment_scan::outcome::torn_tail) {
      if (!last)
        corrupt(seg, scan.bad_position,
                "the segment is sealed, so all of it was synced, yet it holds bytes there that "
                "are no whole batch (" +
                  scan.problem + ")");
      std::uint64_t end = size;
      while (end > scan.valid_end && seg.data()[end - 1] == 0)
        --end;
      torn = end - scan.valid_end;
    }
    const auto index = static_cast<std::uint32_t>(segments.size());
    for (const auto& e : scan.entries) {
      const std::size_t held = e.partition < locations.size() ? locations[e.partition].size() : 0;
      if (auto problem = misplaced_entry(e, partitions, held); !problem.empty())
        corrupt(seg, e.position, problem);
      auto& locs = locations[e.partition];
      locs.push_back({index, e.position});
    }
  }

  // The record at `loc`, its CRC checked again (the mapping could change under a reader).
  fmt::record_view record(std::int32_t partition, std::int64_t offset, const location& loc) const {
    const auto& seg = *segments[loc.segment];
    fmt::record_view r;
    if (!fmt::read_record(seg.data() + loc.position, seg.size() - loc.position, r))
      corrupt(seg, loc.position,
              "partition " + std::to_string(partition) + " offset " + std::to_string(offset) +
                ": the record's CRC-32C no longer matches its bytes (the file changed after "
                "the reader opened it)");
    return r;
  }

  std::optional<error> check_partition(std::int32_t partition, std::int64_t from) const {
    if (partition >= 0 && partition < partitions && from >= 0)
      return std::nullopt;
    return error{errc::invalid_argument,
                 "cannot read partition " + std::to_string(partition) + " from offset " +
                   std::to_string(from) + ": file log " + dir + " (read-only) has partitions 0.." +
                   std::to_string(partitions - 1) + " and offsets start at 0"};
  }
};

file_log_reader::file_log_reader(const std::string& dir) : impl_(std::make_unique<impl>()) {
  impl_->dir = dir;
  impl_->open();
}

file_log_reader::~file_log_reader() = default;

std::int32_t file_log_reader::partitions() const {
  return impl_->partitions;
}

std::uint64_t file_log_reader::torn_bytes() const {
  return impl_->torn;
}

std::string file_log_reader::describe() const {
  return "file log " + impl_->dir + " (read-only)";
}

void file_log_reader::do_append(std::vector<log_record>, append_callback done) {
  done(append_result{{},
                     error{errc::permission_denied,
                           describe() + " is opened read-only; open it with file_log to append"}});
}

std::optional<error> file_log_reader::visit(std::int32_t partition, std::int64_t from,
                                            const record_visitor& visit) const {
  const auto& m = *impl_;
  if (auto bad = m.check_partition(partition, from))
    return bad;
  const auto& locs = m.locations[partition];
  for (auto offset = from; offset < static_cast<std::int64_t>(locs.size()); ++offset) {
    const auto r = m.record(partition, offset, locs[offset]);
    if (!visit(offset, r.key, r.value))
      break;
  }
  return std::nullopt;
}

void file_log_reader::visit_all(const any_record_visitor& visit) const {
  const auto& m = *impl_;
  // A merge of the partitions' location lists by position in the files: each list is in
  // file order already (offsets are assigned as records are written). head[p] is the file
  // position (segment, byte) of partition p's next record, k_done when it has none.
  constexpr std::uint64_t k_done = ~std::uint64_t{0};
  auto key = [](const location& l) {
    return (static_cast<std::uint64_t>(l.segment) << 32) | l.position;
  };
  std::vector<std::int64_t> next(m.partitions, 0);
  std::vector<std::uint64_t> head(m.partitions, k_done);
  for (std::int32_t p = 0; p < m.partitions; ++p)
    if (!m.locations[p].empty())
      head[p] = key(m.locations[p][0]);
  for (;;) {
    std::int32_t pick = 0;
    for (std::int32_t p = 1; p < m.partitions; ++p)
      if (head[p] < head[pick])
        pick = p;
    if (head[pick] == k_done)
      return;
    const auto& locs = m.locations[pick];
    const auto offset = next[pick]++;
    head[pick] =
      next[pick] < static_cast<std::int64_t>(locs.size()) ? key(locs[next[pick]]) : k_done;
    const auto r = m.record(pick, offset, locs[offset]);
    if (!visit(pick, offset, r.key, r.value))
      return;
  }
}

read_result file_log_reader::do_read(std::int32_t partition, std::int64_t from, std::size_t max) {
  read_result out;
  out.failure =
    visit(partition, from, [&](std::int64_t offset, std::string_view key, std::string_view value) {
      out.records.push_back({partition, offset, std::string(key), std::string(value)});
      return out.records.size() < max;
    });
  return out;
}

offset_result file_log_reader::do_end_offset(std::int32_t partition) {
  return {static_cast<std::int64_t>(impl_->locations[partition].size()), std::nullopt};
}

bool file_log_reader::do_wait_for(std::int32_t partition, std::int64_t offset,
                                  std::chrono::milliseconds) {
  return static_cast<std::int64_t>(impl_->locations[partition].size()) > offset;
}

} // namespace sandboxd::events
