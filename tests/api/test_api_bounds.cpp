// What a misbehaving or curious client cannot do to the daemon: grow its memory by not
// reading a stream, or tell another tenant's sandbox from a missing one by the time the
// answer takes.
#define BOOST_TEST_MODULE api_bounds
#include <boost/test/unit_test.hpp>

#include "api/rpc_error.hpp"
#include "schemas/api.capnp.h"
#include "tests/api/api_world.hpp"

#include <capnp/ez-rpc.h>
#include <kj/async-io.h>
#include <kj/timer.h>

#include <algorithm>
#include <fstream>
#include <future>

using namespace sandboxd;
using namespace sandboxd::test;
using namespace std::chrono_literals;

namespace {

// A sink that takes the first event and then never acknowledges another: a client that has
// stopped reading (Cap'n Proto's flow control sees exactly this).
class stuck_sink final : public rpc::EventSink::Server {
public:
  std::size_t received = 0;
  kj::Promise<void> event(EventContext) override {
    ++received;
    return kj::NEVER_DONE;
  }
  kj::Promise<void> end(EndContext) override { return kj::READY_NOW; }
};

// Anonymous resident memory of this process (heap, not the file log's mapped segments).
std::size_t rss_anon_bytes() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    std::size_t kb = 0;
    if (key == "RssAnon:" && in >> kb)
      return kb * 1024;
    std::string rest;
    std::getline(in, rest);
  }
  return 0;
}

events::event flood_event(std::size_t i, std::size_t label_bytes) {
  events::event e;
  e.sandbox_id = "sb-flood" + std::to_string(i);
  e.event_id = e.sandbox_id + ":1";
  e.sequence = 1;
  e.tenant = "flood";
  e.principal = "test";
  events::created c;
  c.template_name = "base";
  c.limits = {64, 100, 16, 0};
  c.labels = {{"payload", std::string(label_bytes, 'x')}};
  e.body = std::move(c);
  return e;
}

double median_ms(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

BOOST_AUTO_TEST_SUITE(api_bounds)

BOOST_AUTO_TEST_CASE(a_client_that_stops_reading_a_tail_does_not_grow_the_daemon) {
  api_world w(without_read_models());
  capnp::EzRpcClient ez(w.address);
  auto& ws = ez.getWaitScope();
  auto auth = ez.getMain<rpc::Gateway>().authenticateRequest();
  auth.setToken(k_token_admin);
  auto admin = auth.send().getSession().adminRequest().send().getAdmin();
  auto sink = kj::heap<stuck_sink>();
  auto& stuck = *sink;
  auto tail = admin.tailRequest();
  tail.setFollow(true);
  tail.setSink(kj::mv(sink));
  auto handle = tail.send().wait(ws).getHandle();

  constexpr std::size_t k_events = 20000, k_label = 4096; // about 80 MiB of events
  const auto before = rss_anon_bytes();
  auto appended = std::async(std::launch::async, [&] {
    for (std::size_t i = 0; i < k_events; i += 500) {
      std::vector<events::log_record> batch;
      for (std::size_t j = i; j < i + 500; ++j) {
        auto e = flood_event(j, k_label);
        batch.push_back({e.sandbox_id, events::encode(e)});
      }
      auto r = w.log.append(std::move(batch)).get();
      if (!r.ok())
        return false;
    }
    return true;
  });
  // Keep this client's loop turning (it answers nothing, but stays connected) while the log
  // grows, and a while after.
  auto& timer = ez.getIoProvider().getTimer();
  while (appended.wait_for(0s) != std::future_status::ready)
    timer.afterDelay(20 * kj::MILLISECONDS).wait(ws);
  BOOST_REQUIRE(appended.get());
  timer.afterDelay(500 * kj::MILLISECONDS).wait(ws);

  const auto stats = w.server->stats();
  const auto growth = rss_anon_bytes() - std::min(before, rss_anon_bytes());
  BOOST_TEST_MESSAGE("events sent to the stuck sink "
                     << stats.stream_events_sent << " of " << k_events << ", received "
                     << stuck.received << ", queued bytes " << stats.outgoing_queue_bytes
                     << ", anonymous RSS growth " << growth);
  BOOST_TEST(stats.streams == 1u);
  // One flow-control window (64 KiB-ish, in 4 KiB events) and one read batch at most.
  BOOST_TEST(stats.stream_events_sent < 600u);
  BOOST_TEST(stats.outgoing_queue_bytes < (4u << 20));
  BOOST_TEST(growth < (48u << 20)); // the log received ~80 MiB meanwhile
  (void)handle;
}

BOOST_AUTO_TEST_CASE(a_client_that_stops_reading_its_socket_does_not_grow_the_daemon) {
  // The client's thread stops turning its event loop right after the tail starts: it reads
  // nothing more from the socket and acknowledges nothing.
  api_world w(without_read_models());
  std::promise<void> tailing;
  std::promise<void> release;
  auto frozen = std::async(std::launch::async, [&] {
    capnp::EzRpcClient ez(w.address);
    auto& ws = ez.getWaitScope();
    auto auth = ez.getMain<rpc::Gateway>().authenticateRequest();
    auth.setToken(k_token_admin);
    auto admin = auth.send().getSession().adminRequest().send().getAdmin();
    auto tail = admin.tailRequest();
    tail.setFollow(true);
    tail.setSink(kj::heap<stuck_sink>());
    auto handle = tail.send().wait(ws).getHandle();
    tailing.set_value();
    release.get_future().wait(); // frozen: no loop turns, no reads
  });
  tailing.get_future().wait();
  constexpr std::size_t k_events = 10000, k_label = 4096;
  const auto before = rss_anon_bytes();
  for (std::size_t i = 0; i < k_events; i += 500) {
    std::vector<events::log_record> batch;
    for (std::size_t j = i; j < i + 500; ++j) {
      auto e = flood_event(j, k_label);
      batch.push_back({e.sandbox_id, events::encode(e)});
    }
    BOOST_REQUIRE(w.log.append(std::move(batch)).get().ok());
  }
  std::this_thread::sleep_for(500ms);
  const auto stats = w.server->stats();
  const auto after = rss_anon_bytes();
  const auto growth = after > before ? after - before : 0;
  BOOST_TEST_MESSAGE("frozen client: events sent "
                     << stats.stream_events_sent << " of " << k_events << ", queued bytes "
                     << stats.outgoing_queue_bytes << ", anonymous RSS growth " << growth);
  BOOST_TEST(stats.stream_events_sent < 600u);
  BOOST_TEST(stats.outgoing_queue_bytes < (4u << 20));
  BOOST_TEST(growth < (48u << 20)); // the log received ~40 MiB meanwhile
  // Other clients are served meanwhile.
  auto other = w.connect(k_token_b);
  BOOST_TEST(other.create({}).ok());
  release.set_value();
  frozen.get();
}

BOOST_AUTO_TEST_CASE(another_tenants_sandbox_takes_as_long_as_a_missing_one) {
  // Tenant b's sandboxes have long histories and are paused and passivated: asking for one
  // makes its actor be rebuilt from its 400 events in the log, which a missing id never
  // costs. The NOT_FOUND floor hides the difference.
  world_options o = without_read_models();
  o.tune_plane = [](actors::control_plane_options& p) { p.passivate_after = 100ms; };
  api_world w(o);
  constexpr std::size_t k_samples = 15;
  std::vector<std::string> theirs;
  {
    auto b = w.connect(k_token_b);
    for (std::size_t i = 0; i < k_samples; ++i) {
      auto s = b.create({});
      BOOST_REQUIRE(s.ok());
      api::timeout_change t;
      for (int n = 0; n < 400; ++n) {
        t.idle_timeout = std::chrono::minutes(10 + n);
        BOOST_REQUIRE(b.set_timeouts(s->id, t).ok());
      }
      BOOST_REQUIRE(b.pause(s->id).ok());
      theirs.push_back(s->id);
    }
  }
  BOOST_REQUIRE(eventually([&] { return w.plane->stats().dormant >= k_samples; }, 20s));
  auto a = w.connect(k_token_a);
  std::vector<double> foreign, missing;
  for (std::size_t i = 0; i < k_samples; ++i) {
    for (int k = 0; k < 2; ++k) {
      const std::string id =
        k == 0 ? theirs[i] : "sb-" + std::string(9, '0') + std::to_string(100 + i);
      const auto t0 = std::chrono::steady_clock::now();
      auto r = a.get(id);
      const auto ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      BOOST_REQUIRE(!r.ok());
      BOOST_REQUIRE(api::to_string(r.code()) == "not_found");
      (k == 0 ? foreign : missing).push_back(ms);
    }
  }
  const auto f = median_ms(foreign), m = median_ms(missing);
  BOOST_TEST_MESSAGE("median NOT_FOUND: another tenant's passivated sandbox "
                     << f << " ms, a missing id " << m << " ms");
  BOOST_TEST(f / m < 1.5);
  BOOST_TEST(m / f < 1.5);
}

BOOST_AUTO_TEST_SUITE_END()
