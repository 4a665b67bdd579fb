#include "projections/billing_meter.hpp"

#include "projections/billing.hpp"
#include "projections/sandbox_row.hpp"

namespace sandboxd::projections {

const char* to_string(meter m) {
  return m == meter::compute ? "compute" : "storage";
}

namespace {

void close(meter_state& s, meter kind, std::uint64_t seq, std::int64_t at_ms,
           std::vector<closed_interval>& out) {
  auto& open = kind == meter::compute ? s.compute : s.storage;
  if (!open)
    return;
  std::int64_t bytes = kind == meter::compute ? s.memory_bytes : s.storage_bytes;
  if (bytes > 0 && at_ms > open->start_ms)
    out.push_back({s.sandbox_id, s.tenant, kind, open->seq, seq, open->start_ms, at_ms, bytes});
  open.reset();
}

std::optional<std::uint64_t> layer_size(const events::payload& p) {
  if (const auto* v = std::get_if<events::storage_sampled>(&p))
    return v->writable_layer_bytes;
  if (const auto* v = std::get_if<events::paused>(&p))
    return v->writable_layer_bytes;
  if (const auto* v = std::get_if<events::snapshot_taken>(&p))
    return v->writable_layer_bytes;
  return std::nullopt;
}

} // namespace

void meter_event(std::optional<meter_state>& state, const events::event& e,
                 std::vector<closed_interval>& closed) {
  using namespace events;
  std::int64_t at = metering_ms(to_ns(e.occurred_at));
  if (const auto* c = std::get_if<created>(&e.body)) {
    if (state)
      return; // a second `created` for one sandbox: the first one stands
    meter_state s;
    s.sandbox_id = e.sandbox_id;
    s.tenant = e.tenant;
    s.memory_bytes = static_cast<std::int64_t>(c->limits.memory_mib) << 20;
    state = std::move(s);
    return;
  }
  if (!state || state->deleted)
    return;
  auto& s = *state;
  const auto& p = e.body;
  if (std::holds_alternative<started>(p) || std::holds_alternative<resumed>(p)) {
    if (!s.compute)
      s.compute = open_interval{e.sequence, at};
  } else if (std::holds_alternative<pause_requested>(p) ||
             std::holds_alternative<delete_requested>(p) || std::holds_alternative<failed>(p)) {
    close(s, meter::compute, e.sequence, at, closed);
  } else if (std::holds_alternative<deleted>(p)) {
    close(s, meter::compute, e.sequence, at, closed);
    close(s, meter::storage, e.sequence, at, closed);
    s.deleted = true;
    return;
  }
  if (auto bytes = layer_size(p)) {
    close(s, meter::storage, e.sequence, at, closed);
    s.storage_bytes = static_cast<std::int64_t>(*bytes);
    s.storage = open_interval{e.sequence, at};
  }
}

} // namespace sandboxd::projections
