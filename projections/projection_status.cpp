// Projection offsets from PostgreSQL against the log's end offsets and the age of the first
// record each projection has yet to apply.
#include "projections/projection_status.hpp"

#include <pqxx/pqxx>

#include <map>
#include <stdexcept>

namespace sandboxd::projections {

namespace {

// Seconds from the event at `offset` of `partition` to `now`; 0 if it is younger.
double age_of(events::event_log& log, std::int32_t partition, std::int64_t offset,
              events::time_point now) {
  auto r = log.read(partition, offset, 1);
  if (!r.ok())
    throw std::runtime_error(log.describe() + ": partition " + std::to_string(partition) +
                             " offset " + std::to_string(offset) +
                             " cannot be read: " + r.failure->message);
  if (r.records.empty())
    return 0; // the end offset promised a record a read did not return yet (Kafka)
  auto d = events::decode(r.records.front().value);
  if (!d.ok())
    throw std::runtime_error(log.describe() + ": partition " + std::to_string(partition) +
                             " offset " + std::to_string(offset) +
                             " is not an event: " + d.failure().message);
  const auto age = now - d.get().occurred_at;
  return age.count() > 0 ? std::chrono::duration<double>(age).count() : 0.0;
}

} // namespace

std::vector<partition_status> projection_status(const std::string& conninfo,
                                                const std::string& schema, events::event_log& log,
                                                events::time_point now, const std::string& always) {
  std::map<std::string, std::map<std::int32_t, std::int64_t>> offsets;
  offsets[always];
  {
    pqxx::connection c(conninfo);
    pqxx::read_transaction tx(c);
    for (const auto& row : tx.exec("SELECT projection, partition, next_offset FROM " +
                                   tx.quote_name(schema) + ".projection_offsets"))
      offsets[row[0].as<std::string>()][row[1].as<std::int32_t>()] = row[2].as<std::int64_t>();
  }
  std::vector<std::int64_t> ends(static_cast<std::size_t>(log.partitions()));
  for (std::int32_t p = 0; p < log.partitions(); ++p) {
    auto end = log.end_offset(p);
    if (!end.ok())
      throw std::runtime_error(log.describe() + ": the end offset of partition " +
                               std::to_string(p) + " is unknown: " + end.failure->message);
    ends[p] = end.offset;
  }
  std::vector<partition_status> out;
  for (const auto& [name, at] : offsets)
    for (std::int32_t p = 0; p < log.partitions(); ++p) {
      partition_status s;
      s.projection = name;
      s.partition = p;
      auto it = at.find(p);
      s.offset = it == at.end() ? 0 : it->second;
      s.end_offset = ends[p];
      if (s.lag_events() > 0)
        s.lag_seconds = age_of(log, p, s.offset, now);
      out.push_back(std::move(s));
    }
  return out;
}

} // namespace sandboxd::projections
