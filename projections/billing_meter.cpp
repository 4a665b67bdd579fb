#include "projections/billing_meter.hpp"

#include "projections/billing.hpp"
#include "projections/sandbox_row.hpp"

#include <algorithm>

namespace sandboxd::projections {

const char* to_string(meter m) {
  return m == meter::compute ? "compute" : "storage";
}

namespace {

// Closes the open interval of `kind` at `at_ms`, billed at `bytes`.
void close(meter_state& s, meter kind, std::int64_t bytes, std::uint64_t seq, std::int64_t at_ms,
           std::vector<closed_interval>& out) {
  auto& open = kind == meter::compute ? s.compute : s.storage;
  if (!open)
    return;
  if (bytes > 0 && at_ms > open->start_ms)
    out.push_back({s.sandbox_id, s.tenant, kind, open->seq, seq, open->start_ms, at_ms, bytes});
  open.reset();
}

void close_compute(meter_state& s, std::uint64_t seq, std::int64_t at_ms,
                   std::vector<closed_interval>& out) {
  close(s, meter::compute, s.memory_bytes, seq, at_ms, out);
}

// The layer read `reading` bytes at `at_ms`: the open interval is billed at the larger of its
// opening reading and this one.
void close_storage(meter_state& s, std::int64_t reading, std::uint64_t seq, std::int64_t at_ms,
                   std::vector<closed_interval>& out) {
  close(s, meter::storage, std::max(s.storage_bytes, reading), seq, at_ms, out);
}

std::optional<std::uint64_t> layer_size(const events::payload& p) {
  if (const auto* v = std::get_if<events::storage_sampled>(&p))
    return v->writable_layer_bytes;
  if (const auto* v = std::get_if<events::paused>(&p))
    return v->writable_layer_bytes;
  if (const auto* v = std::get_if<events::snapshot_taken>(&p))
    if (v->outcome == events::op_outcome::completed) // a failed one measured nothing
      return v->writable_layer_bytes;
  return std::nullopt;
}

// A template's storage meter: open from `ready` (a tenant's own template only) to `deleted`.
void meter_template(std::optional<meter_state>& state, const events::event& e,
                    const events::template_event& te, std::int64_t at,
                    std::vector<closed_interval>& closed) {
  if (state && state->sandbox_id != te.template_id)
    return; // another meter's state: not this template's
  if (const auto* r = std::get_if<events::template_ready>(&te.change)) {
    if (state || te.scope != events::template_scope::tenant)
      return; // a template is ready once; a global one bills nobody
    meter_state s;
    s.sandbox_id = te.template_id;
    s.tenant = e.tenant;
    s.storage_bytes = static_cast<std::int64_t>(r->billable_bytes());
    s.storage = open_interval{e.sequence, at};
    state = std::move(s);
  } else if (std::holds_alternative<events::template_deleted>(te.change)) {
    if (!state || state->deleted)
      return;
    close_storage(*state, state->storage_bytes, e.sequence, at, closed);
    state->deleted = true;
  }
}

} // namespace

std::string meter_key(const events::event& e) {
  if (const auto* te = std::get_if<events::template_event>(&e.body))
    return te->template_id;
  if (e.sandbox_id == events::template_stream_key)
    return {};
  return e.sandbox_id;
}

std::string meter_event_id(const std::string& key, std::uint64_t seq) {
  const bool template_meter = key.rfind("tpl_", 0) == 0;
  return (template_meter ? std::string(events::template_stream_key) : key) + ":" +
         std::to_string(seq);
}

void meter_event(std::optional<meter_state>& state, const events::event& e,
                 std::vector<closed_interval>& closed) {
  using namespace events;
  std::int64_t at = metering_ms(to_ns(e.occurred_at));
  if (const auto* te = std::get_if<template_event>(&e.body)) {
    meter_template(state, e, *te, at, closed);
    return;
  }
  if (const auto* c = std::get_if<created>(&e.body)) {
    if (state)
      return; // a second `created` for one sandbox: the first one stands
    meter_state s;
    s.sandbox_id = e.sandbox_id;
    s.tenant = e.tenant;
    s.memory_bytes = static_cast<std::int64_t>(c->limits.memory_mib) << 20;
    s.storage_bytes = 0; // the layer is made empty
    if (e.tenant != events::k_pool_tenant)
      s.storage = open_interval{e.sequence, at};
    state = std::move(s);
    return;
  }
  if (!state || state->deleted)
    return;
  auto& s = *state;
  const auto& p = e.body;
  if (s.tenant == events::k_pool_tenant) {
    // In its pool: nothing is billed; the layer's readings are kept for the claim.
    if (std::holds_alternative<claim_requested>(p)) {
      s.tenant = e.tenant;
      s.compute = open_interval{e.sequence, at}; // a claimed sandbox runs
      s.storage = open_interval{e.sequence, at};
    } else if (auto bytes = layer_size(p)) {
      s.storage_bytes = static_cast<std::int64_t>(*bytes);
    } else if (std::holds_alternative<deleted>(p)) {
      s.deleted = true;
    }
    return;
  }
  if (std::holds_alternative<started>(p) || std::holds_alternative<resumed>(p)) {
    if (!s.compute)
      s.compute = open_interval{e.sequence, at};
  } else if (std::holds_alternative<pause_requested>(p) ||
             std::holds_alternative<delete_requested>(p) || std::holds_alternative<failed>(p)) {
    close_compute(s, e.sequence, at, closed);
  } else if (const auto* d = std::get_if<deleted>(&p)) {
    close_compute(s, e.sequence, at, closed);
    close_storage(s, static_cast<std::int64_t>(d->writable_layer_bytes), e.sequence, at, closed);
    s.deleted = true;
    return;
  }
  if (auto bytes = layer_size(p)) {
    const auto reading = static_cast<std::int64_t>(*bytes);
    close_storage(s, reading, e.sequence, at, closed);
    s.storage_bytes = reading;
    s.storage = open_interval{e.sequence, at};
  }
}

} // namespace sandboxd::projections
