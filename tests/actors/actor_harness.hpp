// actor_harness.hpp — what the actor-system tests share: a clock driven by hand, a log
// that fails appends on demand (faulty_log.hpp), a driver that records its calls (and
// whether two lifecycle calls for one sandbox ever overlapped), command builders, and the
// log's view of one sandbox.
#pragma once

#include "actors/control_plane.hpp"
#include "actors/state_snapshot.hpp"
#include "events/file_log.hpp"
#include "runtime/hollow_driver.hpp"
#include "tests/actors/faulty_log.hpp"

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <ostream>

// Printers for Boost.Test's messages (found by argument-dependent lookup).
namespace sandboxd::actors {
inline std::ostream& operator<<(std::ostream& o, sandbox_status s) {
  return o << to_string(s);
}
} // namespace sandboxd::actors
namespace sandboxd::runtime {
inline std::ostream& operator<<(std::ostream& o, sandbox_status s) {
  return o << to_string(s);
}
} // namespace sandboxd::runtime
namespace sandboxd::events {
inline std::ostream& operator<<(std::ostream& o, runtime_step s) {
  return o << to_string(s);
}
} // namespace sandboxd::events

namespace sandboxd::test {

using namespace std::chrono_literals;
namespace ev = sandboxd::events;
namespace ac = sandboxd::actors;
namespace runtime = sandboxd::runtime;

class manual_clock {
public:
  ev::time_point now() const { return ev::time_point(ev::nanoseconds(ns_.load())); }
  void advance(ev::nanoseconds d) { ns_ += d.count(); }
  ac::clock_fn fn() {
    return [this] { return now(); };
  }

private:
  std::atomic<std::int64_t> ns_{std::int64_t{1'800'000'000} * 1'000'000'000};
};

// Forwards to a real driver, counting lifecycle calls and noticing overlapping ones for
// one sandbox. `fail_pause` makes pause fail.
class recording_driver final : public runtime::driver {
public:
  explicit recording_driver(runtime::driver& inner) : inner_(inner) {}
  std::atomic<int> lifecycle_calls{0};
  std::atomic<bool> overlapped{false};
  std::atomic<bool> fail_pause{false};
  std::atomic<int> slow_ms{0}; // each lifecycle call sleeps this long, to widen races

  std::string_view name() const override { return inner_.name(); }
  bool never_blocks() const override { return inner_.never_blocks(); }
  runtime::outcome<runtime::sandbox_info> create(const runtime::create_request& r) override {
    guard g(*this, r.id);
    return inner_.create(r);
  }
  runtime::outcome<void> start(const std::string& id) override {
    guard g(*this, id);
    return inner_.start(id);
  }
  runtime::outcome<runtime::exec_result> exec(const std::string& id,
                                              const runtime::exec_request& r) override {
    return inner_.exec(id, r);
  }
  runtime::outcome<void> pause(const std::string& id, runtime::pause_mode m) override {
    guard g(*this, id);
    if (fail_pause)
      return runtime::make_error(runtime::errc::internal, "injected pause failure");
    return inner_.pause(id, m);
  }
  runtime::outcome<void> resume(const std::string& id) override {
    guard g(*this, id);
    return inner_.resume(id);
  }
  runtime::outcome<void> remove(const std::string& id) override {
    guard g(*this, id);
    return inner_.remove(id);
  }
  runtime::outcome<void>
  set_env(const std::string& id,
          const std::vector<std::pair<std::string, std::string>>& env) override {
    guard g(*this, id);
    return inner_.set_env(id, env);
  }
  runtime::outcome<std::string> read_file(const std::string& id, const std::string& p) override {
    return inner_.read_file(id, p);
  }
  runtime::outcome<void> write_file(const std::string& id, const std::string& p, std::string_view c,
                                    std::uint32_t m) override {
    return inner_.write_file(id, p, c, m);
  }
  runtime::outcome<runtime::dir_listing> list_dir(const std::string& id,
                                                  const std::string& p) override {
    return inner_.list_dir(id, p);
  }
  runtime::outcome<runtime::file_info> stat(const std::string& id, const std::string& p) override {
    return inner_.stat(id, p);
  }
  runtime::outcome<void> signal_exec(const std::string& id, const std::string& e,
                                     int sig) override {
    return inner_.signal_exec(id, e, sig);
  }
  runtime::outcome<void> make_dir(const std::string& id, const std::string& p, bool parents,
                                  std::uint32_t m) override {
    return inner_.make_dir(id, p, parents, m);
  }
  runtime::outcome<void> remove_path(const std::string& id, const std::string& p,
                                     bool recursive) override {
    return inner_.remove_path(id, p, recursive);
  }
  runtime::outcome<void> rename_path(const std::string& id, const std::string& from,
                                     const std::string& to) override {
    return inner_.rename_path(id, from, to);
  }
  runtime::outcome<runtime::usage_info> usage(const std::string& id) override {
    return inner_.usage(id);
  }
  runtime::outcome<runtime::sandbox_info> inspect(const std::string& id) override {
    return inner_.inspect(id);
  }
  runtime::outcome<std::vector<runtime::sandbox_info>> list() override { return inner_.list(); }

private:
  struct guard {
    recording_driver& d;
    std::string id;
    guard(recording_driver& drv, const std::string& i) : d(drv), id(i) {
      ++d.lifecycle_calls;
      {
        std::lock_guard l(d.mu_);
        if (d.busy_.count(id))
          d.overlapped = true;
        d.busy_.insert(id);
      }
      if (int ms = d.slow_ms.load())
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    }
    ~guard() {
      std::lock_guard l(d.mu_);
      d.busy_.erase(id);
    }
  };
  runtime::driver& inner_;
  std::mutex mu_;
  std::multiset<std::string> busy_;
};

inline ev::created spec(std::string client_request_id = {}) {
  ev::created s;
  s.template_name = "base";
  s.limits.memory_mib = 256;
  s.limits.cpu_millicores = 500;
  s.runtime = ev::runtime_kind::hollow;
  s.client_request_id = std::move(client_request_id);
  return s;
}

// spec() with an idle timeout and what happens when it passes.
inline ev::created idle_spec(ev::nanoseconds idle, ev::idle_action on_idle) {
  auto s = spec();
  s.timeouts.idle_timeout = idle;
  s.timeouts.on_idle = on_idle;
  return s;
}

inline ac::command user(ac::command_body body, std::string tenant = "acme") {
  ac::command c;
  c.tenant = std::move(tenant);
  c.principal = "alice";
  c.correlation_id = "test";
  c.body = std::move(body);
  return c;
}

// A sandbox's history as every reader sees it: the first record of each sequence number.
// `problem` names what no reader may ever find: a gap, an event that does not decode, or a
// later copy of a sequence number that differs from the first (a sequence reused for another
// event — an acknowledged command dropped as a "duplicate").
struct sandbox_history {
  std::vector<ev::event> events; // first copies, sequences 1..n
  std::vector<std::int64_t> offsets;
  std::size_t duplicates = 0; // later copies, each equal to its first
  std::string problem;
};

// Adds the record at `offset` (of h's sandbox) to `h`.
inline void add_record(sandbox_history& h, std::int64_t offset, const std::string& value) {
  auto d = ev::decode(value);
  const std::string where = "offset " + std::to_string(offset) + ": ";
  if (!d.ok()) {
    h.problem += where + "does not decode; ";
    return;
  }
  auto& e = d.get();
  if (e.sequence == h.events.size() + 1) {
    h.events.push_back(std::move(e));
    h.offsets.push_back(offset);
  } else if (e.sequence >= 1 && e.sequence <= h.events.size()) {
    ++h.duplicates;
    if (!(e == h.events[e.sequence - 1]))
      h.problem += where + "sequence " + std::to_string(e.sequence) + " holds " +
                   std::string(ev::type_name(e.body)) + " after " +
                   std::string(ev::type_name(h.events[e.sequence - 1].body)) + "; ";
  } else {
    h.problem += where + "sequence " + std::to_string(e.sequence) + " after " +
                 std::to_string(h.events.size()) + "; ";
  }
}

// Reads `partition` whole, handing each record to `fn`.
template <class Fn>
void for_each_record(ev::event_log& log, std::int32_t partition, Fn fn) {
  std::int64_t at = 0;
  for (;;) {
    auto rr = log.read(partition, at, 4096);
    if (rr.records.empty())
      return;
    for (auto& r : rr.records) {
      at = r.offset + 1;
      fn(r);
    }
  }
}

// Every event of `sandbox_id` in the log, in offset order (copies included).
inline std::vector<ev::event> events_of(ev::event_log& log, const std::string& sandbox_id) {
  std::vector<ev::event> out;
  for_each_record(log, log.partition_for(sandbox_id), [&](const ev::stored_record& r) {
    if (r.key != sandbox_id)
      return;
    auto d = ev::decode(r.value);
    if (d.ok())
      out.push_back(std::move(d.get()));
  });
  return out;
}

inline sandbox_history history_of(ev::event_log& log, const std::string& sandbox_id) {
  sandbox_history h;
  for_each_record(log, log.partition_for(sandbox_id), [&](const ev::stored_record& r) {
    if (r.key == sandbox_id)
      add_record(h, r.offset, r.value);
  });
  return h;
}

// The history of every sandbox in the log, in one pass over each partition.
inline std::map<std::string, sandbox_history> histories_of(ev::event_log& log) {
  std::map<std::string, sandbox_history> out;
  for (std::int32_t p = 0; p < log.partitions(); ++p)
    for_each_record(log, p,
                    [&](const ev::stored_record& r) { add_record(out[r.key], r.offset, r.value); });
  return out;
}

inline std::vector<std::string> type_names(const std::vector<ev::event>& evs) {
  std::vector<std::string> out;
  for (const auto& e : evs)
    out.emplace_back(ev::type_name(e.body));
  return out;
}

// Waits (up to `limit` of real time) until `pred` holds; returns whether it did.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = 20s) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (pred())
      return true;
    std::this_thread::sleep_for(5ms);
  }
  return pred();
}

} // namespace sandboxd::test
