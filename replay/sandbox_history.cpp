// Reading a sandbox's history: one pass over its partition, records of other keys skipped
// before decoding.
#include "replay/sandbox_history.hpp"

#include "events/file_log_reader.hpp"

#include <stdexcept>

namespace sandboxd::replay {

namespace {

constexpr std::size_t k_read_chunk = 4096;

void add(std::vector<history_entry>& out, const events::event_log& log, std::int32_t partition,
         std::int64_t offset, std::string_view value) {
  auto d = events::decode(value);
  if (!d.ok())
    throw std::runtime_error(log.describe() + ": the record at partition " +
                             std::to_string(partition) + " offset " + std::to_string(offset) +
                             " is not an event (" + d.failure().message + ")");
  out.push_back({partition, offset, std::move(d.get())});
}

[[noreturn]] void unreadable(const events::event_log& log, std::int32_t partition,
                             const events::error& e) {
  throw std::runtime_error(log.describe() + ": partition " + std::to_string(partition) +
                           " cannot be read: " + e.message);
}

} // namespace

std::vector<history_entry> read_history(events::event_log& log, std::string_view sandbox_id) {
  std::vector<history_entry> out;
  const std::int32_t partition = log.partition_for(sandbox_id);
  if (auto* file = dynamic_cast<events::file_log_reader*>(&log)) {
    auto failed = file->visit(
      partition, 0, [&](std::int64_t offset, std::string_view key, std::string_view value) {
        if (key == sandbox_id)
          add(out, log, partition, offset, value);
        return true;
      });
    if (failed)
      unreadable(log, partition, *failed);
    return out;
  }
  const auto end = log.end_offset(partition);
  if (!end.ok())
    unreadable(log, partition, *end.failure);
  for (std::int64_t from = 0; from < end.offset;) {
    auto chunk = log.read(partition, from, k_read_chunk);
    if (!chunk.ok())
      unreadable(log, partition, *chunk.failure);
    if (chunk.records.empty())
      break;
    for (const auto& r : chunk.records)
      if (r.key == sandbox_id)
        add(out, log, partition, r.offset, r.value);
    from = chunk.records.back().offset + 1;
  }
  return out;
}

} // namespace sandboxd::replay
