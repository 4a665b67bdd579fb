#include "projections/log_batch.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace sandboxd::projections {

log_batch read_log_batch(events::event_log& log, const std::string& projection,
                         const partition_offsets& from, const partition_offsets& until,
                         std::size_t max_batch) {
  log_batch out;
  out.from = from;
  std::size_t share = std::max<std::size_t>(1, max_batch / std::max<std::size_t>(1, from.size()));
  // Every partition is read first, so the decoded events are placed once, each moved in.
  std::vector<std::pair<std::int32_t, events::read_result>> reads;
  std::size_t total = 0;
  for (auto [p, at] : from) {
    std::size_t max = share;
    if (auto u = until.find(p); u != until.end()) {
      if (at >= u->second)
        continue;
      max = std::min<std::size_t>(max, static_cast<std::size_t>(u->second - at));
    }
    auto r = log.read(p, at, max);
    if (!r.ok())
      throw std::runtime_error("projection " + projection + ": reading partition " +
                               std::to_string(p) + " of " + log.describe() +
                               " failed: " + r.failure->message);
    if (r.records.empty())
      continue;
    total += r.records.size();
    reads.emplace_back(p, std::move(r));
  }
  out.events.reserve(total);
  for (auto& [p, r] : reads) {
    for (auto& rec : r.records) {
      auto d = events::decode(rec.value);
      if (!d.ok())
        throw std::runtime_error(
          "projection " + projection + ": the record at partition " + std::to_string(p) +
          " offset " + std::to_string(rec.offset) + " of " + log.describe() + " is not an event (" +
          d.failure().message + "); the projection stops here until it is repaired");
      out.events.push_back({p, rec.offset, std::get<events::event>(std::move(d.value))});
    }
    out.moved[p] = r.records.back().offset + 1;
    r.records = {}; // decoded: the bytes go
  }
  return out;
}

} // namespace sandboxd::projections
