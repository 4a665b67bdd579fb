// lifecycle_stream — builds sandbox lifecycle events for the projection tests and the
// projection benchmark: one `sandbox_events` per sandbox, each call appending the next
// event with the next dense sequence number, event id "<sandbox>:<seq>", at a given time.
// Events with an `unknown` payload (a newer version's kind) become records as such a writer
// makes them (encode_record).
#pragma once

#include "events/event.hpp"
#include "events/event_log.hpp"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace sandboxd::test {

class sandbox_events {
public:
  sandbox_events(std::string sandbox_id, std::string tenant, std::int64_t t0_ns)
      : id_(std::move(sandbox_id)), tenant_(std::move(tenant)), now_ns_(t0_ns) {}

  // Moves this sandbox's clock forward.
  sandbox_events& after(std::chrono::nanoseconds d) {
    now_ns_ += d.count();
    return *this;
  }
  std::int64_t now_ns() const { return now_ns_; }
  const std::string& id() const { return id_; }

  sandbox_events& add(events::payload body, std::string principal = "alice") {
    events::event e;
    e.sequence = ++seq_;
    e.sandbox_id = id_;
    e.event_id = id_ + ":" + std::to_string(e.sequence);
    e.tenant = tenant_;
    e.principal = std::move(principal);
    e.occurred_at = events::time_point(events::nanoseconds(now_ns_));
    e.correlation_id = "req-" + std::to_string(e.sequence);
    e.body = std::move(body);
    events_.push_back(std::move(e));
    return *this;
  }

  sandbox_events& created(std::uint32_t memory_mib, std::vector<events::label> labels = {},
                          std::string template_name = "python-3.12") {
    events::created c;
    c.template_name = std::move(template_name);
    c.limits.memory_mib = memory_mib;
    c.limits.cpu_millicores = 1000;
    c.limits.pids = 256;
    c.limits.disk_mib = 10240;
    c.labels = std::move(labels);
    return add(c);
  }
  sandbox_events& started() { return add(events::started{}, "system"); }
  // A warm pool's create (docs/pools.md): the stream's tenant must be the pool tenant.
  sandbox_events& pool_created(std::uint32_t memory_mib, std::string pool) {
    events::created c;
    c.template_name = "python-3.12";
    c.limits = {memory_mib, 1000, 256, 10240};
    c.pool = std::move(pool);
    return add(c, "pool");
  }
  // A claim by `tenant`: the stream's events are that tenant's from here on.
  sandbox_events& claimed_by(std::string tenant, std::vector<events::label> labels = {}) {
    tenant_ = std::move(tenant);
    events::claim_requested c;
    c.labels = std::move(labels);
    add(c);
    return add(events::claimed{}, "system");
  }
  sandbox_events& sampled(std::uint64_t bytes) {
    return add(events::storage_sampled{bytes}, "system");
  }
  sandbox_events& exec(std::string cmd) {
    events::exec_started x;
    x.exec_id = "x" + std::to_string(seq_ + 1);
    x.argv = {"sh", "-c", std::move(cmd)};
    return add(x);
  }
  sandbox_events& pause(events::pause_mode mode, std::uint64_t layer_bytes) {
    add(events::pause_requested{mode, events::pause_reason::user});
    return add(events::paused{mode, layer_bytes}, "system");
  }
  sandbox_events& resume() {
    add(events::resume_requested{});
    return add(events::resumed{}, "system");
  }
  sandbox_events& rejected(events::command_kind cmd, events::errc code, std::string message) {
    return add(events::command_rejected{cmd, code, std::move(message)});
  }
  // `layer_bytes`: the layer as measured at the delete (0: not measured).
  sandbox_events& remove(std::uint64_t layer_bytes = 0) {
    add(events::delete_requested{events::delete_reason::user});
    return add(events::deleted{layer_bytes}, "system");
  }
  sandbox_events& fail(std::string reason) {
    return add(events::failed{events::runtime_step::running, std::move(reason)}, "system");
  }

  const std::vector<events::event>& events() const { return events_; }

private:
  std::string id_;
  std::string tenant_;
  std::int64_t now_ns_;
  std::uint64_t seq_ = 0;
  std::vector<events::event> events_;
};

// The record of `e`. An `unknown` payload (a kind of a newer version, which encode refuses) is
// written as a newer writer's record reads here: encoded as `started`, then with the payload
// union's discriminant set to the unknown ordinal. The discriminant is the 16 bits after the
// envelope's two 64-bit fields (sequence, occurredAtNs) in the root struct's data section,
// which follows the 8-byte segment table and the 8-byte root pointer; the record is decoded
// back and must give `e`.
inline std::string encode_record(const events::event& e) {
  const auto* u = std::get_if<events::unknown>(&e.body);
  if (!u)
    return events::encode(e);
  constexpr std::size_t discriminant_at = 8 + 8 + 16;
  auto stand_in = e;
  stand_in.body = events::started{};
  auto bytes = events::encode(stand_in);
  std::uint16_t started_ordinal = 0;
  std::memcpy(&started_ordinal, bytes.data() + discriminant_at, 2);
  if (started_ordinal != 1)
    throw std::logic_error("encode_record: the payload discriminant is not where the layout says");
  std::memcpy(bytes.data() + discriminant_at, &u->ordinal, 2);
  auto back = events::decode(bytes);
  if (!back.ok() || !(back.get() == e))
    throw std::logic_error(
      "encode_record: the record with an unknown payload does not decode back");
  return bytes;
}

inline std::vector<events::log_record> to_records(const std::vector<events::event>& evs) {
  std::vector<events::log_record> out;
  out.reserve(evs.size());
  for (const auto& e : evs)
    out.push_back({e.sandbox_id, encode_record(e)});
  return out;
}

// Appends and waits until durable; throws with the log's error otherwise.
inline void append_all(events::event_log& log, const std::vector<events::event>& evs,
                       std::size_t chunk = 2000) {
  for (std::size_t i = 0; i < evs.size(); i += chunk) {
    std::vector<events::event> part(evs.begin() + static_cast<std::ptrdiff_t>(i),
                                    evs.begin() +
                                      static_cast<std::ptrdiff_t>(std::min(evs.size(), i + chunk)));
    auto r = log.append(to_records(part)).get();
    if (!r.ok())
      throw std::runtime_error("append to " + log.describe() + " failed: " + r.failure->message);
  }
}

// A mixed stream: `sandboxes` sandboxes of `tenants` tenants, each created, started,
// sampled, running execs, paused and resumed (both modes), with a rejected exec, and every
// third one deleted, every seventh failed. Events of different sandboxes interleave.
inline std::vector<events::event> mixed_stream(int sandboxes, int tenants, std::int64_t t0_ns,
                                               int execs = 3) {
  using namespace std::chrono_literals;
  std::vector<sandbox_events> sbs;
  for (int i = 0; i < sandboxes; ++i) {
    sandbox_events s("sb-" + std::to_string(i), "tenant-" + std::to_string(i % tenants),
                     t0_ns + i * 1'000'000'007LL);
    s.created(static_cast<std::uint32_t>(512 << (i % 4)), {{"team", "t" + std::to_string(i % 5)}})
      .after(2s)
      .started()
      .sampled(std::uint64_t{1} << (20 + i % 10));
    for (int x = 0; x < execs; ++x)
      s.after(37min).exec("echo " + std::to_string(x));
    s.after(11min).pause(i % 2 ? events::pause_mode::memory : events::pause_mode::filesystem,
                         std::uint64_t{3} << (20 + i % 10));
    s.after(1h).rejected(events::command_kind::exec, events::errc::conflict,
                         "sandbox " + s.id() + " is paused; resume it before exec");
    s.after(5min).resume().after(50min).sampled(std::uint64_t{5} << (20 + i % 10));
    if (i % 7 == 6)
      s.after(3min).fail("runsc exited");
    if (i % 3 == 0)
      s.after(20min).remove();
    sbs.push_back(std::move(s));
  }
  // Round-robin interleaving keeps each sandbox's order.
  std::vector<events::event> out;
  std::vector<std::size_t> next(sbs.size(), 0);
  for (bool more = true; more;) {
    more = false;
    for (std::size_t i = 0; i < sbs.size(); ++i)
      if (next[i] < sbs[i].events().size()) {
        out.push_back(sbs[i].events()[next[i]++]);
        more = true;
      }
  }
  return out;
}

} // namespace sandboxd::test
