// The RPC API end to end: a sandboxd process on a fresh data directory (crun sandboxes, and
// runsc where it runs; the embedded PostgreSQL; the file log, or the real Kafka broker in the
// _kafka build of this file) driven by the C++ client library:
//   - the persistence recipe over RPC: markers in /workspace, /usr/local/share and /etc, a
//     filesystem pause, offline reads and a write while paused, resume, one process sees all;
//   - a memory pause answers CONFLICT to a write and an exec;
//   - exec output reaches the client's sink while the process still runs;
//   - a 64 MiB file written in chunks and read back, checked by SHA-256;
//   - tenancy: every Session and Sandbox call with another tenant's sandbox id answers the
//     NOT_FOUND a missing id gets; a capability outlives nothing it was opened for; admin
//     calls without the admin scope are PERMISSION_DENIED; quotas answer RESOURCE_EXHAUSTED;
//   - a client that stops reading a streamed exec does not grow the daemon's memory;
//   - the Prometheus endpoint's figures move as calls are made.
// One daemon for the binary; each case makes the sandboxes it uses.
#define BOOST_TEST_MODULE api_e2e
#include "tests/e2e/api_e2e_support.hpp"
#include "tests/e2e/metrics_scrape.hpp"

#include "api/rpc_error.hpp"
#include "schemas/api.capnp.h"

#include <capnp/ez-rpc.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <random>
#include <regex>
#include <thread>

using namespace sandboxd;
using namespace sandboxd::test;
using sandboxd::errc;

namespace {

constexpr int k_quota_sandboxes = 3;
constexpr int k_quota_memory_mib = 2048;
// Three sandboxes without --disk: each counts the runtime's 10 GiB layer.
constexpr int k_quota_disk_mib = 3 * 10240;

struct shared_daemon {
  temp_dir config{"e2e-config"};
  int metrics_port = free_tcp_port();
  daemon_process d{[&] {
    auto flags = log_flags();
    for (auto f : runtime_flags())
      flags.push_back(f);
    for (std::string f :
         {std::string("--tokens-file"), write_tokens_file(config.path()),
          std::string("--quota-sandboxes"), std::to_string(k_quota_sandboxes),
          std::string("--quota-memory-mib"), std::to_string(k_quota_memory_mib),
          std::string("--quota-disk-mib"), std::to_string(k_quota_disk_mib),
          std::string("--max-disk-mib"), std::string("0"), std::string("--metrics-addr"),
          "127.0.0.1:" + std::to_string(metrics_port)})
      flags.push_back(f);
    return flags;
  }()};
};

shared_daemon& shared() {
  static shared_daemon s;
  return s;
}
daemon_process& daemon() {
  return shared().d;
}

boost::test_tools::assertion_result runsc_can_run(utf::test_unit_id id) {
  auto r = crun_can_run(id);
  if (r && !runsc_runs()) {
    r = false;
    r.message() << "runsc cannot run sandboxes here: "
                << *node::runtime_unavailable(events::runtime_kind::runsc);
  }
  return r;
}

// The persistence recipe on `runtime`.
void persistence_recipe(const std::string& runtime) {
  auto c = connect(daemon(), k_token_acme);
  const auto id = must(c.create(crun_sandbox(128, runtime)), "create on " + runtime).id;
  must_shell(c, id,
             "mkdir -p /workspace /usr/local/share/e2e && echo in-workspace > /workspace/m.txt "
             "&& echo in-share > /usr/local/share/e2e/m.txt && echo in-etc > /etc/e2e-marker");
  // A process that the filesystem pause must end.
  const auto sleeper = must(c.start(id, {.argv = {"sleep", "600"}}), "start sleep 600").exec_id;
  auto paused = must(c.pause(id, events::pause_mode::filesystem), "pause filesystem");
  BOOST_TEST(paused.state == "paused");

  // Offline: reads from the writable layer, a write into it, an exec refused.
  BOOST_TEST(must(read_all(c, id, "/workspace/m.txt"), "read while paused") == "in-workspace\n");
  BOOST_TEST(must(read_all(c, id, "/usr/local/share/e2e/m.txt"), "read while paused") ==
             "in-share\n");
  BOOST_TEST(must(read_all(c, id, "/etc/e2e-marker"), "read while paused") == "in-etc\n");
  must(write_all(c, id, "/workspace/offline.txt", "written-offline\n"), "write while paused");
  BOOST_TEST(must(c.stat(id, "/workspace/offline.txt"), "stat while paused").size == 16u);
  must_fail(shell(c, id, "true"), errc::conflict, "exec on a filesystem-paused sandbox");

  BOOST_TEST(must(c.resume(id), "resume").state == "running");
  // Fresh processes after a filesystem pause: the sleep is gone; one process sees every file.
  BOOST_TEST(must(c.execs(id), "execs after resume").empty());
  // The exec the pause ended has an outcome that is not a success: the conflict the pause
  // recorded for it (its processes ended with the pause), or it is forgotten.
  auto ended = c.wait_exec(id, sleeper);
  BOOST_TEST((ended.ok() ? ended->exit_code != 0
                         : ended.code() == errc::not_found ||
                             (ended.code() == errc::conflict &&
                              ended.err().message.find("paused") != std::string::npos)),
             (ended.ok() ? "exit " + std::to_string(ended->exit_code)
                         : to_string(ended.code()) + ": " + ended.err().message));
  const auto seen = must_shell(c, id,
                               "cat /workspace/m.txt /usr/local/share/e2e/m.txt /etc/e2e-marker "
                               "/workspace/offline.txt; pgrep sleep || echo no-sleep")
                      .out;
  BOOST_TEST(seen == "in-workspace\nin-share\nin-etc\nwritten-offline\nno-sleep\n");
  must(c.remove(id), "delete");
  must_fail(c.get(id), errc::not_found, "get after delete");
}

} // namespace

BOOST_AUTO_TEST_SUITE(sandboxes, *utf::precondition(crun_can_run))

BOOST_AUTO_TEST_CASE(persistence_recipe_over_rpc_on_crun) {
  persistence_recipe("crun");
}

BOOST_AUTO_TEST_CASE(persistence_recipe_over_rpc_on_runsc, *utf::precondition(runsc_can_run)) {
  persistence_recipe("runsc");
}

BOOST_AUTO_TEST_CASE(a_memory_pause_refuses_writes_and_execs_with_conflict) {
  auto c = connect(daemon(), k_token_acme);
  const auto id = must(c.create(crun_sandbox()), "create").id;
  must_shell(c, id, "mkdir -p /workspace && echo kept > /workspace/kept.txt");
  BOOST_TEST(must(c.pause(id, events::pause_mode::memory), "pause memory").state == "paused");
  BOOST_TEST(must(read_all(c, id, "/workspace/kept.txt"), "read while memory-paused") == "kept\n");
  auto e = must_fail(write_all(c, id, "/workspace/new.txt", "x"), errc::conflict,
                     "write on a memory-paused sandbox");
  BOOST_TEST(e.message.find(id) != std::string::npos, e.message);
  must_fail(shell(c, id, "true"), errc::conflict, "exec on a memory-paused sandbox");
  must_fail(c.make_dir(id, "/workspace/d", false), errc::conflict, "mkdir while memory-paused");
  must(c.resume(id), "resume");
  must(write_all(c, id, "/workspace/new.txt", "x"), "write after resume");
  BOOST_TEST(must_shell(c, id, "cat /workspace/kept.txt /workspace/new.txt").out == "kept\nx");
  must(c.remove(id), "delete");
}

// The process cannot end before the client has its first line: it waits for a file that a
// second client writes only once that line has reached this one's sink.
BOOST_AUTO_TEST_CASE(exec_output_reaches_the_sink_before_the_exit_code) {
  auto c = connect(daemon(), k_token_acme);
  const auto id = must(c.create(crun_sandbox()), "create").id;
  must_shell(c, id, "mkdir -p /workspace");
  std::vector<std::string> arrivals;
  std::thread releaser;
  std::string release_failure;
  api::exec_options o;
  o.argv = {"sh", "-c",
            "echo first; while [ ! -e /workspace/release ]; do sleep 0.05; done; echo second"};
  o.timeout = std::chrono::seconds(60);
  auto r = c.exec(id, o, [&](api::output_stream s, std::string_view bytes) {
    arrivals.push_back((s == api::output_stream::out ? "out:" : "err:") + std::string(bytes));
    if (bytes.find("first") != std::string_view::npos && !releaser.joinable())
      releaser = std::thread([&, id] {
        auto other = api::client::connect({daemon().address(), k_token_acme});
        auto w = other.ok() ? write_all(*other, id, "/workspace/release", "go")
                            : result<api::file_digest>(other.err());
        if (!w.ok())
          release_failure = w.err().message;
      });
  });
  if (releaser.joinable())
    releaser.join();
  arrivals.push_back(r.ok() ? "exit:" + std::to_string(r->exit_code) : "failed");
  BOOST_TEST(release_failure.empty(), release_failure);
  BOOST_REQUIRE(r.ok());
  BOOST_TEST(!r->timed_out);
  const std::vector<std::string> expected{"out:first\n", "out:second\n", "exit:0"};
  BOOST_TEST(arrivals == expected, boost::test_tools::per_element());
  must(c.remove(id), "delete");
}

BOOST_AUTO_TEST_CASE(a_64_mib_file_round_trips_in_chunks_by_sha256) {
  auto c = connect(daemon(), k_token_acme);
  const auto id = must(c.create(crun_sandbox(256)), "create").id;
  constexpr std::size_t k_size = 64u << 20, k_chunk = 1u << 20;
  std::mt19937_64 rng(16);
  sandboxd::sha256 sent_hash;
  std::size_t sent = 0, chunks_sent = 0;
  auto w = must(c.write_file(id, "/workspace/big.bin", 0600,
                             [&](std::string& chunk) {
                               if (sent == k_size)
                                 return api::source_step::end;
                               chunk.resize(k_chunk);
                               for (std::size_t i = 0; i < k_chunk; i += 8) {
                                 const auto v = rng();
                                 std::memcpy(chunk.data() + i, &v, 8);
                               }
                               sent_hash.add(chunk);
                               sent += k_chunk;
                               ++chunks_sent;
                               return api::source_step::chunk;
                             }),
                "write 64 MiB");
  const auto sent_digest = sent_hash.finish();
  const std::string sent_bytes(sent_digest.begin(), sent_digest.end());
  BOOST_TEST(chunks_sent == 64u);
  BOOST_TEST(w.info.size == k_size);
  BOOST_TEST(w.sha256 == sent_bytes, "the daemon's digest of the upload differs");

  sandboxd::sha256 got_hash;
  std::size_t got = 0, chunks_got = 0;
  auto r = must(c.read_file(id, "/workspace/big.bin",
                            [&](std::string_view b) {
                              got_hash.add(b);
                              got += b.size();
                              ++chunks_got;
                            }),
                "read 64 MiB");
  const auto got_digest = got_hash.finish();
  BOOST_TEST(got == k_size);
  BOOST_TEST(chunks_got > 1u, "read in one piece");
  BOOST_TEST(to_hex(got_digest) == to_hex(sent_digest));
  BOOST_TEST(r.sha256 == sent_bytes);
  // What the sandbox itself sees.
  BOOST_TEST(must_shell(c, id, "sha256sum /workspace/big.bin").out.substr(0, 64) ==
             to_hex(sent_digest));
  must(c.remove(id), "delete");
}

// Every Sandbox call, on `id`, through `c` (`exec_id` an exec in flight, `ended_exec_id` one
// that has ended): each answer's code and message.
std::vector<std::pair<std::string, error>> every_sandbox_call(api::client& c, const std::string& id,
                                                              const std::string& exec_id,
                                                              const std::string& ended_exec_id) {
  std::vector<std::pair<std::string, error>> out;
  auto note = [&](const std::string& name, const auto& r) {
    out.emplace_back(name, r.ok() ? error{errc::internal, "succeeded"} : r.err());
  };
  note("get", c.get(id));
  note("set_timeouts", c.set_timeouts(id, {.idle_timeout = std::chrono::seconds(5)}));
  note("watch", c.watch(id, 1, [](const api::streamed_event&) { return false; }));
  note("exec", c.exec(id, {.argv = {"true"}}, {}));
  note("start", c.start(id, {.argv = {"true"}}));
  note("execs", c.execs(id));
  note("wait_exec", c.wait_exec(id, ended_exec_id));
  note("kill_exec", c.kill_exec(id, exec_id, 9));
  note("read_file", c.read_file(id, "/workspace/secret.txt", {}));
  note("write_file", write_all(c, id, "/workspace/intruder.txt", "x"));
  note("list_dir", c.list_dir(id, "/workspace"));
  note("stat", c.stat(id, "/workspace/secret.txt"));
  note("make_dir", c.make_dir(id, "/workspace/d", false));
  note("remove_path", c.remove_path(id, "/workspace/secret.txt", false));
  note("rename", c.rename(id, "/workspace/secret.txt", "/workspace/x"));
  note("pause", c.pause(id, events::pause_mode::filesystem));
  note("pause memory", c.pause(id, events::pause_mode::memory));
  note("resume", c.resume(id));
  note("delete", c.remove(id));
  return out;
}

std::string without(std::string s, const std::string& id) {
  for (auto p = s.find(id); p != std::string::npos; p = s.find(id))
    s.replace(p, id.size(), "<id>");
  return s;
}

BOOST_AUTO_TEST_CASE(another_tenants_sandbox_is_not_found_to_every_call) {
  auto acme = connect(daemon(), k_token_acme);
  auto globex = connect(daemon(), k_token_globex);
  const auto id = must(acme.create(crun_sandbox()), "create").id;
  must_shell(acme, id, "mkdir -p /workspace && echo secret > /workspace/secret.txt");
  const auto exec = must(acme.start(id, {.argv = {"sleep", "600"}}), "start sleep").exec_id;
  const auto ended = must(acme.start(id, {.argv = {"true"}}), "start true").exec_id;
  must(acme.wait_exec(id, ended), "wait for true");
  // A missing id of the same shape: the answers must not tell them apart.
  std::string missing = id;
  missing.back() = missing.back() == '0' ? '1' : '0';
  must_fail(acme.get(missing), errc::not_found, "get of a missing id");

  const auto theirs = every_sandbox_call(globex, id, exec, ended);
  const auto none = every_sandbox_call(globex, missing, exec, ended);
  BOOST_REQUIRE_EQUAL(theirs.size(), none.size());
  for (std::size_t i = 0; i < theirs.size(); ++i) {
    BOOST_TEST_CONTEXT(theirs[i].first) {
      BOOST_TEST(theirs[i].second.code == errc::not_found, theirs[i].second.message);
      BOOST_TEST(without(theirs[i].second.message, id) == without(none[i].second.message, missing));
    }
  }
  // list: globex never sees it, acme does (once the read model has it).
  BOOST_TEST(eventually([&] {
    auto page = acme.list();
    return page.ok() && std::any_of(page->rows.begin(), page->rows.end(),
                                    [&](const auto& s) { return s.id == id; });
  }));
  for (bool deleted : {false, true}) {
    api::list_filter f;
    f.include_deleted = deleted;
    auto page = must(globex.list(f), "list of globex");
    for (const auto& s : page.rows)
      BOOST_TEST(s.id != id);
  }
  // Nothing globex tried changed it: still running, its file and its exec still there.
  BOOST_TEST(must(acme.get(id), "get").state == "running");
  BOOST_TEST(must(read_all(acme, id, "/workspace/secret.txt"), "read") == "secret\n");
  BOOST_TEST(!acme.stat(id, "/workspace/intruder.txt").ok());
  auto execs = must(acme.execs(id), "execs");
  BOOST_TEST_REQUIRE(execs.size() == 1u);
  BOOST_TEST(execs[0].exec_id == exec);
  must(acme.kill_exec(id, exec, 9), "kill");
  auto killed = must(acme.wait_exec(id, exec), "wait for the killed exec");
  BOOST_TEST(killed.signal == 9);
  must(acme.remove(id), "delete");
  // Deleted, it is still acme's alone: globex's redact is the same NOT_FOUND as a missing
  // id's; acme's is the one that takes effect.
  const auto theirs_redact = must_fail(globex.redact(id, "not mine"), errc::not_found, "redact");
  const auto none_redact = must_fail(globex.redact(missing, "not mine"), errc::not_found, "redact");
  BOOST_TEST(without(theirs_redact.message, id) == without(none_redact.message, missing));
  must(acme.redact(id, "acme's own request"), "redact by its tenant");
}

// A Sandbox capability opened by a tenant answers NOT_FOUND once its sandbox is deleted, and
// an Exec capability once its exec is gone. Raw Cap'n Proto, on a thread of its own (a
// thread holding an api::client has its kj loop already).
BOOST_AUTO_TEST_CASE(a_held_capability_is_not_found_after_its_sandbox_is_deleted) {
  auto acme = connect(daemon(), k_token_acme);
  const auto id = must(acme.create(crun_sandbox()), "create").id;
  std::vector<std::pair<std::string, error>> answers;
  std::thread([&] {
    capnp::EzRpcClient raw(daemon().address());
    auto& ws = raw.getWaitScope();
    auto auth = raw.getMain<rpc::Gateway>().authenticateRequest();
    auth.setToken(k_token_acme);
    auto session = auth.send().wait(ws).getSession();
    auto open = session.openRequest();
    open.setSandboxId(id);
    auto sandbox = open.send().wait(ws).getSandbox();
    auto call = [&](const std::string& name, auto request) {
      try {
        request.send().wait(ws);
        answers.emplace_back(name, error{errc::internal, "succeeded"});
      } catch (const kj::Exception& e) {
        answers.emplace_back(name, api::from_exception(e));
      }
    };
    call("info before delete", sandbox.infoRequest());
    auto del = session.openRequest();
    del.setSandboxId(id);
    del.send().wait(ws).getSandbox().deleteRequest().send().wait(ws);
    call("info", sandbox.infoRequest());
    call("execs", sandbox.execsRequest());
    call("resume", sandbox.resumeRequest());
    auto st = sandbox.statRequest();
    st.setPath("/");
    call("stat", kj::mv(st));
    call("delete", sandbox.deleteRequest());
  }).join();
  BOOST_REQUIRE_EQUAL(answers.size(), 6u);
  BOOST_TEST(answers[0].second.message == "succeeded");
  for (std::size_t i = 1; i < answers.size(); ++i)
    BOOST_TEST(answers[i].second.code == errc::not_found,
               answers[i].first << ": " << answers[i].second.message);
}

BOOST_AUTO_TEST_CASE(admin_calls_without_the_admin_scope_are_permission_denied) {
  auto acme = connect(daemon(), k_token_acme);
  std::vector<std::pair<std::string, errc>> got;
  auto note = [&](const std::string& name, const auto& r) {
    got.emplace_back(name, r.ok() ? errc::internal : r.code());
  };
  note("bill", acme.bill("acme", 0, INT64_MAX));
  note("audit", acme.audit({.tenant = "acme"}));
  note("audit_verify", acme.audit_verify("acme"));
  note("tail", acme.tail({}, false, [](const api::streamed_event&) { return false; }));
  note("history", acme.history("sb_anything"));
  note("verify_projection", acme.verify_projection());
  for (const auto& [name, code] : got)
    BOOST_TEST(code == errc::permission_denied, name << ": " << to_string(code));
  // The same calls with the development token (admin) are served.
  auto admin = connect(daemon(), daemon().token());
  must(admin.audit_verify(""), "audit verify as admin");
  must(admin.bill("acme", 0, 3600ll * 1'000'000'000 * 24 * 365 * 100), "bill as admin");
}

BOOST_AUTO_TEST_CASE(quotas_answer_resource_exhausted) {
  auto globex = connect(daemon(), k_token_globex);
  std::vector<std::string> ids;
  for (int i = 0; i < k_quota_sandboxes; ++i)
    ids.push_back(must(globex.create(crun_sandbox(128)), "create within the quota").id);
  auto e = must_fail(globex.create(crun_sandbox(128)), errc::resource_exhausted,
                     "one sandbox over the quota");
  BOOST_TEST(e.message.find("globex") != std::string::npos, e.message);
  // Another tenant's quota is its own.
  auto acme = connect(daemon(), k_token_acme);
  const auto acme_id = must(acme.create(crun_sandbox(128)), "acme under its own quota").id;
  must(acme.remove(acme_id), "delete");
  for (const auto& id : ids)
    must(globex.remove(id), "delete");
  // Deleted sandboxes no longer count (once the log follower has their deletion).
  auto over_memory = crun_sandbox(k_quota_memory_mib + 128);
  BOOST_TEST(eventually([&] {
    auto r = globex.create(over_memory);
    return !r.ok() && r.code() == errc::resource_exhausted &&
           r.err().message.find("memory") != std::string::npos;
  }));
  auto over_disk = crun_sandbox(128);
  over_disk.limits.disk_mib = k_quota_disk_mib + 1;
  e = must_fail(globex.create(over_disk), errc::resource_exhausted, "disk over the quota");
  BOOST_TEST(e.message.find("disk") != std::string::npos, e.message);
  std::string again;
  BOOST_TEST(eventually([&] {
    auto r = globex.create(crun_sandbox(128));
    if (r.ok())
      again = r->id;
    return r.ok();
  }));
  if (!again.empty())
    must(globex.remove(again), "delete");
}

// `head -c 256M /dev/zero` streamed to a client that first stops reading (its sink blocks,
// so it reads nothing from the socket) for 8 s, then reads everything: flow control must
// stall the process meanwhile, and the daemon must pass the output on, not keep it. A daemon
// that buffered would hold all 256 MiB after the stall, four times the bound below; the
// exec's output cap is the same 256 MiB, so nothing is cut short.
BOOST_AUTO_TEST_CASE(a_client_that_stops_reading_does_not_grow_the_daemon) {
  constexpr std::uint64_t k_bytes = 256ull << 20;
  auto c = connect(daemon(), k_token_acme);
  const auto id = must(c.create(crun_sandbox()), "create").id;
  must_shell(c, id, "true");
  const auto before = rss_kib(daemon().pid());
  std::uint64_t stalled_peak = before, peak = before, received = 0, calls = 0;
  api::exec_options o;
  o.argv = {"head", "-c", std::to_string(k_bytes), "/dev/zero"}; // busybox knows no "256M"
  o.max_output_bytes = k_bytes;
  // About 6 s on a quiet machine; the deadline is for a daemon that stopped passing output
  // on, not for a busy machine (at -j2 beside other builds it has taken 30 s).
  o.timeout = std::chrono::seconds(300);
  auto r = c.exec(id, o, [&](api::output_stream, std::string_view bytes) {
    received += bytes.size();
    if (calls++ == 0) {
      // Not reading for 8 s: a daemon that buffers would take in hundreds of MiB meanwhile.
      for (int i = 0; i < 40; ++i) {
        std::this_thread::sleep_for(200ms);
        stalled_peak = std::max(stalled_peak, rss_kib(daemon().pid()));
      }
    } else if (calls % 256 == 0) {
      peak = std::max(peak, rss_kib(daemon().pid()));
    }
  });
  if (!r.ok())
    BOOST_FAIL("exec head -c 256M: " << r.err().message);
  peak = std::max(peak, stalled_peak);
  BOOST_TEST_MESSAGE("daemon VmRSS " << before << " KiB before, " << stalled_peak
                                     << " KiB at most while the client did not read, " << peak
                                     << " KiB at most in all; the client got " << received
                                     << " bytes in " << calls << " calls");
  BOOST_TEST(r->exit_code == 0);
  BOOST_TEST(!r->output_truncated);
  BOOST_TEST(received == k_bytes);
  // The bound: 64 MiB over the start (the flow-control window and the buffers of a few
  // calls), far from the 256 MiB the command writes.
  BOOST_TEST(stalled_peak - before < 64u * 1024u, "grew by " << (stalled_peak - before) << " KiB");
  BOOST_TEST(peak - before < 64u * 1024u, "grew by " << (peak - before) << " KiB");
  must(c.remove(id), "delete");
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

// Every partition's projection lag is 0: the figures read from the read models include every
// record the log held at the scrape (an earlier case's delete, for one).
bool projected(const std::map<std::string, double>& m) {
  bool any = false;
  for (const auto& [k, v] : m)
    if (k.rfind("sandboxd_projection_lag_records{", 0) == 0) {
      any = true;
      if (v != 0)
        return false;
    }
  return any;
}

} // namespace

BOOST_AUTO_TEST_CASE(prometheus_figures_move_as_calls_are_made, *utf::precondition(crun_can_run)) {
  const int port = shared().metrics_port;
  auto c = connect(daemon(), k_token_acme);
  // The read-model gauges lag the log: `before` is taken once the earlier cases' events are
  // projected, else a sandbox deleted just before would be counted running in `before` and
  // the one created here would only replace it.
  std::map<std::string, double> before;
  BOOST_TEST_REQUIRE(eventually(
    [&] {
      before = scrape(port);
      return projected(before);
    },
    90s));
  BOOST_TEST(
    sample(before, "sandboxd_build_info{version=\"" + must(c.version(), "version") + "\"}") == 1.0);
  const auto id = must(c.create(crun_sandbox()), "create").id;
  for (int i = 0; i < 3; ++i)
    must_shell(c, id, "true");
  std::string missing = id;
  missing.back() = missing.back() == '0' ? '1' : '0';
  must_fail(c.get(missing), errc::not_found, "get of a missing id");
  const std::string running = "sandboxd_sandboxes{runtime=\"crun\",state=\"running\"}";
  const std::string execs = "sandboxd_driver_call_seconds_count{call=\"exec\",runtime=\"crun\"}";
  const std::string creates =
    "sandboxd_driver_call_seconds_count{call=\"create\",runtime=\"crun\"}";
  std::map<std::string, double> after;
  BOOST_TEST(eventually(
    [&] {
      after = scrape(port);
      return sample(after, running) >= sample(before, running) + 1;
    },
    90s));
  for (const auto& [k, v] : after)
    if (k.rfind("sandboxd_sandboxes", 0) == 0 || k.rfind("sandboxd_projection_lag", 0) == 0)
      BOOST_TEST_MESSAGE(k << " " << v);
  BOOST_TEST(sample(after, creates) >= sample(before, creates) + 1);
  BOOST_TEST(sample(after, execs) >= sample(before, execs) + 3);
  BOOST_TEST(sample(after, "sandboxd_events_appended_total") >
             sample(before, "sandboxd_events_appended_total"));
  // Calls by method and outcome, and their latency.
  const std::string exec_ok = "sandboxd_rpc_calls_total{method=\"Sandbox.exec\",outcome=\"ok\"}";
  const std::string get_missing =
    "sandboxd_rpc_calls_total{method=\"Session.get\",outcome=\"not_found\"}";
  const std::string create_seconds = "sandboxd_rpc_call_seconds_count{method=\"Session.create\"}";
  BOOST_TEST(sample(after, exec_ok) >= sample(before, exec_ok) + 3);
  BOOST_TEST(sample(after, get_missing) >= sample(before, get_missing) + 1);
  BOOST_TEST(sample(after, create_seconds) >= sample(before, create_seconds) + 1);
  must(c.remove(id), "delete");
  BOOST_TEST(
    eventually([&] { return sample(scrape(port), running) == sample(before, running); }, 90s));
}
