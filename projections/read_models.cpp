#include "projections/read_models.hpp"

#include "projections/audit_log.hpp"
#include "projections/billing.hpp"
#include "projections/billing_meter.hpp"
#include "projections/pg_array.hpp"
#include "projections/sandbox_row.hpp"

#include <pqxx/pqxx>
#include <pqxx/tablewriter>

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

namespace sandboxd::projections {

namespace {

using event_list = std::vector<const positioned_event*>;

// The fresh events of one sandbox in a batch, in log order, with its memory entry.
struct sandbox_events {
  sandbox_memory* memory = nullptr;
  event_list events;
};

// The fresh events of a batch: all in batch order (for the audit chains), and per sandbox
// (in sandbox id order).
struct fresh_batch {
  event_list all;
  std::vector<sandbox_events> sandboxes;
};

// Appends `v` as one field of COPY's text format (tab-separated, backslash escapes).
void copy_field(std::string& out, std::string_view v) {
  if (v.find_first_of("\\\t\n\r") == std::string_view::npos) {
    out.append(v);
    out += '\t';
    return;
  }
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
// Appends a bytea field given as hex digits: COPY's text format takes bytea's hex input
// form, \x and the digits, with its backslash escaped.
void copy_hex_bytea(std::string& out, std::string_view hex) {
  out += "\\\\x";
  out.append(hex);
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
// their billing meter state and the last hour of their billing_hourly rows, in one statement.
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
         " m.compute_open_ms, m.storage_bytes, m.storage_open_seq, m.storage_open_ms, m.deleted,"
         " (SELECT max(h.hour_ms) FROM billing_hourly h WHERE h.sandbox_id = u.id)"
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
    if (!f[11].is_null())
      g.last_hour = f[11].as<std::int64_t>();
  }
}

// Drops the events at or below the last applied sequence of their sandbox, and moves it.
// Throws sequence_gap for an event more than one above it; it writes nothing, so this runs
// before any statement of the batch.
fresh_batch fresh_events(const std::string& projection, const std::vector<positioned_event>& batch,
                         projection_memory& memory, batch_outcome& outcome) {
  fresh_batch out;
  std::unordered_map<const sandbox_memory*, std::size_t> slot;
  for (const auto& pe : batch) {
    auto& g = memory.sandboxes.at(pe.event.sandbox_id);
    if (pe.event.sequence <= g.last_seq) {
      ++outcome.duplicates;
      continue;
    }
    if (pe.event.sequence != g.last_seq + 1)
      throw sequence_gap(projection, pe, g.last_seq);
    g.last_seq = pe.event.sequence;
    out.all.push_back(&pe);
    auto [it, inserted] = slot.emplace(&g, out.sandboxes.size());
    if (inserted)
      out.sandboxes.push_back({&g, {}});
    out.sandboxes[it->second].events.push_back(&pe);
  }
  outcome.applied = out.all.size();
  // In sandbox id order, the order of the primary keys the rows are written under.
  std::sort(out.sandboxes.begin(), out.sandboxes.end(), [](const auto& a, const auto& b) {
    return a.events.front()->event.sandbox_id < b.events.front()->event.sandbox_id;
  });
  return out;
}

// Writes each sandbox's row once, and the projection_sandbox_seq rows of the sandboxes whose
// row does not carry their guard after the batch: those without a row that the batch does
// not create, and those whose `created` the existing row ignores (a second `created`: not
// inserted).
void apply_sandboxes(pqxx::transaction_base& tx, const std::string& projection,
                     const fresh_batch& batch) {
  pg_array c_id, c_tenant, c_state, c_template, c_limits, c_labels, c_pause, c_bytes, c_created,
    c_updated, c_seq;
  pg_array u_id, u_state, u_pause, u_bytes, u_updated, u_seq;
  pg_array g_id, g_seq, g_drop;
  for (const auto& sb : batch.sandboxes) {
    sandbox_patch p;
    p.id = sb.events.front()->event.sandbox_id;
    for (const auto* pe : sb.events)
      fold(p, pe->event);
    auto& g = *sb.memory;
    const bool had_row = g.has_row;
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
      if (had_row)
        continue; // a second `created`: the first one stands
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
      "  AS u(id, tenant, state, tmpl, limits, labels, pause, bytes, created, updated, seq)",
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

// billing_hourly rows as unnest arrays.
struct hour_columns {
  pg_array id, hour, tenant, compute, storage;
  void add(const std::string& sandbox, std::int64_t h, const std::string& t, std::int64_t c,
           std::int64_t s) {
    id.add(sandbox);
    hour.add(h);
    tenant.add(t);
    compute.add(c);
    storage.add(s);
  }
};

// billing_meter_state rows as unnest arrays.
struct meter_columns {
  pg_array id, tenant, memory, compute_seq, compute_ms, storage_bytes, storage_seq, storage_ms,
    deleted;
  void add(const meter_state& s) {
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
};

// A batch's billing writes: meter state rows to insert and to update, closed intervals (as
// COPY text), hours new after the sandbox's latest one and hours that may have a row.
struct billing_rows {
  meter_columns inserts, updates;
  hour_columns fresh_hours, maybe_hours;
  std::string intervals;
};

// The billing rows of the batch, moving the meter state and latest hour in memory: pure
// computation, so it runs beside the `sandboxes` statements (it touches only the meter and
// last_hour of each sandbox's memory, those only the rest).
billing_rows billing_rows_of(const fresh_batch& batch) {
  // Whether a sandbox has a meter row is known (memory), so new rows are inserted and
  // existing ones updated, without the conflict check of an upsert; unchanged ones are not
  // written. Likewise an hour after the sandbox's last hour with a row is new (a plain
  // insert); the others may have a row (an upsert that adds to it).
  billing_rows out;
  auto& [inserts, updates, fresh_hours, maybe_hours, rows] = out;
  std::vector<closed_interval> closed;
  struct hour_sum {
    std::int64_t compute = 0;
    std::int64_t storage = 0;
  };
  std::map<std::int64_t, hour_sum> hours; // of one sandbox
  for (const auto& sb : batch.sandboxes) {
    auto& m = sb.memory->meter;
    const auto before = m;
    const auto first = closed.size();
    for (const auto* pe : sb.events)
      meter_event(m, pe->event, closed);
    if (m && m != before)
      (before ? updates : inserts).add(*m);
    if (first == closed.size())
      continue;
    hours.clear();
    for (auto i = first; i < closed.size(); ++i) {
      const auto& c = closed[i];
      for (const auto& h : split_by_hour(c.start_ms, c.end_ms, c.bytes))
        (c.kind == meter::compute ? hours[h.hour_start_ms].compute
                                  : hours[h.hour_start_ms].storage) += h.byte_ms;
    }
    const auto& c = closed[first];
    auto& last = sb.memory->last_hour;
    for (const auto& [hour, sum] : hours) {
      if (!last || hour > *last) {
        fresh_hours.add(c.sandbox_id, hour, c.tenant, sum.compute, sum.storage);
        last = hour;
      } else {
        maybe_hours.add(c.sandbox_id, hour, c.tenant, sum.compute, sum.storage);
      }
    }
  }
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
  return out;
}

void write_billing(pqxx::transaction_base& tx, billing_rows b) {
  auto& [inserts, updates, fresh_hours, maybe_hours, rows] = b;
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
    std::move(rows));
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
       tx.exec_params("SELECT h.tenant, h.partition, h.position, encode(h.hash, 'hex')"
                      " FROM audit_chain_heads h"
                      " JOIN unnest($1::text[], $2::integer[]) AS k(tenant, partition)"
                      "  ON h.tenant = k.tenant AND h.partition = k.partition",
                      k_tenant.str(), k_partition.str()))
    memory.heads[{f[0].as<std::string>(), f[1].as<std::int32_t>()}] = {f[2].as<std::int64_t>(),
                                                                       f[3].as<std::string>()};
}

// COPY text rows of audit_log per chain they extend. Sent chain after chain, so the rows
// reach the primary key (tenant, partition, position) in its order: each insert lands
// next to the one before, on a page still in cache.
using audit_rows = std::map<projection_memory::chain_key, std::string>;

// The audit rows of the events, chained on from the heads in memory (which it moves):
// pure computation (the hashes), so it runs beside the other read models' statements.
audit_rows chain_audit_rows(const event_list& events,
                            std::map<projection_memory::chain_key, chain_head>& heads) {
  audit_rows out;
  for (const auto* pe : events) {
    auto row = audit_row_of(pe->event, pe->partition);
    projection_memory::chain_key key{row.tenant, row.partition};
    auto& h = heads.at(key);
    auto& c = out[std::move(key)];
    row.position = ++h.position;
    link(row, h.hash);
    h.hash = row.hash;
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
    copy_hex_bytea(c, row.prev_hash);
    copy_hex_bytea(c, row.hash);
    copy_end_row(c);
  }
  return out;
}

void write_audit(pqxx::transaction_base& tx, audit_rows rows, const projection_memory& memory) {
  if (rows.empty())
    return;
  std::string copy;
  for (const auto& [key, chain] : rows)
    copy += chain;
  copy_rows(tx, "audit_log",
            {"tenant", "partition", "position", "event_id", "occurred_at_ns", "principal", "action",
             "sandbox_id", "outcome", "detail", "prev_hash", "hash"},
            std::move(copy));
  pg_array h_tenant, h_partition, h_position, h_hash;
  for (const auto& [key, chain] : rows) {
    const auto& h = memory.heads.at(key);
    h_tenant.add(key.first);
    h_partition.add(key.second);
    h_position.add(h.position);
    h_hash.add(h.hash);
  }
  tx.exec_params(
    "INSERT INTO audit_chain_heads (tenant, partition, position, hash)"
    " SELECT t, p, n, decode(h, 'hex')"
    " FROM unnest($1::text[], $2::integer[], $3::bigint[], $4::text[]) AS u(t, p, n, h)"
    " ON CONFLICT (tenant, partition) DO UPDATE SET position = EXCLUDED.position,"
    "  hash = EXCLUDED.hash",
    h_tenant.str(), h_partition.str(), h_position.str(), h_hash.str());
}

std::string gap_message(const std::string& projection, const positioned_event& at,
                        std::uint64_t last_applied) {
  const auto first = last_applied + 1;
  const auto last = at.event.sequence - 1;
  return "projection " + projection + ": sandbox " + at.event.sandbox_id + " is missing " +
         (first == last
            ? "event sequence " + std::to_string(first)
            : "event sequences " + std::to_string(first) + " to " + std::to_string(last)) +
         ": partition " + std::to_string(at.partition) + " offset " + std::to_string(at.offset) +
         " holds sequence " + std::to_string(at.event.sequence) + " (event " + at.event.event_id +
         ") after sequence " + std::to_string(last_applied) +
         "; the log lost events, and the projection stops here until the log is repaired";
}

} // namespace

sequence_gap::sequence_gap(const std::string& projection, const positioned_event& at,
                           std::uint64_t last_applied)
    : std::runtime_error(gap_message(projection, at, last_applied)),
      sandbox_id(at.event.sandbox_id), first_missing(last_applied + 1), found(at.event.sequence),
      partition(at.partition), offset(at.offset) {}

batch_outcome apply_batch(pqxx::transaction_base& tx, const std::string& projection,
                          const std::vector<positioned_event>& batch, projection_memory& memory,
                          batch_helpers& helpers) {
  batch_outcome outcome;
  if (batch.empty())
    return outcome;
  recall_sandboxes(tx, projection, batch, memory);
  auto fresh = fresh_events(projection, batch, memory, outcome);
  if (fresh.all.empty())
    return outcome;
  recall_heads(tx, fresh.all, memory);
  // The audit chain is hashed on another thread while PostgreSQL applies the sandboxes and
  // billing statements; it touches only memory.heads, those only memory.sandboxes. The
  // billing rows are computed on a third while PostgreSQL applies the sandboxes statements.
  auto audit = helpers.audit.submit(
    [&fresh, &heads = memory.heads] { return chain_audit_rows(fresh.all, heads); });
  auto billing = helpers.billing.submit([&fresh] { return billing_rows_of(fresh); });
  // Both helpers read `fresh` and write `memory`: they must be done before this returns,
  // whatever throws.
  struct wait_for_helpers {
    std::future<audit_rows>& audit;
    std::future<billing_rows>& billing;
    ~wait_for_helpers() {
      if (audit.valid())
        audit.wait();
      if (billing.valid())
        billing.wait();
    }
  } waiting{audit, billing};
  apply_sandboxes(tx, projection, fresh);
  write_billing(tx, billing.get());
  write_audit(tx, audit.get(), memory);
  return outcome;
}

batch_outcome apply_batch(pqxx::transaction_base& tx, const std::string& projection,
                          const std::vector<positioned_event>& batch, projection_memory& memory) {
  batch_helpers helpers;
  return apply_batch(tx, projection, batch, memory, helpers);
}

batch_outcome apply_batch(pqxx::transaction_base& tx, const std::string& projection,
                          const std::vector<positioned_event>& batch) {
  projection_memory memory;
  return apply_batch(tx, projection, batch, memory);
}

} // namespace sandboxd::projections
