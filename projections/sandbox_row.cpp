#include "projections/sandbox_row.hpp"

#include "base/utf8.hpp"

#include <nlohmann/json.hpp>

namespace sandboxd::projections {

std::int64_t to_ns(events::time_point t) {
  return t.time_since_epoch().count();
}

namespace {

struct state_change {
  std::optional<std::string> state;
  std::optional<std::string> pause_mode;
  std::optional<std::uint64_t> writable_layer_bytes;
};

state_change change_of(const events::payload& p) {
  using namespace events;
  state_change c;
  std::visit(
    [&](const auto& v) {
      using T = std::decay_t<decltype(v)>;
      if constexpr (std::is_same_v<T, claim_requested>) {
        c.state = "creating"; // to its new tenant, the sandbox is being made
      } else if constexpr (std::is_same_v<T, started> || std::is_same_v<T, resumed> ||
                           std::is_same_v<T, claimed>) {
        c.state = "running";
        if constexpr (std::is_same_v<T, resumed>)
          c.pause_mode = "";
      } else if constexpr (std::is_same_v<T, pause_requested>) {
        c.state = "pausing";
        c.pause_mode = to_string(v.mode);
      } else if constexpr (std::is_same_v<T, paused>) {
        c.state = "paused";
        c.pause_mode = to_string(v.mode);
        c.writable_layer_bytes = v.writable_layer_bytes;
      } else if constexpr (std::is_same_v<T, resume_requested>) {
        c.state = "resuming";
      } else if constexpr (std::is_same_v<T, delete_requested>) {
        c.state = "deleting";
      } else if constexpr (std::is_same_v<T, deleted>) {
        c.state = "deleted";
      } else if constexpr (std::is_same_v<T, failed>) {
        c.state = "failed";
      } else if constexpr (std::is_same_v<T, storage_sampled>) {
        c.writable_layer_bytes = v.writable_layer_bytes;
      } else if constexpr (std::is_same_v<T, snapshot_taken>) {
        if (v.outcome == op_outcome::completed) // a failed one measured nothing
          c.writable_layer_bytes = v.writable_layer_bytes;
      }
    },
    p);
  return c;
}

template <typename T>
void set_if(std::optional<T>& target, const std::optional<T>& v) {
  if (v)
    target = v;
}

std::vector<events::label> text_labels(std::vector<events::label> labels) {
  for (auto& l : labels) { // what PostgreSQL takes (base/utf8.hpp)
    l.key = text_of(l.key);
    l.value = text_of(l.value);
  }
  return labels;
}

} // namespace

void fold(sandbox_patch& patch, const events::event& e) {
  patch.updated_at_ns = to_ns(e.occurred_at);
  patch.last_seq = e.sequence;
  if (const auto* c = std::get_if<events::created>(&e.body)) {
    sandbox_row row;
    row.id = e.sandbox_id;
    row.tenant = e.tenant;
    row.state = "creating";
    row.template_name = text_of(c->template_name); // what PostgreSQL takes (base/utf8.hpp)
    row.runtime = events::to_string(c->runtime);
    row.limits = c->limits;
    row.labels = text_labels(c->labels);
    row.created_at_ns = to_ns(e.occurred_at);
    row.updated_at_ns = row.created_at_ns;
    row.last_seq = e.sequence;
    patch.created = std::move(row);
    patch.state.reset();
    patch.pause_mode.reset();
    patch.writable_layer_bytes.reset();
    return;
  }
  const bool redacted = std::holds_alternative<events::redacted>(e.body);
  patch.redacted = patch.redacted || redacted;
  auto c = change_of(e.body);
  std::optional<row_claim> claim;
  if (const auto* x = std::get_if<events::claim_requested>(&e.body))
    claim = row_claim{e.tenant, text_labels(x->labels), to_ns(e.occurred_at)};
  if (patch.created) {
    auto& row = *patch.created;
    if (claim) {
      row.tenant = claim->tenant;
      row.labels = claim->labels;
      row.created_at_ns = claim->created_at_ns;
    }
    if (redacted)
      row.labels.clear();
    if (c.state)
      row.state = *c.state;
    if (c.pause_mode)
      row.pause_mode = *c.pause_mode;
    if (c.writable_layer_bytes)
      row.writable_layer_bytes = *c.writable_layer_bytes;
    row.updated_at_ns = patch.updated_at_ns;
    row.last_seq = patch.last_seq;
    return;
  }
  set_if(patch.state, c.state);
  set_if(patch.pause_mode, c.pause_mode);
  set_if(patch.writable_layer_bytes, c.writable_layer_bytes);
  set_if(patch.claim, claim);
}

std::optional<sandbox_row> apply_patch(std::optional<sandbox_row> row, const sandbox_patch& patch) {
  if (patch.created)
    return patch.created;
  if (!row)
    return std::nullopt;
  if (patch.claim) {
    row->tenant = patch.claim->tenant;
    row->labels = patch.claim->labels;
    row->created_at_ns = patch.claim->created_at_ns;
  }
  if (patch.state)
    row->state = *patch.state;
  if (patch.pause_mode)
    row->pause_mode = *patch.pause_mode;
  if (patch.writable_layer_bytes)
    row->writable_layer_bytes = *patch.writable_layer_bytes;
  if (patch.redacted)
    row->labels.clear();
  row->updated_at_ns = patch.updated_at_ns;
  row->last_seq = patch.last_seq;
  return row;
}

std::string limits_json(const events::sandbox_limits& l) {
  nlohmann::json j = {{"memory_mib", l.memory_mib},
                      {"cpu_millicores", l.cpu_millicores},
                      {"pids", l.pids},
                      {"disk_mib", l.disk_mib}};
  return j.dump();
}

std::string labels_json(const std::vector<events::label>& labels) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& l : labels)
    j[l.key] = l.value;
  return j.dump();
}

} // namespace sandboxd::projections
