// Opening file_log's segments: each sealed one from its index or a scan that must find
// whole batches only, the last one scanned and cut back at a torn tail; damage refused,
// naming the file and the byte (docs/log-format.md, "Opening: recovery").
#include "events/file_log_impl.hpp"

#include <algorithm>
#include <filesystem>

namespace sandboxd::events {

namespace fmt = file_log_format;
using namespace file_log_parts;

namespace {

// The end of the last non-zero byte in [from, end) of `data`, or `from` when all are zero.
std::uint64_t nonzero_end(const char* data, std::uint64_t from, std::uint64_t end) {
  while (end > from && data[end - 1] == 0)
    --end;
  return end;
}

// Whether the index `entries` of a sealed segment accounts for all of its `file_size`
// bytes: its last record ends where the file ends. (The index is not synced; one that
// does not match its segment is not trusted, and the segment is scanned instead.)
bool index_covers(const log_segment& s, const std::vector<fmt::index_entry>& entries,
                  std::uint64_t file_size) {
  if (entries.empty())
    return file_size == fmt::k_segment_header_size;
  const std::uint64_t last = entries.back().position;
  fmt::record_view r;
  return last < file_size && fmt::read_record(s.data() + last, file_size - last, r) &&
         last + r.size == file_size;
}

} // namespace

void file_log::impl::corrupt(const log_segment& s, std::uint64_t position,
                             const std::string& problem) const {
  throw log_fault("file log: corrupt segment " + s.path() + " at byte " + std::to_string(position) +
                  ": " + problem +
                  ". Acknowledged records may be damaged; restore the log from a backup or "
                  "replica (the log does not skip damage)");
}

std::vector<std::uint64_t> file_log::impl::segment_numbers() const {
  return list_segments(options.dir);
}

std::vector<fmt::index_entry> file_log::impl::recover_segment(log_segment& seg, bool last) {
  const std::uint64_t file_size = seg.size();
  std::vector<fmt::index_entry> entries;
  if (!last && seg.read_index(entries) && index_covers(seg, entries, file_size))
    return entries;
  ++recovery.segments_scanned;
  if (!fmt::check_segment_header(seg.data(), file_size, seg.number())) {
    if (!last || file_size > fmt::k_segment_header_size)
      corrupt(seg, 0, "no valid segment header");
    // A crash while the last segment was being created: it holds no record.
    seg.rewrite_header();
    seg.remove_index();
    return entries;
  }
  auto scan = scan_segment(seg, file_size);
  if (scan.result == segment_scan::outcome::corrupt)
    corrupt(seg, scan.bad_position, scan.problem);
  // A roll cuts a segment to its last batch and syncs that before it creates the next
  // segment: a sealed segment was synced whole, so no crash leaves anything but whole
  // batches in it — not even zeros.
  if (scan.result != segment_scan::outcome::clean && !last)
    corrupt(seg, scan.bad_position,
            "the segment is sealed (" + fmt::segment_file_name(seg.number() + 1) +
              " follows it), so all of it was synced, yet it holds " +
              std::to_string(file_size - scan.bad_position) +
              " bytes there that are no whole batch (" + scan.problem + ")");
  if (scan.result == segment_scan::outcome::torn_tail) {
    // Zeros (the writer's zeroed room, or what a file system leaves after a power loss)
    // are cut too, but counted as torn only up to the last non-zero byte.
    const std::uint64_t data_end = nonzero_end(seg.data(), scan.valid_end, file_size);
    seg.truncate(scan.valid_end);
    if (data_end > scan.valid_end) {
      recovery.truncated_bytes = data_end - scan.valid_end;
      recovery.truncated_segment = seg.path();
    }
  }
  if (last) {
    seg.remove_index();
  } else {
    try {
      seg.write_index(scan.entries);
    } catch (const log_fault&) {
      // The index only saves the next open a scan.
    }
  }
  return std::move(scan.entries);
}

void file_log::impl::add_locations(const log_segment& seg, std::uint32_t segment_index,
                                   const std::vector<fmt::index_entry>& entries) {
  for (const auto& e : entries) {
    const std::size_t held = e.partition < locations.size() ? locations[e.partition].size() : 0;
    if (auto problem = misplaced_entry(e, partitions, held); !problem.empty())
      corrupt(seg, e.position, problem);
    locations[e.partition].push_back({segment_index, e.position});
  }
  recovery.records += entries.size();
}

void file_log::impl::open_segments() {
  const auto numbers = segment_numbers();
  read_or_create_meta(!numbers.empty());
  next_offset.assign(partitions, 0);
  published_end.assign(partitions, 0);
  locations.resize(partitions);
  if (numbers.empty())
    segments.push_back(log_segment::create(options.dir, 0, options.segment_bytes));
  for (std::size_t i = 0; i < numbers.size(); ++i) {
    const bool last = i + 1 == numbers.size();
    auto seg = log_segment::open(options.dir, numbers[i], last, last ? options.segment_bytes : 0);
    auto entries = recover_segment(*seg, last);
    add_locations(*seg, static_cast<std::uint32_t>(segments.size()), entries);
    if (last)
      active_entries = std::move(entries);
    segments.push_back(std::move(seg));
  }
  recovery.segments = segments.size();
  active = segments.back().get();
  for (std::int32_t p = 0; p < partitions; ++p)
    next_offset[p] = published_end[p] = static_cast<std::int64_t>(locations[p].size());
}

} // namespace sandboxd::events
