#include "actors/recovery.hpp"

#include "actors/runtime_steps.hpp"
#include "actors/state_snapshot.hpp"
#include "base/snapshot_id.hpp"

#include <algorithm>
#include <chrono>
#include <future>
#include <optional>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <unordered_set>

namespace sandboxd::actors {
namespace {

// How often recovery tries to append the outcome of interrupted steps before it gives up.
constexpr int k_append_attempts = 5;

bool is_live(sandbox_status s) {
  return s != sandbox_status::absent && s != sandbox_status::deleted;
}

// The outcome `interrupted` of every exec and file change of `s` in flight: sandboxd
// stopped while the runtime ran it, so whether it took effect is unknown.
std::vector<events::event> interrupted_outcomes(sandbox_state s, events::time_point now) {
  std::vector<events::event> out;
  auto record = [&](command_body body) {
    auto d = decide(s, system_command(s, std::move(body)), now);
    if (!d.ok())
      throw std::logic_error("recovery: the state machine rejected an interrupted outcome of "
                             "sandbox " +
                             s.sandbox_id + ": " + d.failure().message);
    for (const auto& e : d.emitted()) {
      s = evolve(std::move(s), e);
      out.push_back(e);
    }
  };
  const auto stopped = events::make_error(
    events::errc::unavailable,
    "sandboxd stopped while the runtime ran it; whether it took effect is unknown");
  for (const auto& exec_id : std::vector<std::string>(s.execs_in_flight)) {
    cmd::exec_finished f;
    f.exec_id = exec_id;
    f.exit_code = -1;
    f.outcome = events::op_outcome::interrupted;
    f.failure = stopped;
    record(f);
  }
  for (const auto& op : std::vector<file_op_in_flight>(s.file_ops_in_flight)) {
    if (op.kind == events::file_op_kind::snapshot) {
      // The snapshot's subvolume, if the driver made one, was removed (reconcile below).
      events::snapshot_taken t;
      t.op_id = op.op_id;
      t.outcome = events::op_outcome::interrupted;
      t.failure = stopped;
      record(cmd::snapshot{{}, {}, {}, t});
      continue;
    }
    events::file_op_finished f;
    f.op_id = op.op_id;
    f.kind = op.kind;
    f.outcome = events::op_outcome::interrupted;
    f.failure = stopped;
    // Any change command records an outcome (the kind travels in the event).
    record(cmd::write_file{{}, f});
  }
  return out;
}

// What the node's runtimes hold: a sandbox's status by its id, per driver.
using runtime_listing =
  std::unordered_map<const runtime::driver*,
                     std::unordered_map<std::string, runtime::sandbox_status>>;

// Why the runtime's `found` status of a sandbox that is running or paused in the log (`s`,
// no step in flight) disagrees with it; empty when it agrees.
std::optional<std::string> disagreement(const sandbox_state& s,
                                        std::optional<runtime::sandbox_status> found) {
  const bool memory = s.pause_mode == events::pause_mode::memory;
  const auto expected = s.status == sandbox_status::running ? runtime::sandbox_status::running
                        : memory                            ? runtime::sandbox_status::paused_memory
                                 : runtime::sandbox_status::paused_filesystem;
  if (found == expected)
    return std::nullopt;
  const std::string logged = s.status == sandbox_status::running ? "running"
                             : memory                            ? "paused (memory)"
                                                                 : "paused (filesystem)";
  const std::string what = found
                             ? std::string("its runtime sandbox ") + runtime::to_string(*found)
                             : std::string("no runtime sandbox (its container and layer are gone)");
  return "at start-up recovery found " + what + " where the log says " + logged +
         "; its processes and files are not as recorded: delete it";
}

// Carries out the interrupted steps of one partition and appends their outcome; a running or
// paused sandbox the runtime disagrees with gets a `failed` event saying what was found.
void reconcile(events::event_log& log, const recovery_drivers& drivers,
               const runtime_listing& listed, partition_view& view, events::time_point now,
               recovery_report& report, std::unordered_set<std::string>& reconciled) {
  std::vector<events::event> emitted;
  for (auto& [id, r] : view.sandboxes) {
    // The view's state follows the log (replay_tail below); `state` is it plus what this
    // recovery appends.
    sandbox_state state = r.state;
    if (!state.execs_in_flight.empty() || !state.file_ops_in_flight.empty()) {
      // A snapshot the crash interrupted is not taken, as its outcome says: a subvolume the
      // driver made before the crash goes (its op id names it, control_plane::snapshot).
      if (auto* driver = drivers.for_kind(state.spec.runtime))
        for (const auto& op : state.file_ops_in_flight)
          if (op.kind == events::file_op_kind::snapshot && op.op_id.rfind("op-", 0) == 0 &&
              is_snapshot_id(std::string_view(op.op_id).substr(3)))
            driver->remove_snapshot(op.op_id.substr(3));
      auto outcomes = interrupted_outcomes(state, now);
      report.interrupted.push_back(id);
      reconciled.insert(id);
      for (const auto& e : outcomes)
        state = evolve(std::move(state), e);
      emitted.insert(emitted.end(), outcomes.begin(), outcomes.end());
    }
    auto step = step_in_flight(state);
    if (!step) {
      auto* driver = drivers.for_kind(state.spec.runtime);
      auto held = driver ? listed.find(driver) : listed.end();
      if (held == listed.end() ||
          (state.status != sandbox_status::running && state.status != sandbox_status::paused))
        continue; // no driver of its kind here: nothing to compare with
      auto it = held->second.find(id);
      auto why = disagreement(state, it == held->second.end()
                                       ? std::nullopt
                                       : std::optional<runtime::sandbox_status>(it->second));
      if (!why)
        continue;
      auto d = decide(state, system_command(state, cmd::runtime_failed{*why, true}), now);
      if (!d.ok())
        throw std::logic_error("recovery: the state machine rejected what it found of sandbox " +
                               id + ": " + d.failure().message);
      for (const auto& e : d.emitted())
        emitted.push_back(e);
      report.disagreed.push_back(id);
      reconciled.insert(id);
      continue;
    }
    auto* driver = drivers.for_kind(state.spec.runtime);
    auto result = driver ? run_step(*driver, state, *step)
                         : command_body{cmd::runtime_failed{
                             "runtime " + events::to_string(state.spec.runtime) +
                             " is not on this node; start sandboxd with it to finish the step"}};
    const bool ok = !std::holds_alternative<cmd::runtime_failed>(result);
    auto d = decide(state, system_command(state, std::move(result)), now);
    if (!d.ok())
      throw std::logic_error("recovery: the state machine rejected the outcome of step " +
                             events::to_string(*step) + " of sandbox " + id + ": " +
                             d.failure().message);
    for (const auto& e : d.emitted())
      emitted.push_back(e);
    (ok ? report.finished : report.failed).push_back(id);
    reconciled.insert(id);
  }
  if (emitted.empty())
    return;
  std::vector<events::log_record> batch;
  batch.reserve(emitted.size());
  for (const auto& e : emitted)
    batch.push_back({e.sandbox_id, events::encode(e)});
  // A failed append is retried with the identical records: if an earlier try landed after
  // all (maybe stored), the later copy is a duplicate that every reader drops.
  auto delay = std::chrono::milliseconds(50);
  for (int attempt = 1;; ++attempt) {
    auto result = log.append(batch).get();
    if (result.ok())
      break;
    if (attempt == k_append_attempts)
      throw std::runtime_error(
        "recovery cannot append the outcome of interrupted steps to " + log.describe() + " (" +
        std::to_string(attempt) + " tries): " + result.failure->message +
        (result.maybe_stored ? "; the last try's outcome is unknown: the next start-up reads it "
                               "back from the log"
                             : ""));
    std::this_thread::sleep_for(delay);
    delay *= 2;
  }
  // The view follows the log, not what was meant to be appended: the first copy of each
  // event counts, exactly as for every later replay (and for a live actor).
  replay_tail(log, view);
}

} // namespace

std::string idempotency_key(const std::string& tenant, const std::string& client_request_id) {
  std::string k = tenant;
  k.push_back('\0');
  k += client_request_id;
  return k;
}

runtime::driver* recovery_drivers::for_kind(events::runtime_kind kind) const {
  if (by_kind.empty())
    return fallback;
  auto it = by_kind.find(kind);
  return it == by_kind.end() ? nullptr : it->second;
}

std::vector<runtime::driver*> recovery_drivers::all() const {
  std::vector<runtime::driver*> out;
  for (const auto& [kind, d] : by_kind)
    if (std::find(out.begin(), out.end(), d) == out.end())
      out.push_back(d);
  if (out.empty() && fallback)
    out.push_back(fallback);
  return out;
}

recovery_outcome recover(events::event_log& log, runtime::driver& driver,
                         const std::string& snapshot_dir, events::time_point now) {
  return recover(log, recovery_drivers{{}, &driver}, snapshot_dir, now);
}

recovery_outcome recover(events::event_log& log, const recovery_drivers& drivers,
                         const std::string& snapshot_dir, events::time_point now) {
  const auto started = std::chrono::steady_clock::now();
  recovery_outcome out;
  // Listing the runtimes and replaying the partitions are independent: all run at once.
  double list_seconds = 0;
  using listed_t =
    std::vector<std::pair<runtime::driver*, runtime::outcome<std::vector<runtime::sandbox_info>>>>;
  auto listing = std::async(std::launch::async, [&drivers, &list_seconds] {
    const auto began = std::chrono::steady_clock::now();
    listed_t listed;
    for (auto* d : drivers.all())
      listed.emplace_back(d, d->list());
    list_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    return listed;
  });
  const auto partitions = log.partitions();
  std::vector<partition_view> views(static_cast<std::size_t>(partitions));
  {
    const auto workers = static_cast<std::int32_t>(std::clamp<unsigned>(
      std::thread::hardware_concurrency(), 1u, static_cast<unsigned>(partitions)));
    std::vector<std::future<void>> running;
    for (std::int32_t w = 0; w < workers; ++w)
      running.push_back(std::async(std::launch::async, [&, w] {
        for (std::int32_t p = w; p < partitions; p += workers)
          views[static_cast<std::size_t>(p)] = recover_partition(log, snapshot_dir, p);
      }));
    for (auto& f : running)
      f.get(); // rethrows a fault of any partition
  }
  out.report.replay_seconds =
    std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  auto listings = listing.get();
  out.report.runtime_list_seconds = list_seconds;
  runtime_listing listed;
  for (auto& [driver, found] : listings) {
    if (!found)
      throw std::runtime_error("recovery cannot list the " + std::string(driver->name()) +
                               " runtime's sandboxes: " + found.err().message);
    auto& by_id = listed[driver];
    for (const auto& info : found.value())
      by_id.emplace(info.id, info.status);
  }
  std::unordered_set<std::string> owned, reconciled;
  for (auto& view : views) {
    out.report.from_snapshot += view.from_snapshot;
    out.report.events_replayed += view.events_replayed;
    reconcile(log, drivers, listed, view, now, out.report, reconciled);
    out.sandboxes.reserve(out.sandboxes.size() + view.sandboxes.size());
    for (auto& [id, r] : view.sandboxes) {
      recovered_entry e;
      e.sandbox_id = id;
      e.status = r.state.status;
      e.offsets = std::move(r.offsets);
      e.due = next_deadlines(r.state);
      e.template_id = r.state.spec.content.id;
      if (unclaimed_pool_sandbox(r.state))
        e.pool = r.state.spec.pool;
      if (!r.state.spec.client_request_id.empty())
        e.idempotency_key = idempotency_key(r.state.tenant, r.state.spec.client_request_id);
      if (is_live(e.status))
        owned.insert(id);
      out.sandboxes.push_back(std::move(e));
    }
    view.sandboxes.clear();
  }
  for (auto& [driver, found] : listings) {
    for (const auto& info : found.value()) {
      // A sandbox recovery itself just carried through a step is accounted for already.
      if (owned.count(info.id) || reconciled.count(info.id))
        continue;
      auto removed = driver->remove(info.id);
      if (!removed && removed.code() != runtime::errc::not_found)
        throw std::runtime_error("recovery cannot remove orphaned runtime sandbox " + info.id +
                                 ": " + removed.err().message);
      out.report.orphans_removed.push_back(info.id);
    }
  }
  out.report.sandboxes = out.sandboxes.size();
  out.report.seconds =
    std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return out;
}

} // namespace sandboxd::actors
