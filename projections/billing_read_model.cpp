#include "projections/billing_read_model.hpp"

#include "projections/billing.hpp"
#include "projections/pg_copy.hpp"

#include <pqxx/pqxx>

#include <map>

namespace sandboxd::projections {

void billing_read_model::meter_columns::add(const meter_state& s) {
  id.add(s.sandbox_id);
  tenant.add(s.tenant);
  memory.add(s.memory_bytes);
  compute_seq.add(s.compute ? std::optional<std::uint64_t>(s.compute->seq) : std::nullopt);
  compute_ms.add(s.compute ? std::optional<std::int64_t>(s.compute->start_ms) : std::nullopt);
  storage_bytes.add(s.storage_bytes);
  storage_seq.add(s.storage ? std::optional<std::uint64_t>(s.storage->seq) : std::nullopt);
  storage_ms.add(s.storage ? std::optional<std::int64_t>(s.storage->start_ms) : std::nullopt);
  deleted.add(s.deleted);
}

void billing_read_model::hour_columns::add(const std::string& sandbox, std::int64_t h,
                                           const std::string& t, std::int64_t c, std::int64_t s) {
  id.add(sandbox);
  hour.add(h);
  tenant.add(t);
  compute.add(c);
  storage.add(s);
}

void billing_read_model::forget() {
  sandboxes_.clear();
  rows_ = {};
}

// The meter state and the last hour of the batch's sandboxes it does not remember, in one
// statement.
namespace {

// Calls f(key, events) for each meter the batch moves: a sandbox's own events as the batch
// has them, and the template stream's split by template (each template's storage meter is its
// own row, keyed by its id), in key order.
template <class F>
void for_each_meter(const fresh_batch& batch, F f) {
  for (const auto& sb : batch.sandboxes) {
    if (*sb.id != events::template_stream_key) {
      f(*sb.id, sb.events);
      continue;
    }
    std::map<std::string, event_list> templates;
    for (const auto* pe : sb.events)
      if (auto key = meter_key(pe->event); !key.empty())
        templates[key].push_back(pe);
    for (const auto& [key, events] : templates)
      f(key, events);
  }
}

} // namespace

void billing_read_model::recall(pqxx::transaction_base& tx, const fresh_batch& batch) {
  pg_array ids;
  for_each_meter(batch, [&](const std::string& id, const event_list&) {
    if (sandboxes_.try_emplace(id).second)
      ids.add(id);
  });
  if (ids.size() == 0)
    return;
  for (const auto& f : tx.exec_params(
         "SELECT u.id, m.tenant, m.memory_bytes, m.compute_open_seq, m.compute_open_ms,"
         " m.storage_bytes, m.storage_open_seq, m.storage_open_ms, m.deleted,"
         " (SELECT max(h.hour_ms) FROM billing_hourly h WHERE h.sandbox_id = u.id)"
         " FROM unnest($1::text[]) AS u(id)"
         " LEFT JOIN billing_meter_state m ON m.sandbox_id = u.id",
         ids.str())) {
    auto& b = sandboxes_[f[0].as<std::string>()];
    if (!f[1].is_null()) {
      meter_state s;
      s.sandbox_id = f[0].as<std::string>();
      s.tenant = f[1].as<std::string>();
      s.memory_bytes = f[2].as<std::int64_t>();
      if (!f[3].is_null())
        s.compute = open_interval{f[3].as<std::uint64_t>(), f[4].as<std::int64_t>()};
      s.storage_bytes = f[5].as<std::int64_t>();
      if (!f[6].is_null())
        s.storage = open_interval{f[6].as<std::uint64_t>(), f[7].as<std::int64_t>()};
      s.deleted = f[8].as<bool>();
      b.meter = std::move(s);
    }
    if (!f[9].is_null())
      b.last_hour = f[9].as<std::int64_t>();
  }
}

void billing_read_model::compute(const fresh_batch& batch) {
  rows_ = {};
  std::vector<closed_interval> closed;
  for_each_meter(batch, [&](const std::string& id, const event_list& events) {
    auto& b = sandboxes_.at(id);
    const auto before = b.meter;
    const auto first = closed.size();
    for (const auto* pe : events)
      meter_event(b.meter, pe->event, closed);
    if (b.meter && b.meter != before)
      (before ? rows_.updates : rows_.inserts).add(*b.meter);
    if (first < closed.size())
      add_hours(closed, first, b.last_hour);
  });
  add_intervals(closed);
}

// Adds the usage of one sandbox's intervals closed[first..] by hour, moving its last hour.
void billing_read_model::add_hours(const std::vector<closed_interval>& closed, std::size_t first,
                                   std::optional<std::int64_t>& last_hour) {
  struct hour_sum {
    std::int64_t compute = 0;
    std::int64_t storage = 0;
  };
  std::map<std::int64_t, hour_sum> hours;
  for (auto i = first; i < closed.size(); ++i) {
    const auto& c = closed[i];
    for (const auto& h : split_by_hour(c.start_ms, c.end_ms, c.bytes))
      (c.kind == meter::compute ? hours[h.hour_start_ms].compute
                                : hours[h.hour_start_ms].storage) += h.byte_ms;
  }
  const auto& c = closed[first];
  for (const auto& [hour, sum] : hours) {
    if (!last_hour || hour > *last_hour) {
      rows_.fresh_hours.add(c.sandbox_id, hour, c.tenant, sum.compute, sum.storage);
      last_hour = hour;
    } else {
      rows_.maybe_hours.add(c.sandbox_id, hour, c.tenant, sum.compute, sum.storage);
    }
  }
}

void billing_read_model::add_intervals(const std::vector<closed_interval>& closed) {
  auto& rows = rows_.intervals;
  for (const auto& c : closed) {
    copy_field(rows, c.sandbox_id);
    copy_field(rows, to_string(c.kind));
    copy_field(rows, static_cast<std::int64_t>(c.start_seq));
    copy_field(rows, static_cast<std::int64_t>(c.end_seq));
    copy_field(rows, c.tenant);
    copy_field(rows, c.start_ms);
    copy_field(rows, c.end_ms);
    copy_field(rows, c.bytes);
    copy_end_row(rows);
  }
}

void billing_read_model::write(pqxx::transaction_base& tx) {
  auto& [inserts, updates, fresh_hours, maybe_hours, intervals] = rows_;
  if (inserts.id.size() > 0)
    tx.exec_params(
      "INSERT INTO billing_meter_state (sandbox_id, tenant, memory_bytes, compute_open_seq,"
      " compute_open_ms, storage_bytes, storage_open_seq, storage_open_ms, deleted)"
      " SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[],"
      "  $6::bigint[], $7::bigint[], $8::bigint[], $9::boolean[])",
      inserts.id.str(), inserts.tenant.str(), inserts.memory.str(), inserts.compute_seq.str(),
      inserts.compute_ms.str(), inserts.storage_bytes.str(), inserts.storage_seq.str(),
      inserts.storage_ms.str(), inserts.deleted.str());
  if (updates.id.size() > 0)
    tx.exec_params("UPDATE billing_meter_state m SET tenant = u.tenant, memory_bytes = u.memory,"
                   " compute_open_seq = u.cseq, compute_open_ms = u.cms, storage_bytes = u.sbytes,"
                   " storage_open_seq = u.sseq, storage_open_ms = u.sms, deleted = u.deleted"
                   " FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[],"
                   "  $6::bigint[], $7::bigint[], $8::bigint[], $9::boolean[])"
                   "  AS u(id, tenant, memory, cseq, cms, sbytes, sseq, sms, deleted)"
                   " WHERE m.sandbox_id = u.id",
                   updates.id.str(), updates.tenant.str(), updates.memory.str(),
                   updates.compute_seq.str(), updates.compute_ms.str(), updates.storage_bytes.str(),
                   updates.storage_seq.str(), updates.storage_ms.str(), updates.deleted.str());
  copy_rows(
    tx, "billing_intervals",
    {"sandbox_id", "meter", "start_seq", "end_seq", "tenant", "start_ms", "end_ms", "bytes"},
    std::move(intervals));
  if (fresh_hours.id.size() > 0)
    tx.exec_params(
      "INSERT INTO billing_hourly (sandbox_id, hour_ms, tenant, compute_byte_ms, storage_byte_ms)"
      " SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::bigint[])",
      fresh_hours.id.str(), fresh_hours.hour.str(), fresh_hours.tenant.str(),
      fresh_hours.compute.str(), fresh_hours.storage.str());
  if (maybe_hours.id.size() > 0)
    tx.exec_params(
      "INSERT INTO billing_hourly (sandbox_id, hour_ms, tenant, compute_byte_ms, storage_byte_ms)"
      " SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::bigint[])"
      " ON CONFLICT (sandbox_id, hour_ms) DO UPDATE SET"
      "  compute_byte_ms = billing_hourly.compute_byte_ms + EXCLUDED.compute_byte_ms,"
      "  storage_byte_ms = billing_hourly.storage_byte_ms + EXCLUDED.storage_byte_ms",
      maybe_hours.id.str(), maybe_hours.hour.str(), maybe_hours.tenant.str(),
      maybe_hours.compute.str(), maybe_hours.storage.str());
  rows_ = {};
}

} // namespace sandboxd::projections
