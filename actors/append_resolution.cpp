#include "actors/append_resolution.hpp"

#include <stdexcept>

namespace sandboxd::actors {

landed_events find_landed(events::event_log& log, std::int32_t partition, std::int64_t from,
                          const std::string& sandbox_id, std::uint64_t applied_sequence,
                          const std::vector<events::event>& expected) {
  constexpr std::size_t k_chunk = 4096;
  landed_events out;
  std::int64_t at = from;
  while (out.offsets.size() < expected.size()) {
    auto rr = log.read(partition, at, k_chunk);
    if (!rr.ok()) {
      out.failure = rr.failure;
      return out;
    }
    if (rr.records.empty())
      return out;
    for (const auto& rec : rr.records) {
      at = rec.offset + 1;
      if (rec.key != sandbox_id)
        continue;
      auto d = events::decode(rec.value);
      const auto where = "partition " + std::to_string(partition) + " offset " +
                         std::to_string(rec.offset) + " of " + log.describe();
      if (!d.ok())
        throw std::runtime_error("the record at " + where + " is not an event of sandbox " +
                                 sandbox_id + ": " + d.failure().message);
      const auto& e = d.get();
      const auto found = out.offsets.size();
      const std::uint64_t next = applied_sequence + found + 1;
      if (e.sequence == next && found < expected.size() && e == expected[found]) {
        out.offsets.push_back(rec.offset);
        if (out.offsets.size() == expected.size())
          return out;
        continue;
      }
      // A later copy of an event applied before (older than this append) or found already.
      if (e.sequence < applied_sequence + 1 ||
          (e.sequence < next && e == expected[e.sequence - applied_sequence - 1]))
        continue;
      throw std::runtime_error(
        "the record at " + where + " holds event " + std::to_string(e.sequence) + " of sandbox " +
        sandbox_id + ", which this node did not append (it expected " +
        (found < expected.size() ? "event " + std::to_string(next) : std::string("nothing more")) +
        "); another writer holds this sandbox: stop it and restart");
    }
  }
  return out;
}

} // namespace sandboxd::actors
