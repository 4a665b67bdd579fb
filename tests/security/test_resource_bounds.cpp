// Resource boundaries attacked through a real sandboxd (docs/security.md "Resource bounds"),
// as a hostile tenant would on the defaults: a sandbox with no --disk counts the layer the
// runtime gives it (10 GiB) against the disk quota; a limit over the node's ceiling is
// refused naming the field and the ceiling; every size-limited field at its limit is
// accepted and one byte over is refused with nothing logged; labels at their limit grow
// the log by at most their size plus 4 KiB; 1,000 uploads never committed leave the daemon's
// RSS within 256 MiB of where it started; 2,000 connections that never authenticate do not
// keep out a client that does; and (crun) a pids quota and ceiling stop a fork bomb while
// another tenant's sandbox still forks; a tenant past its log budget is refused while
// another tenant is not; a 64 MiB request gets a clear error and the client's next call is
// answered.
#define BOOST_TEST_MODULE resource_bounds
#include "api/input_limits.hpp"
#include "api/rpc_error.hpp"
#include "schemas/api.capnp.h"
#include "tests/e2e/api_e2e_support.hpp"

#include <capnp/ez-rpc.h>

#include <filesystem>
#include <pwd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <thread>

using namespace sandboxd::test;
namespace fs = std::filesystem;
namespace rpc = sandboxd::rpc;
using sandboxd::errc;

namespace {

boost::test_tools::assertion_result crun_here(utf::test_unit_id id) {
  return crun_can_run(id);
}

// The embedded PostgreSQL's user, and runuser to act as it.
boost::test_tools::assertion_result postgres_user_here(utf::test_unit_id) {
  boost::test_tools::assertion_result r(::getpwnam("postgres") != nullptr &&
                                        ::access("/usr/sbin/runuser", X_OK) == 0);
  if (!r)
    r.message() << "no postgres user or no /usr/sbin/runuser here; run scripts/setup";
  return r;
}

// The log's content in bytes: every event of the whole log, encoded (read through the
// admin's tail, so file preallocation and indexes do not blur it).
std::uint64_t log_bytes(const daemon_process& d) {
  auto admin = connect(d, d.token());
  std::uint64_t n = 0;
  auto r = admin.tail({}, false, [&](const api::streamed_event& e) {
    n += sandboxd::events::encode(e.event).size();
    return true;
  });
  BOOST_TEST_REQUIRE(r.ok(), (r ? "" : r.err().message));
  return n;
}

struct hollow_world {
  temp_dir config{"bounds"};
  // crun held (so the node's default bounds are on), sandboxes on hollow (cheap).
  daemon_process d{{"--runtime", "crun,hollow", "--default-runtime", "hollow", "--tokens-file",
                    write_tokens_file(config.path()), "--quota-disk-mib", "20480", "--max-disk-mib",
                    "15000"}};
};

// A sandbox of 1 MiB of disk (hollow: no files) for `c`'s tenant.
api::sandbox_info small_sandbox(api::client& c) {
  api::create_options o;
  o.limits.disk_mib = 1;
  return must(c.create(o), "a small sandbox");
}

// The call was refused with invalid_argument naming `what`, and the log did not grow.
template <class T>
void refused_unlogged(const daemon_process& d, std::uint64_t log_before,
                      const sandboxd::result<T>& r, const std::string& what) {
  BOOST_TEST_REQUIRE(!r.ok(), "accepted, expected a refusal naming " << what);
  BOOST_TEST((r.code() == errc::invalid_argument), r.err().message);
  BOOST_TEST(r.err().message.find(what) != std::string::npos, r.err().message);
  BOOST_TEST(log_bytes(d) == log_before, "the refused call put bytes in the log: " << what);
}

// Accepted: not refused for its size (hollow may still answer the command its own way).
template <class T>
void not_refused_for_size(const sandboxd::result<T>& r, const std::string& what) {
  if (!r.ok())
    BOOST_TEST(r.err().message.find("limit") == std::string::npos,
               what << " at its limit was refused: " << r.err().message);
}

} // namespace

BOOST_AUTO_TEST_SUITE(resource_bounds, *utf::precondition(crun_here))

BOOST_AUTO_TEST_CASE(the_disk_quota_counts_the_layer_a_sandbox_gets_without_disk) {
  hollow_world w;
  auto acme = connect(w.d, k_token_acme);
  must(acme.create({}), "acme.create({})"); // 10,240 MiB: the runtime's default layer
  must(acme.create({}), "acme.create({})");
  auto third = acme.create({});
  BOOST_TEST_REQUIRE(!third.ok());
  BOOST_TEST((third.code() == errc::resource_exhausted));
  BOOST_TEST(third.err().message.find("disk quota (20480 MiB in use, 10240 MiB more asked") !=
               std::string::npos,
             third.err().message);
  api::create_options small;
  small.limits.disk_mib = 1;
  BOOST_TEST(!acme.create(small).ok()); // with --disk too
  // Another tenant's quota is its own.
  auto globex = connect(w.d, k_token_globex);
  must(globex.create({}), "globex.create({})");
}

BOOST_AUTO_TEST_CASE(limits_over_the_node_s_ceilings_are_refused_naming_them) {
  hollow_world w;
  auto acme = connect(w.d, k_token_acme);
  const auto before = log_bytes(w.d);
  api::create_options o;
  o.limits.pids = 40000;
  refused_unlogged(w.d, before, acme.create(o), "limits.pids 40000 is over this node's ceiling");
  o = {};
  o.limits.memory_mib = 4'000'000;
  refused_unlogged(w.d, before, acme.create(o), "limits.memoryMib 4000000 MiB is over");
  o = {};
  o.limits.cpu_millicores = 1'000'000;
  refused_unlogged(w.d, before, acme.create(o), "limits.cpuMillicores 1000000 is over");
  o = {};
  o.limits.disk_mib = 15001;
  refused_unlogged(w.d, before, acme.create(o),
                   "limits.diskMib 15001 MiB is over this node's ceiling of 15000 MiB");
}

BOOST_AUTO_TEST_CASE(every_field_at_its_limit_is_accepted_and_one_byte_over_refused_unlogged) {
  hollow_world w;
  auto acme = connect(w.d, k_token_acme);
  const sandboxd::api::input_limits lim; // the node's defaults (docs/api.md "Limits")
  auto grows = [&](auto&& call) {
    const auto before = log_bytes(w.d);
    call();
    return log_bytes(w.d) > before;
  };

  // Labels: a key, a value, all of them together, their count.
  auto with_labels = [](std::vector<sandboxd::events::label> l) {
    api::create_options o;
    o.labels = std::move(l);
    o.limits.disk_mib = 1;
    return o;
  };
  BOOST_TEST(grows([&] {
    must(acme.create(with_labels({{std::string(128, 'k'), "v"}})),
         "acme.create(with_labels({{std::string(12");
  }));
  auto before = log_bytes(w.d);
  refused_unlogged(w.d, before, acme.create(with_labels({{std::string(129, 'k'), "v"}})),
                   "a label key is 129 bytes, over its limit of 128 bytes");
  must(acme.create(with_labels({{"k", std::string(1024, 'v')}})),
       "acme.create(with_labels({{'k', std::stri");
  before = log_bytes(w.d);
  refused_unlogged(w.d, before, acme.create(with_labels({{"k", std::string(1025, 'v')}})),
                   "the value of label k is 1025 bytes, over its limit of 1024 bytes");
  std::vector<sandboxd::events::label> full;
  for (int i = 0; i < 16; ++i) // 16 x (4 + 1020) = 16,384 bytes
    full.push_back({"k" + std::to_string(100 + i), std::string(1020, 'v')});
  must(acme.create(with_labels(full)), "acme.create(with_labels(full))");
  full.back().value += "v";
  before = log_bytes(w.d);
  refused_unlogged(w.d, before, acme.create(with_labels(full)),
                   "labels (keys and values together) is 16385 bytes");
  std::vector<sandboxd::events::label> many;
  for (int i = 0; i < 65; ++i)
    many.push_back({"k" + std::to_string(i), "v"});
  refused_unlogged(w.d, before, acme.create(with_labels(many)), "65 labels given");
  many.pop_back();
  must(acme.create(with_labels(many)), "acme.create(with_labels(many))");

  // The environment of a create.
  api::create_options env;
  env.limits.disk_mib = 1;
  env.env.push_back({"BIG", std::string(lim.env_value_bytes, 'x'), false});
  auto sb = must(acme.create(env), "acme.create(env)");
  env.env.back().value += "x";
  before = log_bytes(w.d);
  refused_unlogged(w.d, before, acme.create(env),
                   "the value of environment variable BIG is 32769 bytes");

  // An exec: an argument, the working directory, stdin.
  api::exec_options x;
  x.argv = {"true", std::string(lim.arg_bytes, 'a')};
  not_refused_for_size(acme.exec(sb.id, x, {}), "an argument");
  x.argv.back() += "a";
  before = log_bytes(w.d);
  refused_unlogged(w.d, before, acme.exec(sb.id, x, {}), "argument 1 is 131073 bytes");
  x.argv = {"true"};
  x.cwd = "/" + std::string(lim.cwd_bytes - 1, 'c');
  not_refused_for_size(acme.exec(sb.id, x, {}), "cwd");
  x.cwd += "c";
  before = log_bytes(w.d);
  refused_unlogged(w.d, before, acme.exec(sb.id, x, {}), "cwd is 4097 bytes");
  x.cwd.clear();
  x.stdin_bytes = std::string(lim.stdin_bytes, 's');
  not_refused_for_size(acme.exec(sb.id, x, {}), "stdin");
  x.stdin_bytes += "s";
  before = log_bytes(w.d);
  refused_unlogged(w.d, before, acme.exec(sb.id, x, {}), "stdin is 1048577 bytes");
  // A path.
  const std::string path = "/" + std::string(lim.path_bytes - 1, 'p');
  not_refused_for_size(acme.stat(sb.id, path), "a path");
  before = log_bytes(w.d);
  refused_unlogged(w.d, before, acme.stat(sb.id, path + "p"), "the path is 4097 bytes");
}

BOOST_AUTO_TEST_CASE(labels_at_their_limit_are_logged_once) {
  hollow_world w;
  auto acme = connect(w.d, k_token_acme);
  std::vector<sandboxd::events::label> full;
  std::size_t size = 0;
  for (int i = 0; i < 16; ++i) {
    full.push_back({"k" + std::to_string(100 + i), std::string(1020, 'v')});
    size += 4 + 1020;
  }
  api::create_options o;
  o.labels = full;
  o.limits.disk_mib = 1;
  const auto before = log_bytes(w.d);
  auto sb = must(acme.create(o), "acme.create(o)");
  must(acme.remove(sb.id), "acme.remove(sb.id)");
  const auto grown = log_bytes(w.d) - before;
  BOOST_TEST_MESSAGE("a sandbox with " << size << " bytes of labels: the log grew " << grown);
  BOOST_TEST(grown <= size + 4096);
}

BOOST_AUTO_TEST_CASE(uploads_never_committed_leave_the_daemon_s_memory_bounded) {
  hollow_world w;
  auto acme = connect(w.d, k_token_acme);
  auto sb = small_sandbox(acme);
  const auto start_kib = rss_kib(w.d.pid());

  int refused = 0, taken = 0;
  std::uint64_t end_kib = 0;
  // Its own thread: a kj event loop of its own, beside the api::client's.
  std::thread([&] {
    capnp::EzRpcClient ez(w.d.address());
    auto& ws = ez.getWaitScope();
    auto auth = ez.getMain<rpc::Gateway>().authenticateRequest();
    auth.setToken(k_token_acme);
    auto session = auth.send().wait(ws).getSession();
    auto get = session.openRequest();
    get.setSandboxId(sb.id);
    auto sandbox = get.send().wait(ws).getSandbox();
    const std::string chunk(1u << 20, 'u');
    std::vector<rpc::Upload::Client> held;
    for (int i = 0; i < 1000; ++i) {
      auto wf = sandbox.writeFileRequest();
      wf.setPath("/upload-" + std::to_string(i));
      try {
        auto up = wf.send().wait(ws).getUpload();
        for (int c = 0; c < 8; ++c) { // 8 MiB each, were it let in
          auto wr = up.writeRequest();
          wr.setData(kj::arrayPtr(reinterpret_cast<const kj::byte*>(chunk.data()), chunk.size()));
          wr.send().wait(ws);
        }
        held.push_back(kj::mv(up));
        ++taken;
      } catch (const kj::Exception& e) {
        const auto err = sandboxd::api::from_exception(e);
        if (err.code != errc::resource_exhausted)
          BOOST_ERROR("an upload failed otherwise: " << err.message);
        ++refused;
      }
    }
    end_kib = rss_kib(w.d.pid()); // the uploads still held
  }).join();
  BOOST_TEST_MESSAGE("1,000 uploads: " << taken << " held, " << refused << " refused; RSS "
                                       << start_kib / 1024 << " -> " << end_kib / 1024 << " MiB");
  BOOST_TEST(refused > 0);
  BOOST_TEST(end_kib <= start_kib + 256 * 1024);
  // Dropped uploads (the connection closed) give their room back: a new one is taken.
  BOOST_TEST(eventually([&] {
    auto r = write_all(acme, sb.id, "/after", "content");
    return r.ok();
  }));
}

BOOST_AUTO_TEST_CASE(connections_that_never_authenticate_do_not_lock_out_a_client) {
  hollow_world w;
  rlimit fds{8192, 8192};
  ::setrlimit(RLIMIT_NOFILE, &fds);
  std::vector<int> idle;
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  const auto path = w.d.socket_path();
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  for (int i = 0; i < 2000; ++i) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    BOOST_TEST_REQUIRE(fd >= 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
      ::close(fd);
      continue; // the backlog is full: the daemon has not taken them yet
    }
    idle.push_back(fd);
  }
  BOOST_TEST_MESSAGE(idle.size() << " idle connections open");
  // A client that authenticates gets in, and its calls are answered.
  auto acme = api::client::connect({w.d.address(), k_token_acme});
  BOOST_TEST_REQUIRE(acme.ok(), (acme ? "" : acme.err().message));
  BOOST_TEST(acme->list().ok());
  for (int fd : idle)
    ::close(fd);
}

BOOST_AUTO_TEST_CASE(a_tenant_past_its_log_budget_is_refused_and_the_log_stops_growing) {
  temp_dir config{"bounds-log"};
  daemon_process d{{"--runtime", "crun,hollow", "--default-runtime", "hollow", "--tokens-file",
                    write_tokens_file(config.path()), "--quota-log-mib-per-hour", "2"}};
  auto acme = connect(d, k_token_acme);
  auto globex = connect(d, k_token_globex);
  auto sb = small_sandbox(acme);
  auto other = small_sandbox(globex);
  // Execs whose arguments are as large as the input limits allow (200 KiB each): about ten
  // fill the 2 MiB budget; the follower sees each record a few milliseconds after it is
  // durable, so the refusals start shortly after.
  api::exec_options x;
  x.argv = {"/bin/true"};
  for (int i = 0; i < 2; ++i)
    x.argv.push_back(std::string(100u << 10, static_cast<char>('a' + i)));
  const auto before = log_bytes(d);
  int taken = 0;
  std::optional<sandboxd::error> refusal;
  for (int i = 0; i < 200 && !refusal; ++i) {
    auto r = acme.exec(sb.id, x, {});
    if (r.ok() || r.code() != errc::resource_exhausted) {
      ++taken; // hollow answers the exec its own way; what counts is that it was logged
      continue;
    }
    refusal = r.err();
  }
  BOOST_TEST_REQUIRE(refusal.has_value(), "200 execs of 200 KiB were all taken");
  BOOST_TEST(refusal->message.find("tenant acme has put") == 0u, refusal->message);
  BOOST_TEST(refusal->message.find("its budget is 2 MiB per hour") != std::string::npos,
             refusal->message);
  const auto grown = log_bytes(d) - before;
  BOOST_TEST_MESSAGE(taken << " execs taken, the log grew " << grown << " bytes");
  // The budget, and at most what was admitted before the follower caught up.
  BOOST_TEST(grown <= (2u << 20) + 8 * (200u << 10) + 65536);
  // Refused from here on, and nothing of it reaches the log.
  const auto at_refusal = log_bytes(d);
  const auto exhausted = [](const sandboxd::result<api::exec_result>& r) {
    return !r.ok() && r.code() == errc::resource_exhausted;
  };
  for (int i = 0; i < 5; ++i)
    BOOST_TEST(exhausted(acme.exec(sb.id, x, {})));
  BOOST_TEST(log_bytes(d) == at_refusal);
  // Another tenant is not held back, and the tenant can still give its sandbox back.
  BOOST_TEST(!exhausted(globex.exec(other.id, x, {})));
  BOOST_TEST(acme.remove(sb.id).ok());
}

BOOST_AUTO_TEST_CASE(a_64_mib_request_gets_a_clear_error_and_the_client_goes_on) {
  hollow_world w;
  auto acme = connect(w.d, k_token_acme);
  auto sb = small_sandbox(acme);
  api::exec_options x;
  x.argv = {"/bin/cat"};
  x.stdin_bytes = std::string(64u << 20, 'x');
  // The client knows the daemon's limit: refused before it is sent, the connection kept.
  auto r = acme.exec(sb.id, x, {});
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST((r.code() == errc::invalid_argument), r.err().message);
  BOOST_TEST(r.err().message.find("request too large: ") == 0u, r.err().message);
  BOOST_TEST(r.err().message.find("sandboxd reads at most 16777216 bytes") != std::string::npos,
             r.err().message);
  BOOST_TEST(acme.get(sb.id).ok());

  // A client that sends it all the same (its limit raised past the daemon's) is cut off by
  // the daemon, which reads no message over its limit. The call says why; the same client's
  // next call connects again and is answered.
  api::client_options big{w.d.address(), k_token_acme};
  big.max_message_bytes = 128u << 20;
  auto c = api::client::connect(big);
  BOOST_TEST_REQUIRE(c.ok(), (c ? "" : c.err().message));
  auto cut = c->exec(sb.id, x, {});
  BOOST_TEST_REQUIRE(!cut.ok());
  BOOST_TEST_MESSAGE("the cut-off call: " << cut.err().message);
  BOOST_TEST(cut.err().message.find("too large") != std::string::npos, cut.err().message);
  auto again = c->get(sb.id);
  BOOST_TEST(again.ok(), (again ? "" : again.err().message));
  // And the daemon still serves everyone.
  BOOST_TEST(acme.list().ok());
}

BOOST_AUTO_TEST_CASE(a_pids_quota_stops_a_fork_bomb_while_another_tenant_forks) {
  temp_dir config{"bounds-pids"};
  daemon_process d{{"--runtime", "crun", "--tokens-file", write_tokens_file(config.path()),
                    "--quota-pids", "300"}};
  auto acme = connect(d, k_token_acme);
  auto globex = connect(d, k_token_globex);
  api::create_options o;
  o.limits.pids = 200;
  o.limits.disk_mib = 256;
  auto bomb = must(acme.create(o), "acme.create(o)");
  // The quota holds: 200 + 200 > 300.
  auto second = acme.create(o);
  BOOST_TEST_REQUIRE(!second.ok());
  BOOST_TEST(second.err().message.find("pids quota (200 pids in use, 200 pids more asked") !=
               std::string::npos,
             second.err().message);
  api::create_options p;
  p.limits.pids = 64;
  p.limits.disk_mib = 256;
  auto other = must(globex.create(p), "globex.create(p)");

  // The bomb, for 6 s, in the background.
  api::exec_options x;
  x.argv = {"/bin/sh", "-c",
            "end=$(( $(date +%s) + 5 )); while [ $(date +%s) -lt $end ]; do "
            "(sleep 4 &) 2>/dev/null; done"};
  x.timeout = std::chrono::seconds(8);
  auto started = must(acme.start(bomb.id, x), "acme.start(bomb.id, x)");
  std::this_thread::sleep_for(std::chrono::seconds(2));
  // Meanwhile the other tenant forks 20 processes and the host forks sandboxctl's peers.
  auto forked = must_shell(globex, other.id,
                           "i=0; while [ $i -lt 20 ]; do sleep 0 & i=$((i+1)); done; wait; "
                           "echo forked");
  BOOST_TEST(forked.out.find("forked") != std::string::npos, forked.out);
  auto bombed = must(acme.wait_exec(bomb.id, started.exec_id), "the bomb");
  // It was forking all along (it ran its 5 s), held at its pids limit.
  BOOST_TEST(bombed.duration_ns >= 4'000'000'000);
}

BOOST_AUTO_TEST_CASE(the_embedded_postgres_user_cannot_open_the_log,
                     *utf::precondition(postgres_user_here)) {
  hollow_world w;
  auto acme = connect(w.d, k_token_acme);
  api::create_options o;
  o.limits.disk_mib = 1;
  o.env.push_back({"TOKEN", "value-in-the-log", false});
  must(acme.create(o), "a sandbox whose create is logged");
  std::string segment;
  for (const auto& e : fs::recursive_directory_iterator(w.d.data() + "/log"))
    if (e.is_regular_file())
      segment = e.path().string();
  BOOST_TEST_REQUIRE(!segment.empty());
  // The server's own user traverses the data directory (it reaches DATA/postgres), and
  // knows the log's name; it can neither list the log nor read a segment.
  auto ls = run_process("/usr/sbin/runuser", {"-u", "postgres", "--", "ls", w.d.data() + "/log"});
  BOOST_TEST(ls.exit_code != 0, ls);
  auto cat = run_process("/usr/sbin/runuser", {"-u", "postgres", "--", "cat", segment});
  BOOST_TEST(cat.exit_code != 0, cat);
  BOOST_TEST(cat.out.find("value-in-the-log") == std::string::npos);
  auto control =
    run_process("/usr/sbin/runuser", {"-u", "postgres", "--", "ls", w.d.data() + "/control"});
  BOOST_TEST(control.exit_code != 0, control);
}

BOOST_AUTO_TEST_SUITE_END()
