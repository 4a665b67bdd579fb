#include "projections/read_models.hpp"

#include "projections/audit_log.hpp"
#include "projections/billing.hpp"
#include "projections/billing_meter.hpp"
#include "projections/pg_array.hpp"
#include "projections/sandbox_row.hpp"

#include <pqxx/pqxx>

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

namespace sandboxd::projections {

namespace {

using event_list = std::vector<const positioned_event*>;

// The duplicate guard of one sandbox: the highest sequence this projection applied, and
// whether that is kept by the sandbox's `sandboxes` row (its last_seq) or needs a row of
// its own in projection_sandbox_seq.
struct sandbox_guard {
  std::uint64_t last_seq = 0;
  bool has_row = false;       // a `sandboxes` row existed before the batch
  bool has_guard_row = false; // and a projection_sandbox_seq row
};
using guard_map = std::unordered_map<std::string, sandbox_guard>;

// Drops the events at or below the projection's last applied sequence of their sandbox:
// the greater of the sandbox row's last_seq (every applied event of a sandbox that has a
// row moves it) and its projection_sandbox_seq row (kept only where no sandbox row does).
event_list fresh_events(pqxx::transaction_base& tx, const std::string& projection,
                        const std::vector<positioned_event>& batch, guard_map& guards,
                        batch_outcome& outcome) {
  pg_array ids;
  for (const auto& pe : batch)
    if (guards.emplace(pe.event.sandbox_id, sandbox_guard{}).second)
      ids.add(pe.event.sandbox_id);
  for (const auto& row : tx.exec_params(
         "SELECT u.id, s.last_seq, g.last_seq FROM unnest($2::text[]) AS u(id)"
         " LEFT JOIN sandboxes s ON s.id = u.id"
         " LEFT JOIN projection_sandbox_seq g ON g.projection = $1 AND g.sandbox_id = u.id",
         projection, ids.str())) {
    auto& g = guards[row[0].as<std::string>()];
    if (!row[1].is_null()) {
      g.has_row = true;
      g.last_seq = row[1].as<std::uint64_t>();
    }
    if (!row[2].is_null()) {
      g.has_guard_row = true;
      g.last_seq = std::max(g.last_seq, row[2].as<std::uint64_t>());
    }
  }
  event_list out;
  for (const auto& pe : batch) {
    auto& g = guards[pe.event.sandbox_id];
    if (pe.event.sequence <= g.last_seq) {
      ++outcome.duplicates;
      continue;
    }
    g.last_seq = pe.event.sequence;
    out.push_back(&pe);
  }
  outcome.applied = out.size();
  return out;
}

// Writes each sandbox's row once, and the projection_sandbox_seq rows of the sandboxes whose
// row does not carry their guard after the batch: those without a row that the batch does
// not create, and those whose `created` the existing row ignores (ON CONFLICT DO NOTHING).
void apply_sandboxes(pqxx::transaction_base& tx, const std::string& projection,
                     const event_list& events, const guard_map& guards) {
  std::vector<sandbox_patch> patches;
  std::unordered_map<std::string, std::size_t> index;
  for (const auto* pe : events) {
    auto [it, inserted] = index.emplace(pe->event.sandbox_id, patches.size());
    if (inserted) {
      patches.emplace_back();
      patches.back().id = pe->event.sandbox_id;
    }
    fold(patches[it->second], pe->event);
  }
  pg_array c_id, c_tenant, c_state, c_template, c_limits, c_labels, c_pause, c_bytes, c_created,
    c_updated, c_seq;
  pg_array u_id, u_state, u_pause, u_bytes, u_updated, u_seq;
  pg_array g_id, g_seq, g_drop;
  for (const auto& p : patches) {
    const auto& g = guards.at(p.id);
    if (g.has_row == p.created.has_value()) {
      g_id.add(p.id);
      g_seq.add(g.last_seq);
    } else if (g.has_guard_row) {
      g_drop.add(p.id); // the sandbox row carries the guard from now on
    }
    if (p.created) {
      const auto& r = *p.created;
      c_id.add(r.id);
      c_tenant.add(r.tenant);
      c_state.add(r.state);
      c_template.add(r.template_name);
      c_limits.add(limits_json(r.limits));
      c_labels.add(labels_json(r.labels));
      c_pause.add(r.pause_mode);
      c_bytes.add(r.writable_layer_bytes);
      c_created.add(r.created_at_ns);
      c_updated.add(r.updated_at_ns);
      c_seq.add(r.last_seq);
    } else {
      u_id.add(p.id);
      u_state.add(p.state);
      u_pause.add(p.pause_mode);
      u_bytes.add(p.writable_layer_bytes);
      u_updated.add(p.updated_at_ns);
      u_seq.add(p.last_seq);
    }
  }
  // Event times are ns; timestamptz keeps whole microseconds (truncated).
  if (c_id.size() > 0)
    tx.exec_params(
      "INSERT INTO sandboxes (id, tenant, state, template, limits, labels, pause_mode,"
      " writable_layer_bytes, created_at, updated_at, last_seq)"
      " SELECT id, tenant, state, tmpl, limits::jsonb, labels::jsonb, pause, bytes,"
      "  to_timestamp(0) + (created / 1000) * interval '1 microsecond',"
      "  to_timestamp(0) + (updated / 1000) * interval '1 microsecond', seq"
      " FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],"
      "  $7::text[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[])"
      "  AS u(id, tenant, state, tmpl, limits, labels, pause, bytes, created, updated, seq)"
      " ON CONFLICT (id) DO NOTHING",
      c_id.str(), c_tenant.str(), c_state.str(), c_template.str(), c_limits.str(), c_labels.str(),
      c_pause.str(), c_bytes.str(), c_created.str(), c_updated.str(), c_seq.str());
  if (u_id.size() > 0)
    tx.exec_params(
      "UPDATE sandboxes s SET state = coalesce(u.state, s.state),"
      " pause_mode = coalesce(u.pause, s.pause_mode),"
      " writable_layer_bytes = coalesce(u.bytes, s.writable_layer_bytes),"
      " updated_at = to_timestamp(0) + (u.updated / 1000) * interval '1 microsecond',"
      " last_seq = u.seq"
      " FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[])"
      "  AS u(id, state, pause, bytes, updated, seq)"
      " WHERE s.id = u.id",
      u_id.str(), u_state.str(), u_pause.str(), u_bytes.str(), u_updated.str(), u_seq.str());
  if (g_id.size() > 0)
    tx.exec_params(
      "INSERT INTO projection_sandbox_seq (projection, sandbox_id, last_seq)"
      " SELECT $1, s, q FROM unnest($2::text[], $3::bigint[]) AS u(s, q)"
      " ON CONFLICT (projection, sandbox_id) DO UPDATE SET last_seq = EXCLUDED.last_seq",
      projection, g_id.str(), g_seq.str());
  if (g_drop.size() > 0)
    tx.exec_params("DELETE FROM projection_sandbox_seq"
                   " WHERE projection = $1 AND sandbox_id = ANY($2::text[])",
                   projection, g_drop.str());
}

void apply_billing(pqxx::transaction_base& tx, const event_list& events) {
  std::unordered_map<std::string, std::optional<meter_state>> states;
  pg_array ids;
  for (const auto* pe : events)
    if (states.emplace(pe->event.sandbox_id, std::nullopt).second)
      ids.add(pe->event.sandbox_id);
  std::unordered_map<std::string, meter_state> before;
  for (const auto& f :
       tx.exec_params("SELECT sandbox_id, tenant, memory_bytes, compute_open_seq, compute_open_ms,"
                      " storage_bytes, storage_open_seq, storage_open_ms, deleted"
                      " FROM billing_meter_state WHERE sandbox_id = ANY($1::text[])",
                      ids.str())) {
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
    before[s.sandbox_id] = s;
    states[s.sandbox_id] = std::move(s);
  }
  std::vector<closed_interval> closed;
  for (const auto* pe : events)
    meter_event(states[pe->event.sandbox_id], pe->event, closed);

  pg_array s_id, s_tenant, s_mem, s_cseq, s_cms, s_sbytes, s_sseq, s_sms, s_del;
  for (const auto& [id, s] : states) {
    if (!s)
      continue;
    auto b = before.find(id);
    if (b != before.end() && b->second == *s)
      continue;
    s_id.add(id);
    s_tenant.add(s->tenant);
    s_mem.add(s->memory_bytes);
    s_cseq.add(s->compute ? std::optional<std::uint64_t>(s->compute->seq) : std::nullopt);
    s_cms.add(s->compute ? std::optional<std::int64_t>(s->compute->start_ms) : std::nullopt);
    s_sbytes.add(s->storage_bytes);
    s_sseq.add(s->storage ? std::optional<std::uint64_t>(s->storage->seq) : std::nullopt);
    s_sms.add(s->storage ? std::optional<std::int64_t>(s->storage->start_ms) : std::nullopt);
    s_del.add(s->deleted);
  }
  if (s_id.size() > 0)
    tx.exec_params(
      "INSERT INTO billing_meter_state (sandbox_id, tenant, memory_bytes, compute_open_seq,"
      " compute_open_ms, storage_bytes, storage_open_seq, storage_open_ms, deleted)"
      " SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[],"
      "  $6::bigint[], $7::bigint[], $8::bigint[], $9::boolean[])"
      " ON CONFLICT (sandbox_id) DO UPDATE SET tenant = EXCLUDED.tenant,"
      "  memory_bytes = EXCLUDED.memory_bytes, compute_open_seq = EXCLUDED.compute_open_seq,"
      "  compute_open_ms = EXCLUDED.compute_open_ms, storage_bytes = EXCLUDED.storage_bytes,"
      "  storage_open_seq = EXCLUDED.storage_open_seq,"
      "  storage_open_ms = EXCLUDED.storage_open_ms, deleted = EXCLUDED.deleted",
      s_id.str(), s_tenant.str(), s_mem.str(), s_cseq.str(), s_cms.str(), s_sbytes.str(),
      s_sseq.str(), s_sms.str(), s_del.str());
  if (closed.empty())
    return;

  struct hour_key {
    std::string sandbox;
    std::int64_t hour;
    bool operator<(const hour_key& o) const {
      return std::tie(sandbox, hour) < std::tie(o.sandbox, o.hour);
    }
  };
  struct hour_sum {
    std::string tenant;
    std::int64_t compute = 0;
    std::int64_t storage = 0;
  };
  std::map<hour_key, hour_sum> hours;
  {
    pqxx::stream_to copy(tx, "billing_intervals",
                         std::vector<std::string>{"sandbox_id", "meter", "start_seq", "end_seq",
                                                  "tenant", "start_ms", "end_ms", "bytes"});
    for (const auto& c : closed) {
      copy << std::make_tuple(c.sandbox_id, std::string(to_string(c.kind)),
                              std::to_string(c.start_seq), std::to_string(c.end_seq), c.tenant,
                              std::to_string(c.start_ms), std::to_string(c.end_ms),
                              std::to_string(c.bytes));
      for (const auto& h : split_by_hour(c.start_ms, c.end_ms, c.bytes)) {
        auto& sum = hours[{c.sandbox_id, h.hour_start_ms}];
        sum.tenant = c.tenant;
        (c.kind == meter::compute ? sum.compute : sum.storage) += h.byte_ms;
      }
    }
    copy.complete();
  }
  pg_array h_id, h_hour, h_tenant, h_compute, h_storage;
  for (const auto& [key, sum] : hours) {
    h_id.add(key.sandbox);
    h_hour.add(key.hour);
    h_tenant.add(sum.tenant);
    h_compute.add(sum.compute);
    h_storage.add(sum.storage);
  }
  tx.exec_params(
    "INSERT INTO billing_hourly (sandbox_id, hour_ms, tenant, compute_byte_ms, storage_byte_ms)"
    " SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::bigint[])"
    " ON CONFLICT (sandbox_id, hour_ms) DO UPDATE SET"
    "  compute_byte_ms = billing_hourly.compute_byte_ms + EXCLUDED.compute_byte_ms,"
    "  storage_byte_ms = billing_hourly.storage_byte_ms + EXCLUDED.storage_byte_ms",
    h_id.str(), h_hour.str(), h_tenant.str(), h_compute.str(), h_storage.str());
}

void apply_audit(pqxx::transaction_base& tx, const event_list& events) {
  if (events.empty())
    return;
  using chain_key = std::pair<std::string, std::int32_t>;
  struct head {
    std::int64_t position = 0;
    std::string hash;
  };
  std::map<chain_key, head> heads;
  pg_array k_tenant, k_partition;
  for (const auto* pe : events)
    if (heads.emplace(chain_key{pe->event.tenant, pe->partition}, head{0, audit_genesis_hash()})
          .second) {
      k_tenant.add(pe->event.tenant);
      k_partition.add(pe->partition);
    }
  for (const auto& f :
       tx.exec_params("SELECT h.tenant, h.partition, h.position, h.hash FROM audit_chain_heads h"
                      " JOIN unnest($1::text[], $2::integer[]) AS k(tenant, partition)"
                      "  ON h.tenant = k.tenant AND h.partition = k.partition",
                      k_tenant.str(), k_partition.str()))
    heads[{f[0].as<std::string>(), f[1].as<std::int32_t>()}] = {f[2].as<std::int64_t>(),
                                                                f[3].as<std::string>()};
  {
    pqxx::stream_to copy(tx, "audit_log",
                         std::vector<std::string>{"tenant", "partition", "position", "event_id",
                                                  "occurred_at_ns", "principal", "action",
                                                  "sandbox_id", "outcome", "detail", "prev_hash",
                                                  "hash"});
    for (const auto* pe : events) {
      auto row = audit_row_of(pe->event, pe->partition);
      auto& h = heads[{row.tenant, row.partition}];
      row.position = ++h.position;
      link(row, h.hash);
      h.hash = row.hash;
      copy << std::make_tuple(row.tenant, std::to_string(row.partition),
                              std::to_string(row.position), row.event_id,
                              std::to_string(row.occurred_at_ns), row.principal, row.action,
                              row.sandbox_id, row.outcome, row.detail, row.prev_hash, row.hash);
    }
    copy.complete();
  }
  pg_array h_tenant, h_partition, h_position, h_hash;
  for (const auto& [key, h] : heads) {
    if (h.position == 0)
      continue;
    h_tenant.add(key.first);
    h_partition.add(key.second);
    h_position.add(h.position);
    h_hash.add(h.hash);
  }
  tx.exec_params("INSERT INTO audit_chain_heads (tenant, partition, position, hash)"
                 " SELECT * FROM unnest($1::text[], $2::integer[], $3::bigint[], $4::text[])"
                 " ON CONFLICT (tenant, partition) DO UPDATE SET position = EXCLUDED.position,"
                 "  hash = EXCLUDED.hash",
                 h_tenant.str(), h_partition.str(), h_position.str(), h_hash.str());
}

} // namespace

batch_outcome apply_batch(pqxx::transaction_base& tx, const std::string& projection,
                          const std::vector<positioned_event>& batch) {
  batch_outcome outcome;
  if (batch.empty())
    return outcome;
  guard_map guards;
  auto events = fresh_events(tx, projection, batch, guards, outcome);
  if (events.empty())
    return outcome;
  apply_sandboxes(tx, projection, events, guards);
  apply_billing(tx, events);
  apply_audit(tx, events);
  return outcome;
}

} // namespace sandboxd::projections
