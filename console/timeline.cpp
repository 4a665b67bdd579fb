#include "console/timeline.hpp"

#include <map>
#include <type_traits>

namespace sandboxd::console {
namespace {

std::int64_t ns_of(events::time_point t) {
  return t.time_since_epoch().count();
}

bool has_pause_mode(actors::sandbox_status s) {
  using st = actors::sandbox_status;
  return s == st::pausing || s == st::paused || s == st::resuming;
}

std::string exec_outcome(const events::exec_finished& f, bool& ok) {
  ok = false;
  switch (f.outcome) {
  case events::op_outcome::interrupted:
    return "interrupted";
  case events::op_outcome::failed:
    return "failed" + (f.failure ? ": " + to_string(f.failure->code) : std::string());
  case events::op_outcome::completed:
    break;
  }
  if (f.timed_out)
    return "timed out";
  if (f.signal != 0)
    return "signal " + std::to_string(f.signal);
  ok = f.exit_code == 0;
  return "exit " + std::to_string(f.exit_code);
}

std::string file_outcome(const events::file_op_finished& f, bool& ok) {
  ok = f.outcome == events::op_outcome::completed;
  switch (f.outcome) {
  case events::op_outcome::completed:
    return "completed";
  case events::op_outcome::interrupted:
    return "interrupted";
  case events::op_outcome::failed:
    break;
  }
  return "failed" + (f.failure ? ": " + to_string(f.failure->code) : std::string());
}

// Rows for spans sorted by start: each goes on the first row free at its start.
int stack(std::vector<span*>& lane) {
  std::vector<std::int64_t> row_end;
  for (auto* s : lane) {
    std::size_t r = 0;
    while (r < row_end.size() && row_end[r] > s->from_ns)
      ++r;
    if (r == row_end.size())
      row_end.push_back(0);
    // A span of no length still takes its instant: the next one at the same time stacks.
    row_end[r] = std::max(s->to_ns, s->from_ns + 1);
    s->row = static_cast<int>(r);
  }
  return static_cast<int>(row_end.size());
}

} // namespace

std::string lane_of(const events::payload& p) {
  return std::visit(
    [](const auto& v) -> std::string {
      using T = std::decay_t<decltype(v)>;
      using namespace events;
      if constexpr (std::is_same_v<T, exec_started> || std::is_same_v<T, exec_finished> ||
                    std::is_same_v<T, exec_kill_requested>)
        return "exec";
      else if constexpr (std::is_same_v<T, file_written> || std::is_same_v<T, file_read> ||
                         std::is_same_v<T, file_op_requested> ||
                         std::is_same_v<T, file_op_finished>)
        return "file";
      else if constexpr (std::is_same_v<T, command_rejected>)
        return "rejected";
      else if constexpr (std::is_same_v<T, snapshot_requested> ||
                         std::is_same_v<T, snapshot_taken> || std::is_same_v<T, snapshot_deleted>)
        return "file"; // a snapshot is of the sandbox's files
      else if constexpr (std::is_same_v<T, storage_sampled> || std::is_same_v<T, redacted> ||
                         std::is_same_v<T, unknown>)
        return "other";
      else
        return "lifecycle";
    },
    p);
}

timeline make_timeline(const std::vector<replay::replay_step>& steps) {
  timeline t;
  if (steps.empty())
    return t;
  const std::int64_t last_ns = ns_of(steps.back().event.occurred_at);
  std::map<std::string, std::size_t> open_execs, open_files; // id -> index in t.spans
  for (const auto& step : steps) {
    const auto& e = step.event;
    const std::int64_t at = ns_of(e.occurred_at);
    t.lanes.push_back(lane_of(e.body));

    const std::string status(actors::to_string(step.state.status));
    const std::string mode =
      has_pause_mode(step.state.status) ? events::to_string(step.state.pause_mode) : "";
    if (t.bands.empty() || t.bands.back().status != status || t.bands.back().pause_mode != mode) {
      if (!t.bands.empty()) {
        t.bands.back().to_ns = at;
        t.bands.back().to_seq = e.sequence;
        t.bands.back().open = false;
      }
      t.bands.push_back({status, mode, at, last_ns, e.sequence, 0, true});
    }

    if (const auto* s = std::get_if<events::exec_started>(&e.body)) {
      span x;
      x.lane = "exec";
      x.id = s->exec_id;
      for (const auto& a : s->argv)
        x.label += (x.label.empty() ? "" : " ") + a;
      x.from_ns = at;
      x.to_ns = last_ns;
      x.from_seq = e.sequence;
      x.open = true;
      x.outcome = "running";
      open_execs[s->exec_id] = t.spans.size();
      t.spans.push_back(std::move(x));
    } else if (const auto* f = std::get_if<events::exec_finished>(&e.body)) {
      auto it = open_execs.find(f->exec_id);
      if (it != open_execs.end()) {
        auto& x = t.spans[it->second];
        x.to_ns = at;
        x.to_seq = e.sequence;
        x.open = false;
        x.outcome = exec_outcome(*f, x.ok);
        open_execs.erase(it);
      }
    } else if (const auto* r = std::get_if<events::file_op_requested>(&e.body)) {
      span x;
      x.lane = "file";
      x.id = r->op_id;
      x.label = events::to_string(r->kind) + " " + r->path +
                (r->to_path.empty() ? std::string() : " -> " + r->to_path);
      x.from_ns = at;
      x.to_ns = last_ns;
      x.from_seq = e.sequence;
      x.open = true;
      x.outcome = "in flight";
      open_files[r->op_id] = t.spans.size();
      t.spans.push_back(std::move(x));
    } else if (const auto* d = std::get_if<events::file_op_finished>(&e.body)) {
      auto it = open_files.find(d->op_id);
      if (it != open_files.end()) {
        auto& x = t.spans[it->second];
        x.to_ns = at;
        x.to_seq = e.sequence;
        x.open = false;
        x.outcome = file_outcome(*d, x.ok);
        open_files.erase(it);
      }
    }
  }
  if (steps.back().state.status == actors::sandbox_status::deleted)
    t.bands.back().open = false;

  std::vector<span*> execs, files;
  for (auto& s : t.spans)
    (s.lane == "exec" ? execs : files).push_back(&s);
  t.exec_rows = stack(execs);
  t.file_rows = stack(files);
  return t;
}

} // namespace sandboxd::console
