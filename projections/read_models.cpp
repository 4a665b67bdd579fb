#include "projections/read_models.hpp"

#include "projections/audit_log.hpp"
#include "projections/billing.hpp"
#include "projections/billing_meter.hpp"
#include "projections/pg_array.hpp"
#include "projections/sandbox_row.hpp"

#include <pqxx/pqxx>
#include <pqxx/tablewriter>

#include <algorithm>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

namespace sandboxd::projections {

namespace {

using event_list = std::vector<const positioned_event*>;

// Appends `v` as one field of COPY's text format (tab-separated, backslash escapes).
void copy_field(std::string& out, std::string_view v) {
  for (char c : v) {
    switch (c) {
    case '\\':
      out += "\\\\";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    default:
      out += c;
    }
  }
  out += '\t';
}
void copy_field(std::string& out, std::int64_t v) {
  out += std::to_string(v);
  out += '\t';
}
// Ends a row: its last field's tab becomes the newline.
void copy_end_row(std::string& out) {
  out.back() = '\n';
}
// Sends COPY text rows (each ending in a newline) to `table`, as one piece. pqxx 6.4's
// stream_to only takes tuples, which it escapes field by field; the rows here are escaped
// already (copy_field), so they go through tablewriter's raw line (deprecated in 6.4 in
// favour of stream_to, and only because of its own escaping, which is not used here).
void copy_rows(pqxx::transaction_base& tx, const std::string& table,
               const std::vector<std::string>& columns, std::string rows) {
  if (rows.empty())
    return;
  rows.pop_back(); // write_raw_line adds the last newline
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  pqxx::tablewriter copy(tx, table, columns.begin(), columns.end());
#pragma GCC diagnostic pop
  copy.write_raw_line(rows);
  copy.complete();
}

// Reads, for the batch's sandboxes the memory has no entry for, their duplicate guard (the
// greater of the sandbox row's last_seq — every applied event of a sandbox that has a row
// moves it — and its projection_sandbox_seq row, kept only where no sandbox row does) and
// their billing meter state, in one statement.
void recall_sandboxes(pqxx::transaction_base& tx, const std::string& projection,
                      const std::vector<positioned_event>& batch, projection_memory& memory) {
  pg_array ids;
  for (const auto& pe : batch)
    if (memory.sandboxes.try_emplace(pe.event.sandbox_id).second)
      ids.add(pe.event.sandbox_id);
  if (ids.size() == 0)
    return;
  for (const auto& f : tx.exec_params(
         "SELECT u.id, s.last_seq, g.last_seq, m.tenant, m.memory_bytes, m.compute_open_seq,"
         " m.compute_open_ms, m.storage_bytes, m.storage_open_seq, m.storage_open_ms, m.deleted"
         " FROM unnest($2::text[]) AS u(id)"
         " LEFT JOIN sandboxes s ON s.id = u.id"
         " LEFT JOIN projection_sandbox_seq g ON g.projection = $1 AND g.sandbox_id = u.id"
         " LEFT JOIN billing_meter_state m ON m.sandbox_id = u.id",
         projection, ids.str())) {
    auto& g = memory.sandboxes[f[0].as<std::string>()];
    if (!f[1].is_null()) {
      g.has_row = true;
      g.last_seq = f[1].as<std::uint64_t>();
    }
    if (!f[2].is_null()) {
      g.has_guard_row = true;
      g.last_seq = std::max(g.last_seq, f[2].as<std::uint64_t>());
    }
    if (!f[3].is_null()) {
      meter_state s;
      s.sandbox_id = f[0].as<std::string>();
      s.tenant = f[3].as<std::string>();
      s.memory_bytes = f[4].as<std::int64_t>();
      if (!f[5].is_null())
        s.compute = open_interval{f[5].as<std::uint64_t>(), f[6].as<std::int64_t>()};
      s.storage_bytes = f[7].as<std::int64_t>();
      if (!f[8].is_null())
        s.storage = open_interval{f[8].as<std::uint64_t>(), f[9].as<std::int64_t>()};
      s.deleted = f[10].as<bool>();
      g.meter = std::move(s);
    }
  }
}

// Drops the events at or below the last applied sequence of their sandbox, and moves it.
event_list fresh_events(const std::vector<positioned_event>& batch, projection_memory& memory,
                        batch_outcome& outcome) {
  event_list out;
  for (const auto& pe : batch) {
    auto& g = memory.sandboxes.at(pe.event.sandbox_id);
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
                     const event_list& events, projection_memory& memory) {
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
    auto& g = memory.sandboxes.at(p.id);
    if (g.has_row == p.created.has_value()) {
      g_id.add(p.id);
      g_seq.add(g.last_seq);
      g.has_guard_row = true;
    } else if (g.has_guard_row) {
      g_drop.add(p.id); // the sandbox row carries the guard from now on
      g.has_guard_row = false;
    }
    g.has_row = g.has_row || p.created.has_value();
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

void apply_billing(pqxx::transaction_base& tx, const event_list& events,
                   projection_memory& memory) {
  // The meter state of each sandbox before the batch, to write only those that changed.
  std::unordered_map<std::string, std::optional<meter_state>> before;
  std::vector<closed_interval> closed;
  for (const auto* pe : events) {
    auto& m = memory.sandboxes.at(pe->event.sandbox_id).meter;
    before.try_emplace(pe->event.sandbox_id, m);
    meter_event(m, pe->event, closed);
  }

  pg_array s_id, s_tenant, s_mem, s_cseq, s_cms, s_sbytes, s_sseq, s_sms, s_del;
  for (const auto& [id, b] : before) {
    const auto& s = memory.sandboxes.at(id).meter;
    if (!s || b == s)
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
  std::string rows;
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
    for (const auto& h : split_by_hour(c.start_ms, c.end_ms, c.bytes)) {
      auto& sum = hours[{c.sandbox_id, h.hour_start_ms}];
      sum.tenant = c.tenant;
      (c.kind == meter::compute ? sum.compute : sum.storage) += h.byte_ms;
    }
  }
  copy_rows(
    tx, "billing_intervals",
    {"sandbox_id", "meter", "start_seq", "end_seq", "tenant", "start_ms", "end_ms", "bytes"},
    std::move(rows));
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

// Reads the heads of the events' audit chains that the memory has no entry for (a chain
// without a head has no row yet: position 0 after the genesis hash).
void recall_heads(pqxx::transaction_base& tx, const event_list& events, projection_memory& memory) {
  pg_array k_tenant, k_partition;
  for (const auto* pe : events)
    if (memory.heads
          .try_emplace({pe->event.tenant, pe->partition}, chain_head{0, audit_genesis_hash()})
          .second) {
      k_tenant.add(pe->event.tenant);
      k_partition.add(pe->partition);
    }
  if (k_tenant.size() == 0)
    return;
  for (const auto& f :
       tx.exec_params("SELECT h.tenant, h.partition, h.position, h.hash FROM audit_chain_heads h"
                      " JOIN unnest($1::text[], $2::integer[]) AS k(tenant, partition)"
                      "  ON h.tenant = k.tenant AND h.partition = k.partition",
                      k_tenant.str(), k_partition.str()))
    memory.heads[{f[0].as<std::string>(), f[1].as<std::int32_t>()}] = {f[2].as<std::int64_t>(),
                                                                       f[3].as<std::string>()};
}

struct audit_rows {
  std::string copy;                              // COPY text rows of audit_log
  std::set<projection_memory::chain_key> chains; // the chains they extend
};

// The audit rows of the events, chained on from the heads in memory (which it moves):
// pure computation (the hashes), so it runs beside the other read models' statements.
audit_rows chain_audit_rows(const event_list& events,
                            std::map<projection_memory::chain_key, chain_head>& heads) {
  audit_rows out;
  for (const auto* pe : events) {
    auto row = audit_row_of(pe->event, pe->partition);
    projection_memory::chain_key key{row.tenant, row.partition};
    auto& h = heads.at(key);
    out.chains.insert(std::move(key));
    row.position = ++h.position;
    link(row, h.hash);
    h.hash = row.hash;
    auto& c = out.copy;
    copy_field(c, row.tenant);
    copy_field(c, row.partition);
    copy_field(c, row.position);
    copy_field(c, row.event_id);
    copy_field(c, row.occurred_at_ns);
    copy_field(c, row.principal);
    copy_field(c, row.action);
    copy_field(c, row.sandbox_id);
    copy_field(c, row.outcome);
    copy_field(c, row.detail);
    copy_field(c, row.prev_hash);
    copy_field(c, row.hash);
    copy_end_row(c);
  }
  return out;
}

void write_audit(pqxx::transaction_base& tx, audit_rows rows, const projection_memory& memory) {
  if (rows.chains.empty())
    return;
  copy_rows(tx, "audit_log",
            {"tenant", "partition", "position", "event_id", "occurred_at_ns", "principal", "action",
             "sandbox_id", "outcome", "detail", "prev_hash", "hash"},
            std::move(rows.copy));
  pg_array h_tenant, h_partition, h_position, h_hash;
  for (const auto& key : rows.chains) {
    const auto& h = memory.heads.at(key);
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
                          const std::vector<positioned_event>& batch, projection_memory& memory) {
  batch_outcome outcome;
  if (batch.empty())
    return outcome;
  recall_sandboxes(tx, projection, batch, memory);
  auto events = fresh_events(batch, memory, outcome);
  if (events.empty())
    return outcome;
  recall_heads(tx, events, memory);
  // The audit chain is hashed on another thread while PostgreSQL applies the sandboxes and
  // billing statements; it touches only memory.heads, those only memory.sandboxes.
  auto audit = std::async(std::launch::async, [&events, &heads = memory.heads] {
    return chain_audit_rows(events, heads);
  });
  apply_sandboxes(tx, projection, events, memory);
  apply_billing(tx, events, memory);
  write_audit(tx, audit.get(), memory);
  return outcome;
}

batch_outcome apply_batch(pqxx::transaction_base& tx, const std::string& projection,
                          const std::vector<positioned_event>& batch) {
  projection_memory memory;
  return apply_batch(tx, projection, batch, memory);
}

} // namespace sandboxd::projections
