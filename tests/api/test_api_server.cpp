// The RPC server and the C++ client against a real control plane (hollow driver, file log)
// and real PostgreSQL read models: authentication, tenancy, admin scope, quotas, the bounds
// of a connection, list/bill/audit, watch and tail, and error codes through the client.
#define BOOST_TEST_MODULE api_server
#include <boost/test/unit_test.hpp>

#include "api/rpc_error.hpp"
#include "schemas/api.capnp.h"
#include "tests/api/api_world.hpp"

#include <capnp/ez-rpc.h>

#include <algorithm>
#include <filesystem>
#include <set>

using namespace sandboxd;
using namespace sandboxd::test;
using namespace std::chrono_literals;
using api::errc;

namespace {

std::string why(const api::error& e) {
  return api::to_string(e.code) + ": " + e.message;
}

template <class T>
T must(api::result<T> r) {
  BOOST_REQUIRE_MESSAGE(r.ok(), (r ? std::string() : why(r.err())));
  return std::move(*r);
}

inline void must(api::result<void> r) {
  BOOST_REQUIRE_MESSAGE(r.ok(), (r ? std::string() : why(r.err())));
}

// A raw Cap'n Proto connection, authenticated, for calls the client library does not make
// (every Sandbox method) or makes one at a time (calls in flight).
struct raw_session {
  capnp::EzRpcClient ez;
  rpc::Session::Client session;

  raw_session(const std::string& address, const char* token)
      : ez(address.substr(0, 5) == "unix:" ? address : address), session(nullptr) {
    auto req = ez.getMain<rpc::Gateway>().authenticateRequest();
    req.setToken(token);
    session = req.send().wait(ez.getWaitScope()).getSession();
  }
  kj::WaitScope& ws() { return ez.getWaitScope(); }
};

// The error a raw call failed with (api::error{internal, "no error"} when it succeeded).
template <class Promise>
api::error failure_of(Promise&& p, kj::WaitScope& ws) {
  try {
    p.wait(ws);
  } catch (const kj::Exception& e) {
    return api::from_exception(e);
  }
  return api::error{errc::internal, "no error"};
}

// Calls every method of `sb` and returns each one's error (by method name).
std::vector<std::pair<std::string, api::error>> call_every_method(rpc::Sandbox::Client sb,
                                                                  kj::WaitScope& ws) {
  std::vector<std::pair<std::string, api::error>> out;
  auto add = [&](const char* name, auto promise) {
    out.emplace_back(name, failure_of(kj::mv(promise), ws));
  };
  add("info", sb.infoRequest().send());
  {
    auto r = sb.execRequest();
    r.initRequest().initArgv(1).set(0, "true");
    add("exec", r.send());
  }
  {
    auto r = sb.startRequest();
    r.initRequest().initArgv(1).set(0, "true");
    add("start", r.send());
  }
  add("execs", sb.execsRequest().send());
  {
    auto r = sb.openExecRequest();
    r.setExecId("x-1");
    add("openExec", r.send());
  }
  {
    auto r = sb.readFileRequest();
    r.setPath("/etc/hostname");
    add("readFile", r.send());
  }
  {
    auto r = sb.writeFileRequest();
    r.setPath("/tmp/a");
    add("writeFile", r.send());
  }
  {
    auto r = sb.listDirRequest();
    r.setPath("/");
    add("listDir", r.send());
  }
  {
    auto r = sb.statRequest();
    r.setPath("/");
    add("stat", r.send());
  }
  {
    auto r = sb.makeDirRequest();
    r.setPath("/d");
    add("makeDir", r.send());
  }
  {
    auto r = sb.removeRequest();
    r.setPath("/d");
    add("remove", r.send());
  }
  {
    auto r = sb.renameRequest();
    r.setFrom("/a");
    r.setTo("/b");
    add("rename", r.send());
  }
  add("pause", sb.pauseRequest().send());
  add("resume", sb.resumeRequest().send());
  add("setTimeouts", sb.setTimeoutsRequest().send());
  add("watch", sb.watchRequest().send());
  add("snapshot", sb.snapshotRequest().send());
  add("delete", sb.deleteRequest().send());
  return out;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

} // namespace

BOOST_AUTO_TEST_SUITE(api_server)

BOOST_AUTO_TEST_CASE(unknown_token_is_refused) {
  api_world w(without_read_models());
  auto c = api::client::connect({w.address, "not-a-token"});
  BOOST_REQUIRE(!c.ok());
  BOOST_TEST(api::to_string(c.code()) == "permission_denied");
  auto empty = api::client::connect({w.address, ""});
  BOOST_REQUIRE(!empty.ok());
  BOOST_TEST(api::to_string(empty.code()) == "permission_denied");
  auto good = w.connect(k_token_b);
  BOOST_TEST(good.who().tenant == "b");
  BOOST_TEST(good.who().principal == "carol");
}

BOOST_AUTO_TEST_CASE(lifecycle_through_the_client) {
  api_world w(without_read_models());
  auto c = w.connect();
  api::create_options o;
  o.labels = {{"team", "x"}};
  o.limits.memory_mib = 256;
  o.timeouts.idle_timeout = 10min;
  auto sb = must(c.create(o));
  BOOST_TEST(sb.state == "running");
  BOOST_TEST(sb.tenant == "a");
  BOOST_TEST(sb.runtime == "hollow");
  BOOST_TEST(sb.template_name == "base");
  BOOST_TEST(sb.limits.memory_mib == 256u);
  BOOST_TEST(sb.limits.cpu_millicores == 1000u); // the node's default
  BOOST_TEST(sb.idle_timeout_ns == std::chrono::nanoseconds(10min).count());
  BOOST_REQUIRE(sb.labels.size() == 1u);
  BOOST_TEST(sb.labels[0].value == "x");

  auto got = must(c.get(sb.id));
  BOOST_TEST(got.id == sb.id);
  BOOST_TEST(got.sequence == sb.sequence);

  auto paused = must(c.pause(sb.id, events::pause_mode::memory));
  BOOST_TEST(paused.state == "paused");
  BOOST_TEST((paused.pause_mode == events::pause_mode::memory));
  auto again = c.pause(sb.id);
  BOOST_REQUIRE(!again.ok());
  BOOST_TEST(api::to_string(again.code()) == "conflict");
  BOOST_TEST(must(c.resume(sb.id)).state == "running");

  api::timeout_change t;
  t.lifetime = 2h;
  t.on_idle = std::optional<events::pause_mode>{}; // delete when idle
  auto changed = must(c.set_timeouts(sb.id, t));
  BOOST_TEST(changed.lifetime_ns == std::chrono::nanoseconds(2h).count());
  BOOST_TEST(changed.end_time_ns == changed.created_at_ns + changed.lifetime_ns);
  BOOST_TEST(changed.on_timeout == "delete");
  BOOST_TEST(changed.idle_timeout_ns == std::chrono::nanoseconds(10min).count()); // kept
  api::timeout_change both;
  both.timeout = 1h;
  both.lifetime = 1h;
  auto bad = c.set_timeouts(sb.id, both);
  BOOST_REQUIRE(!bad.ok());
  BOOST_TEST(api::to_string(bad.code()) == "invalid_argument");

  must(c.remove(sb.id));
  auto gone = c.get(sb.id);
  BOOST_REQUIRE(!gone.ok());
  BOOST_TEST(api::to_string(gone.code()) == "not_found");
}

BOOST_AUTO_TEST_CASE(create_settings_the_node_cannot_honour_are_refused) {
  api_world w(without_read_models());
  auto c = w.connect();
  api::create_options o;
  o.runtime = "runsc"; // this node has only the hollow driver
  auto r = c.create(o);
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(api::to_string(r.code()) == "invalid_argument");
  BOOST_TEST(r.err().message.find("hollow") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(another_tenants_sandbox_is_not_found_by_every_method) {
  api_world w(without_read_models());
  std::string theirs;
  {
    auto b = w.connect(k_token_b);
    theirs = must(b.create({})).id;
  }
  const std::string missing = "sb-000000000000";
  raw_session a(w.address, k_token_a);
  auto& ws = a.ws();
  {
    auto r = a.session.getRequest();
    r.setSandboxId(theirs);
    auto e = failure_of(r.send(), ws);
    BOOST_TEST(why(e) == "not_found: sandbox " + theirs + " does not exist; check the sandbox id");
  }
  std::vector<std::pair<std::string, api::error>> foreign, absent;
  {
    auto r = a.session.openRequest();
    r.setSandboxId(theirs);
    foreign = call_every_method(r.send().getSandbox(), ws);
  }
  {
    auto r = a.session.openRequest();
    r.setSandboxId(missing);
    absent = call_every_method(r.send().getSandbox(), ws);
  }
  BOOST_REQUIRE_EQUAL(foreign.size(), 18u);
  for (std::size_t i = 0; i < foreign.size(); ++i) {
    BOOST_TEST_CONTEXT("Sandbox." << foreign[i].first) {
      BOOST_TEST(api::to_string(foreign[i].second.code) == "not_found");
      // Word for word what a missing id gets: nothing tells the two apart.
      BOOST_TEST(replace_all(why(foreign[i].second), theirs, "ID") ==
                 replace_all(why(absent[i].second), missing, "ID"));
    }
  }
  // Tenant b's sandbox is untouched (pause, resume, delete above did nothing): asked from
  // another thread, whose kj event loop is not the raw session's.
  std::thread([&] {
    auto b = api::client::connect({w.address, k_token_b});
    BOOST_REQUIRE(b.ok());
    auto still = b->get(theirs);
    BOOST_REQUIRE(still.ok());
    BOOST_TEST(still->state == "running");
    BOOST_TEST(still->sequence == 2u); // created, started: no rejection was even recorded
  }).join();
}

BOOST_AUTO_TEST_CASE(a_deleted_sandboxs_capability_answers_not_found_to_every_method) {
  // Each Sandbox method checks on its own that the sandbox is still there (a capability of
  // another tenant's sandbox cannot be had at all: open refuses it, above).
  api_world w(without_read_models());
  raw_session a(w.address, k_token_a);
  auto create = a.session.createRequest();
  create.initRequest();
  auto made = create.send().wait(a.ws());
  const std::string id = made.getInfo().getId().cStr();
  auto sb = made.getSandbox();
  sb.deleteRequest().send().wait(a.ws());
  auto gone = call_every_method(sb, a.ws());
  auto r = a.session.openRequest();
  r.setSandboxId("sb-000000000000");
  auto absent = call_every_method(r.send().getSandbox(), a.ws());
  BOOST_REQUIRE_EQUAL(gone.size(), absent.size());
  for (std::size_t i = 0; i < gone.size(); ++i)
    BOOST_TEST_CONTEXT("Sandbox." << gone[i].first) {
      BOOST_TEST(api::to_string(gone[i].second.code) == "not_found");
      BOOST_TEST(replace_all(why(gone[i].second), id, "ID") ==
                 replace_all(why(absent[i].second), "sb-000000000000", "ID"));
    }
}

// The process and file calls reach the sandbox's driver through its actor (the hollow
// driver here: echo, cat and sleep, files in a plain directory) and answer its results.
// A NUL inside a label, a working directory or a reason is part of what was sent: it is
// refused as such, never cut off there (a label "team\0x" must not become "team").
BOOST_AUTO_TEST_CASE(text_with_a_nul_is_refused_whole_not_cut_short) {
  api_world w(without_read_models());
  auto c = w.connect();
  using namespace std::string_literals;
  api::create_options o;
  o.labels = {{"team\0x"s, "a"}};
  auto r = c.create(o);
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(api::to_string(r.code()) == "invalid_argument");
  o.labels = {{"team", "a\0b"s}};
  r = c.create(o);
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(api::to_string(r.code()) == "invalid_argument");

  const std::string id = must(c.create({})).id;
  api::exec_options e;
  e.argv = {"pwd"};
  e.cwd = "/tmp\0/elsewhere"s;
  auto x = c.exec(id, e, {});
  BOOST_REQUIRE(!x.ok());
  BOOST_TEST(api::to_string(x.code()) == "invalid_argument");
  e.cwd = "/";
  e.argv = {"echo", "a\0b"s};
  x = c.exec(id, e, {});
  BOOST_REQUIRE(!x.ok());
  BOOST_TEST(api::to_string(x.code()) == "invalid_argument");
  auto st = c.stat(id, "/tmp\0/elsewhere"s);
  BOOST_REQUIRE(!st.ok());
  BOOST_TEST(api::to_string(st.code()) == "invalid_argument");
}

BOOST_AUTO_TEST_CASE(process_and_file_calls_answer_the_drivers_results) {
  api_world w(without_read_models());
  auto c = w.connect();
  const std::string id = must(c.create({})).id;

  // exec: output through the callback before the result, then the exit code.
  std::string out;
  api::exec_options e;
  e.argv = {"echo", "hello", "api"};
  auto r = must(c.exec(id, e, [&](api::output_stream s, std::string_view d) {
    if (s == api::output_stream::out)
      out.append(d);
  }));
  BOOST_TEST(out == "hello api\n");
  BOOST_TEST(r.exit_code == 0);
  BOOST_TEST(r.stdout_bytes == out.size());
  BOOST_TEST(!r.exec_id.empty());

  // stdin: every byte value, NUL included, comes back unchanged.
  std::string all;
  for (int i = 0; i < 256; ++i)
    all.push_back(static_cast<char>(i));
  e.argv = {"cat"};
  e.stdin_bytes = all + all;
  std::string echoed;
  must(c.exec(id, e, [&](api::output_stream, std::string_view d) { echoed.append(d); }));
  BOOST_TEST((echoed == all + all));

  // A missing program: the driver's 127, a result and not an error.
  api::exec_options missing;
  missing.argv = {"no-such-program"};
  BOOST_TEST(must(c.exec(id, missing, {})).exit_code == 127);

  // A background exec: listed while it runs, killed, its result has the signal.
  api::exec_options sleeper;
  sleeper.argv = {"sleep", "60"};
  auto started = must(c.start(id, sleeper));
  auto running = must(c.execs(id));
  BOOST_TEST_REQUIRE(running.size() == 1u);
  BOOST_TEST(running[0].exec_id == started.exec_id);
  must(c.kill_exec(id, started.exec_id, 0));
  auto killed = must(c.wait_exec(id, started.exec_id));
  BOOST_TEST(killed.signal == 9);
  BOOST_TEST(must(c.execs(id)).empty());
  BOOST_TEST(api::to_string(c.wait_exec(id, "x-never").code()) == "not_found");

  // Files: written in chunks, read back with the same bytes and SHA-256.
  std::size_t sent = 0;
  auto written = must(c.write_file(id, "/workspace/bytes", 0600, [&](std::string& chunk) {
    if (sent == 2)
      return api::source_step::end;
    chunk = all;
    ++sent;
    return api::source_step::chunk;
  }));
  BOOST_TEST(written.info.size == 512u);
  BOOST_TEST(written.info.mode == 0600u);
  std::string back;
  auto read =
    must(c.read_file(id, "/workspace/bytes", [&](std::string_view d) { back.append(d); }));
  BOOST_TEST((back == all + all));
  BOOST_TEST(read.sha256 == written.sha256);
  BOOST_TEST(read.sha256.size() == 32u);

  must(c.make_dir(id, "/workspace/a/b", true));
  must(c.rename(id, "/workspace/bytes", "/workspace/a/b/moved"));
  auto listing = must(c.list_dir(id, "/workspace/a/b", 0));
  BOOST_TEST_REQUIRE(listing.entries.size() == 1u);
  BOOST_TEST(listing.entries[0].name == "moved");
  BOOST_TEST(listing.entries[0].info.path == "/workspace/a/b/moved");
  BOOST_TEST((must(c.stat(id, "/workspace/a")).type == api::file_type::directory));
  auto refused = c.remove_path(id, "/workspace/a", false);
  BOOST_TEST_REQUIRE(!refused.ok());
  must(c.remove_path(id, "/workspace/a", true));
  BOOST_TEST(api::to_string(c.stat(id, "/workspace/a").code()) == "not_found");

  // Memory-paused: reads are served, changes are refused with conflict.
  must(c.write_file(id, "/workspace/kept", 0644, [&, done = false](std::string& chunk) mutable {
    if (done)
      return api::source_step::end;
    chunk = "kept";
    done = true;
    return api::source_step::chunk;
  }));
  must(c.pause(id, events::pause_mode::memory));
  std::string kept;
  must(c.read_file(id, "/workspace/kept", [&](std::string_view d) { kept.append(d); }));
  BOOST_TEST(kept == "kept");
  BOOST_TEST(api::to_string(c.make_dir(id, "/workspace/no", false).code()) == "conflict");
  BOOST_TEST(api::to_string(c.exec(id, e, {}).code()) == "conflict");
}

BOOST_AUTO_TEST_CASE(admin_calls_need_the_admin_scope) {
  api_world w;
  auto user = w.connect(k_token_a);
  const auto hour = std::int64_t{3600} * 1'000'000'000;
  auto bill = user.bill("a", 0, hour);
  BOOST_REQUIRE(!bill.ok());
  BOOST_TEST(api::to_string(bill.code()) == "permission_denied");
  auto audit = user.audit({});
  BOOST_REQUIRE(!audit.ok());
  BOOST_TEST(api::to_string(audit.code()) == "permission_denied");
  auto verify = user.audit_verify();
  BOOST_REQUIRE(!verify.ok());
  BOOST_TEST(api::to_string(verify.code()) == "permission_denied");
  auto tail = user.tail({}, false, [](const api::streamed_event&) { return true; });
  BOOST_REQUIRE(!tail.ok());
  BOOST_TEST(api::to_string(tail.code()) == "permission_denied");

  must(user.create({}));
  w.wait_for_projection();
  auto admin = w.connect(k_token_admin);
  auto v = must(admin.audit_verify());
  BOOST_TEST(v.problems.empty());
  BOOST_TEST(v.checked_rows == 2u); // created, started
}

// A network policy is parsed and held to the tenant's ceiling before anything is logged:
// above the ceiling permission_denied (tenant b may have none, a up to allow lists), a rule
// that does not parse invalid_argument naming it; within, the node's own check follows
// (this node's hollow driver has no links: invalid_argument). Nothing is made.
BOOST_AUTO_TEST_CASE(network_policies_are_held_to_each_tenant_s_ceiling) {
  api_world w(without_read_models([](api::server_options& o) {
    o.network_ceiling.widest = events::network_mode::allow_list;
    o.network_ceilings["b"].widest = events::network_mode::none;
    o.defaults.networked = {events::runtime_kind::hollow};
  }));
  auto a = w.connect(k_token_a);
  api::create_options all;
  all.network.mode = events::network_mode::full;
  auto r = a.create(all);
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(api::to_string(r.code()) == "permission_denied");
  BOOST_TEST(r.err().message.find("tenant a") != std::string::npos, r.err().message);
  api::create_options list;
  list.network.mode = events::network_mode::allow_list;
  list.network.allowed_hosts = {"pypi.org:443", "10.1.2.3/16"};
  r = a.create(list);
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(api::to_string(r.code()) == "invalid_argument");
  BOOST_TEST(r.err().message.find("10.1.2.3/16") != std::string::npos, r.err().message);
  list.network.allowed_hosts = {"pypi.org:443"};
  r = a.create(list);
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(api::to_string(r.code()) == "invalid_argument");
  BOOST_TEST(r.err().message.find("cannot be enforced") != std::string::npos, r.err().message);
  auto b = w.connect(k_token_b);
  r = b.create(list);
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(api::to_string(r.code()) == "permission_denied");
  BOOST_TEST(r.err().message.find("tenant b") != std::string::npos, r.err().message);
  BOOST_TEST(w.server->usage("a").sandboxes == 0u);
  BOOST_TEST(w.server->usage("b").sandboxes == 0u);
  must(b.create({})); // none is within every ceiling
}

BOOST_AUTO_TEST_CASE(quotas_answer_resource_exhausted) {
  api_world w(without_read_models([](api::server_options& o) {
    o.quotas["a"] = api::tenant_quota{2, 0, 0, 0, 0};
    o.quotas["b"] = api::tenant_quota{0, 1024, 0, 0, 100};
  }));
  auto a = w.connect(k_token_a);
  auto first = must(a.create({}));
  must(a.create({}));
  auto third = a.create({});
  BOOST_REQUIRE(!third.ok());
  BOOST_TEST(api::to_string(third.code()) == "resource_exhausted");
  BOOST_TEST(third.err().message.find("sandbox quota") != std::string::npos);
  // A deleted sandbox gives its place back (once the log's `deleted` is folded).
  must(a.remove(first.id));
  BOOST_TEST(eventually([&] { return w.server->usage("a").sandboxes == 1; }));
  must(a.create({}));

  auto b = w.connect(k_token_b);
  api::create_options big;
  big.limits.memory_mib = 768;
  big.limits.disk_mib = 50;
  // Without a disk limit a sandbox holds the runtime's default layer (10 GiB): that is what
  // the quota counts, so it is refused here (the bypass of a quota counting it as 0).
  auto no_disk = b.create(api::create_options{});
  BOOST_REQUIRE(!no_disk.ok());
  BOOST_TEST(no_disk.err().message.find("disk quota (0 MiB in use, 10240 MiB more asked") !=
               std::string::npos,
             no_disk.err().message);
  must(b.create(big));
  auto memory = b.create(big); // 1536 MiB > 1024
  BOOST_REQUIRE(!memory.ok());
  BOOST_TEST(api::to_string(memory.code()) == "resource_exhausted");
  BOOST_TEST(memory.err().message.find("memory quota") != std::string::npos);
  api::create_options disk;
  disk.limits.memory_mib = 128;
  disk.limits.disk_mib = 51;
  auto d = b.create(disk);
  BOOST_REQUIRE(!d.ok());
  BOOST_TEST(d.err().message.find("disk quota") != std::string::npos);
  BOOST_TEST((w.server->usage("b") == api::tenant_usage{1, 768, 1000, 512, 50}));
}

BOOST_AUTO_TEST_CASE(concurrent_creates_never_pass_the_quota) {
  api_world w(without_read_models([](api::server_options& o) {
    o.quota = api::tenant_quota{3, 0, 0, 0, 0};
  }));
  raw_session a(w.address, k_token_a);
  kj::Vector<kj::Promise<void>> calls;
  int ok = 0, exhausted = 0;
  for (int i = 0; i < 12; ++i) {
    auto r = a.session.createRequest();
    r.initRequest();
    calls.add(r.send().then([&](auto) { ++ok; },
                            [&](kj::Exception&& e) {
                              if (api::from_exception(e).code == errc::resource_exhausted)
                                ++exhausted;
                            }));
  }
  kj::joinPromises(calls.releaseAsArray()).wait(a.ws());
  BOOST_TEST(ok == 3);
  BOOST_TEST(exhausted == 9);
  BOOST_TEST(w.server->usage("a").sandboxes == 3u);
}

BOOST_AUTO_TEST_CASE(calls_in_flight_per_connection_are_bounded) {
  // NOT_FOUND answers are held for the floor: 20 calls of one connection are in flight at
  // once, and only the first 4 are taken.
  api_world w(without_read_models([](api::server_options& o) {
    o.max_calls_in_flight = 4;
    o.not_found_floor = 300ms;
  }));
  raw_session a(w.address, k_token_a);
  kj::Vector<kj::Promise<void>> calls;
  int not_found = 0, exhausted = 0;
  for (int i = 0; i < 20; ++i) {
    auto r = a.session.getRequest();
    r.setSandboxId("sb-00000000000" + std::to_string(i % 10));
    calls.add(r.send().then([](auto) {},
                            [&](kj::Exception&& e) {
                              auto c = api::from_exception(e).code;
                              not_found += c == errc::not_found;
                              exhausted += c == errc::resource_exhausted;
                            }));
  }
  kj::joinPromises(calls.releaseAsArray()).wait(a.ws());
  BOOST_TEST(not_found == 4);
  BOOST_TEST(exhausted == 16);
  // The slots come back: the next call is served.
  auto r = a.session.getRequest();
  r.setSandboxId("sb-000000000000");
  BOOST_TEST(api::to_string(failure_of(r.send(), a.ws()).code) == "not_found");
}

BOOST_AUTO_TEST_CASE(connections_per_tenant_are_bounded) {
  api_world w(
    without_read_models([](api::server_options& o) { o.max_connections_per_tenant = 2; }));
  {
    raw_session one(w.address, k_token_a);
    raw_session two(w.address, k_token_admin); // the same tenant
    capnp::EzRpcClient three(w.address);
    auto req = three.getMain<rpc::Gateway>().authenticateRequest();
    req.setToken(k_token_a);
    auto e = failure_of(req.send(), three.getWaitScope());
    BOOST_TEST(api::to_string(e.code) == "resource_exhausted");
    // Another tenant is not affected.
    auto b = three.getMain<rpc::Gateway>().authenticateRequest();
    b.setToken(k_token_b);
    b.send().wait(three.getWaitScope());
  }
  // Closed connections give their places back.
  BOOST_TEST(eventually([&] { return w.server->stats().connections == 0; }));
  raw_session again(w.address, k_token_a);
}

BOOST_AUTO_TEST_CASE(a_message_over_the_size_limit_ends_its_connection_only) {
  api_world w(without_read_models([](api::server_options& o) { o.max_message_bytes = 64 << 10; }));
  auto c = w.connect();
  api::create_options o;
  o.labels = {{"big", std::string(128 << 10, 'x')}};
  auto r = c.create(o);
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(api::to_string(r.code()) == "unavailable"); // the connection is gone
  auto other = w.connect();
  must(other.create({}));
}

BOOST_AUTO_TEST_CASE(list_pages_newest_first_within_the_tenant) {
  api_world w;
  auto a = w.connect();
  std::vector<std::string> ids;
  for (int i = 0; i < 7; ++i) {
    api::create_options o;
    o.labels = {{"n", std::to_string(i % 2)}};
    ids.push_back(must(a.create(o)).id);
    std::this_thread::sleep_for(2ms); // distinct creation times (microseconds in the model)
  }
  auto b = w.connect(k_token_b);
  must(b.create({}));
  must(a.remove(ids[0]));
  w.wait_for_projection();

  std::vector<std::string> seen;
  api::list_filter f;
  f.limit = 3;
  int pages = 0;
  do {
    auto page = must(a.list(f));
    ++pages;
    for (const auto& s : page.rows)
      seen.push_back(s.id);
    f.page_token = page.next_page_token;
  } while (!f.page_token.empty());
  BOOST_TEST(pages == 2);
  const std::vector<std::string> expected(ids.rbegin(), ids.rend() - 1); // newest first, no deleted
  BOOST_TEST(seen == expected, boost::test_tools::per_element());

  api::list_filter odd;
  odd.labels = {{"n", "1"}};
  BOOST_TEST(must(a.list(odd)).rows.size() == 3u);
  api::list_filter with_deleted;
  with_deleted.include_deleted = true;
  BOOST_TEST(must(a.list(with_deleted)).rows.size() == 7u);
  api::list_filter only_deleted;
  only_deleted.states = {"deleted"};
  auto d = must(a.list(only_deleted));
  BOOST_REQUIRE(d.rows.size() == 1u);
  BOOST_TEST(d.rows[0].id == ids[0]);
  BOOST_TEST(must(b.list()).rows.size() == 1u);

  api::list_filter forged;
  forged.page_token = "zz";
  auto bad = a.list(forged);
  BOOST_REQUIRE(!bad.ok());
  BOOST_TEST(api::to_string(bad.code()) == "invalid_argument");
}

BOOST_AUTO_TEST_CASE(bill_audit_and_verify_from_the_read_models) {
  api_world w(with_manual_clock());
  const auto start = w.clock.now().time_since_epoch().count();
  auto a = w.connect(k_token_admin);
  api::create_options o;
  o.limits.memory_mib = 1024;
  auto sb = must(a.create(o));
  w.clock.advance(2h);
  must(a.pause(sb.id));
  w.wait_for_projection();

  const auto hour = std::int64_t{3600} * 1'000'000'000;
  auto bill = must(a.bill("a", start, start + 3 * hour));
  BOOST_REQUIRE(bill.lines.size() == 1u);
  BOOST_TEST(bill.lines[0].sandbox_id == sb.id);
  // 1 GiB running 2 hours at 15,000 micro-dollars per GiB-hour.
  BOOST_TEST(bill.lines[0].compute_micros == 30'000);
  BOOST_TEST(bill.lines[0].compute_gib_seconds == 7200.0);
  BOOST_TEST(bill.total_micros == bill.lines[0].compute_micros + bill.lines[0].storage_micros);
  BOOST_TEST(!bill.lines[0].event_ids.empty());
  auto hourly = must(a.bill("a", start, start + 3 * hour, api::bill_grouping::hour));
  BOOST_REQUIRE(hourly.lines.size() == 3u);
  BOOST_TEST(hourly.lines[0].compute_micros == 15'000);
  BOOST_TEST(hourly.lines[1].compute_micros == 15'000);
  BOOST_TEST(hourly.lines[2].compute_micros == 0);
  auto odd = a.bill("a", start + 1, start + hour);
  BOOST_REQUIRE(!odd.ok());
  BOOST_TEST(api::to_string(odd.code()) == "invalid_argument");

  api::audit_query q;
  q.tenant = "a";
  q.limit = 2;
  std::vector<std::string> actions;
  std::vector<std::int64_t> times;
  do {
    auto page = must(a.audit(q));
    for (const auto& r : page.rows) {
      actions.push_back(r.action);
      times.push_back(r.occurred_at_ns);
      BOOST_TEST(r.hash.size() == 32u);
      BOOST_TEST(r.sandbox_id == sb.id);
    }
    q.page_token = page.next_page_token;
  } while (!q.page_token.empty());
  const std::vector<std::string> expected{"created", "started", "pause_requested", "paused",
                                          "storage_sampled"};
  BOOST_TEST(actions == expected, boost::test_tools::per_element());
  // A time window: from is inclusive, to exclusive (times far past 2^31, as real ones are).
  BOOST_REQUIRE(times[2] > times[1]);
  api::audit_query window;
  window.tenant = "a";
  window.to_ns = times[2];
  BOOST_TEST(must(a.audit(window)).rows.size() == 2u);
  window.to_ns = 0;
  window.from_ns = times[2];
  BOOST_TEST(must(a.audit(window)).rows.size() == 3u);
  auto v = must(a.audit_verify("a"));
  BOOST_TEST(v.problems.empty());
  BOOST_TEST(v.checked_rows == 5u);
}

BOOST_AUTO_TEST_CASE(watch_streams_history_then_live_until_deleted) {
  api_world w(without_read_models());
  auto a = w.connect();
  auto sb = must(a.create({}));
  must(a.pause(sb.id));
  std::vector<std::string> kinds;
  std::vector<std::uint64_t> seqs;
  std::thread driver;
  std::atomic<bool> driven_ok{false};
  auto end = a.watch(sb.id, 2, [&](const api::streamed_event& e) {
    kinds.emplace_back(events::type_name(e.event.body));
    seqs.push_back(e.event.sequence);
    if (kinds.size() == 4 && !driver.joinable())
      // History delivered: the rest happens live, from another connection and thread.
      driver = std::thread([&] {
        auto c = api::client::connect({w.address, k_token_a});
        driven_ok = c.ok() && c->resume(sb.id).ok() && c->remove(sb.id).ok();
      });
    return true;
  });
  if (driver.joinable())
    driver.join();
  BOOST_TEST(driven_ok.load());
  BOOST_TEST(must(std::move(end)) == "deleted");
  const std::vector<std::string> expected{"started",          "pause_requested",  "paused",
                                          "storage_sampled",  "resume_requested", "resumed",
                                          "delete_requested", "deleted"};
  BOOST_TEST(kinds == expected, boost::test_tools::per_element());
  BOOST_TEST(seqs.front() == 2u);
  BOOST_TEST(std::is_sorted(seqs.begin(), seqs.end()));
}

BOOST_AUTO_TEST_CASE(tail_reads_the_whole_log_and_stops_when_asked) {
  api_world w(without_read_models());
  auto a = w.connect(k_token_admin);
  for (int i = 0; i < 5; ++i)
    must(a.create({}));
  std::size_t in_log = 0;
  for (std::int32_t p = 0; p < w.log.partitions(); ++p)
    in_log += static_cast<std::size_t>(w.log.end_offset(p).offset);
  std::size_t seen = 0;
  std::set<std::pair<std::int32_t, std::int64_t>> positions;
  auto end = must(a.tail({}, false, [&](const api::streamed_event& e) {
    ++seen;
    positions.insert({e.partition, e.offset});
    return true;
  }));
  BOOST_TEST(end == "caught up");
  BOOST_TEST(seen == in_log);
  BOOST_TEST(positions.size() == in_log);
  std::size_t taken = 0;
  auto stopped = must(a.tail({}, true, [&](const api::streamed_event&) { return ++taken < 3; }));
  BOOST_TEST(stopped == "stopped");
  BOOST_TEST(taken == 3u);
}

BOOST_AUTO_TEST_CASE(tcp_on_loopback_and_tls) {
  // A self-signed certificate for localhost, made with the openssl command.
  temp_dir certs("api-tls");
  const auto cert = certs / "cert.pem", key = certs / "key.pem";
  const auto cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost"
                   " -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " +
                   key + " -out " + cert + " >/dev/null 2>&1";
  BOOST_REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, "openssl could not make a certificate");
  api_world w(without_read_models([&](api::server_options& o) {
    o.listen.push_back("tcp:127.0.0.1:0");
    o.tls_on_loopback = true; // TLS as on a remote address
    o.tls_certificate_file = cert;
    o.tls_key_file = key;
  }));
  const auto bound = w.server->addresses();
  BOOST_REQUIRE_EQUAL(bound.size(), 2u);
  BOOST_TEST(bound[1].rfind("tcp:127.0.0.1:", 0) == 0);
  BOOST_TEST(bound[1] != "tcp:127.0.0.1:0"); // the port chosen is reported
  api::client_options plain(bound[1], k_token_a);
  auto refused = api::client::connect(plain);
  BOOST_REQUIRE(!refused.ok());
  BOOST_TEST(api::to_string(refused.code()) == "unavailable");
  api::client_options tls(bound[1], k_token_a);
  tls.tls_server_name = "localhost";
  tls.tls = true;
  tls.tls_trusted_file = cert;
  auto c = api::client::connect(tls);
  BOOST_REQUIRE_MESSAGE(c.ok(), (c ? "" : why(c.err())));
  BOOST_TEST(c->who().tenant == "a");
  BOOST_TEST(must(c->create({})).state == "running");
  // A client that trusts another certificate refuses the server.
  temp_dir other("api-tls-other");
  const auto cmd2 = "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost"
                    " -keyout " +
                    other / "k.pem" + " -out " + other / "c.pem" + " >/dev/null 2>&1";
  BOOST_REQUIRE(std::system(cmd2.c_str()) == 0);
  api::client_options wrong(bound[1], k_token_a);
  wrong.tls_server_name = "localhost";
  wrong.tls = true;
  wrong.tls_trusted_file = other / "c.pem";
  BOOST_TEST(!api::client::connect(wrong).ok());
}

BOOST_AUTO_TEST_CASE(a_server_that_stops_leaves_its_clients_unavailable) {
  api_world w(without_read_models());
  auto c = w.connect();
  auto sb = must(c.create({}));
  w.server.reset(); // stops listening and drops every connection
  auto r = c.get(sb.id);
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(api::to_string(r.code()) == "unavailable");
  auto again = api::client::connect({w.address, k_token_a});
  BOOST_REQUIRE(!again.ok());
  BOOST_TEST(api::to_string(again.code()) == "unavailable");
  BOOST_TEST(!std::filesystem::exists(w.address.substr(5))); // the socket file is gone
}

BOOST_AUTO_TEST_CASE(a_non_loopback_tcp_address_needs_tls_material) {
  try {
    api_world w(
      without_read_models([](api::server_options& o) { o.listen.push_back("tcp:0.0.0.0:0"); }));
    BOOST_FAIL("the server listened on a non-loopback address without TLS");
  } catch (const std::invalid_argument& e) {
    BOOST_TEST(std::string(e.what()).find("needs TLS") != std::string::npos);
  }
}

BOOST_AUTO_TEST_SUITE_END()
