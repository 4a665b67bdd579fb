#include "projections/sandboxes_read_model.hpp"

#include "projections/sandbox_row.hpp"

#include <pqxx/pqxx>

namespace sandboxd::projections {

void sandboxes_read_model::compute(const fresh_batch& batch) {
  rows_ = {};
  auto& [c, u] = rows_;
  for (const auto& sb : batch.sandboxes) {
    sandbox_patch p;
    p.id = *sb.id;
    for (const auto* pe : sb.events)
      fold(p, pe->event);
    if (p.created) {
      if (sb.had_row)
        continue; // a second `created`: the first one stands
      const auto& r = *p.created;
      c.id.add(r.id);
      c.tenant.add(r.tenant);
      c.state.add(r.state);
      c.template_name.add(r.template_name);
      c.runtime.add(r.runtime);
      c.limits.add(limits_json(r.limits));
      c.labels.add(labels_json(r.labels));
      c.pause_mode.add(r.pause_mode);
      c.bytes.add(r.writable_layer_bytes);
      c.created.add(r.created_at_ns);
      c.updated.add(r.updated_at_ns);
      c.seq.add(r.last_seq);
    } else if (sb.had_row) {
      u.id.add(p.id);
      u.state.add(p.state);
      u.pause_mode.add(p.pause_mode);
      u.bytes.add(p.writable_layer_bytes);
      u.redacted.add(p.redacted);
      u.updated.add(p.updated_at_ns);
      u.seq.add(p.last_seq);
      if (p.claim) {
        u.tenant.add(p.claim->tenant);
        u.labels.add(labels_json(p.claim->labels));
        u.created.add(p.claim->created_at_ns);
      } else {
        u.tenant.add_null();
        u.labels.add_null();
        u.created.add_null();
      }
    }
  }
}

void sandboxes_read_model::write(pqxx::transaction_base& tx) {
  auto& [c, u] = rows_;
  // Event times are ns; timestamptz keeps whole microseconds (truncated).
  if (c.id.size() > 0)
    tx.exec_params(
      "INSERT INTO sandboxes (id, tenant, state, template, runtime, limits, labels, pause_mode,"
      " writable_layer_bytes, created_at, updated_at, last_seq)"
      " SELECT id, tenant, state, tmpl, runtime, limits::jsonb, labels::jsonb, pause, bytes,"
      "  to_timestamp(0) + (created / 1000) * interval '1 microsecond',"
      "  to_timestamp(0) + (updated / 1000) * interval '1 microsecond', seq"
      " FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],"
      "  $7::text[], $8::text[], $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[])"
      "  AS u(id, tenant, state, tmpl, runtime, limits, labels, pause, bytes, created, updated,"
      "  seq)",
      c.id.str(), c.tenant.str(), c.state.str(), c.template_name.str(), c.runtime.str(),
      c.limits.str(), c.labels.str(), c.pause_mode.str(), c.bytes.str(), c.created.str(),
      c.updated.str(), c.seq.str());
  if (u.id.size() > 0)
    tx.exec_params(
      "UPDATE sandboxes s SET state = coalesce(u.state, s.state),"
      " pause_mode = coalesce(u.pause, s.pause_mode),"
      " writable_layer_bytes = coalesce(u.bytes, s.writable_layer_bytes),"
      " labels = CASE WHEN u.redacted THEN '{}'::jsonb"
      "  ELSE coalesce(u.labels::jsonb, s.labels) END,"
      " tenant = coalesce(u.tenant, s.tenant),"
      " created_at = coalesce(to_timestamp(0) + (u.created / 1000) * interval '1 microsecond',"
      "  s.created_at),"
      " updated_at = to_timestamp(0) + (u.updated / 1000) * interval '1 microsecond',"
      " last_seq = u.seq"
      " FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::boolean[],"
      "  $6::bigint[], $7::bigint[], $8::text[], $9::text[], $10::bigint[])"
      "  AS u(id, state, pause, bytes, redacted, updated, seq, tenant, labels, created)"
      " WHERE s.id = u.id",
      u.id.str(), u.state.str(), u.pause_mode.str(), u.bytes.str(), u.redacted.str(),
      u.updated.str(), u.seq.str(), u.tenant.str(), u.labels.str(), u.created.str());
  rows_ = {};
}

} // namespace sandboxd::projections
