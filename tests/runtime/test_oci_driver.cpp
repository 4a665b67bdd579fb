// Real sandboxes (built once for crun, once for runsc): the persistence recipe across a
// filesystem pause, memory pause, exec semantics, limits, and delete leaving nothing.
// Needs root; skipped with the reason when the runtime cannot run here.
#define BOOST_TEST_MODULE oci_driver
#include <boost/test/unit_test.hpp>

#include "tests/runtime/driver_fixture.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <deque>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <sys/stat.h>
#include <thread>

using namespace sandboxd::runtime;
using sandboxd::test::driver_fixture;
using sandboxd::test::driver_under_test;
using sandboxd::test::driver_usable;

namespace {

const bool is_runsc = driver_under_test::kind == oci_runtime::runsc;

struct fixture : driver_fixture {
  oci_driver& oci() { return static_cast<oci_driver&>(*d); }

  exec_result sh(const std::string& id, const std::string& script,
                 std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    exec_request r;
    r.argv = {"/bin/sh", "-c", script};
    r.timeout = timeout;
    auto res = d->exec(id, r);
    BOOST_TEST_REQUIRE(res.ok(), (res ? "" : res.err().message));
    return res.value();
  }

  std::string read(const std::string& id, const std::string& path) {
    auto r = d->read_file(id, path);
    BOOST_TEST_REQUIRE(r.ok(), (r ? "" : r.err().message));
    return r.value();
  }

  // Reads an integer the sandbox keeps writing; polls until `pred` holds (or gives up
  // after a generous deadline, which only guards against a hang).
  template <class P>
  long wait_counter(const std::string& id, P pred) {
    long v = -1;
    for (int i = 0; i < 600; ++i) {
      auto r = d->read_file(id, "/tmp/counter");
      if (r.ok() && !r->empty()) {
        try {
          v = std::stol(r.value());
        } catch (...) {
          v = -1; // caught mid-write
        }
        if (v >= 0 && pred(v))
          return v;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return v;
  }

  // The command lines of every process inside the sandbox.
  std::string processes(const std::string& id) {
    return sh(id, "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done 2>/dev/null")
      .stdout_data;
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(oci, *boost::unit_test::precondition(driver_usable))

BOOST_FIXTURE_TEST_CASE(persistence_recipe_survives_a_filesystem_pause, fixture) {
  running("persist");
  auto w = sh("persist", "mkdir -p /workspace /usr/local/share/check && "
                         "echo workspace-data > /workspace/check.txt && "
                         "echo marker-data > /usr/local/share/check/marker.txt && "
                         "echo etc-data > /etc/check.txt");
  BOOST_TEST_REQUIRE(w.exit_code == 0, w.stderr_data);
  BOOST_TEST_REQUIRE(d->pause("persist", pause_mode::filesystem).ok());

  BOOST_TEST(read("persist", "/workspace/check.txt") == "workspace-data\n");
  BOOST_TEST(read("persist", "/usr/local/share/check/marker.txt") == "marker-data\n");
  BOOST_TEST(read("persist", "/etc/check.txt") == "etc-data\n");
  BOOST_TEST_REQUIRE(d->write_file("persist", "/workspace/next-task.txt", "next\n").ok());
  // Offline: no overlay is mounted and the writable layer holds the files.
  BOOST_TEST(!is_mount_point(data + "/sandboxes/persist/merged"));
  std::ifstream upper(data + "/layers/persist/upper/etc/check.txt");
  BOOST_TEST(upper.good());

  auto r = d->resume("persist");
  BOOST_TEST_REQUIRE(r.ok(), (r ? "" : r.err().message));
  auto seen = sh("persist", "cat /workspace/check.txt /usr/local/share/check/marker.txt "
                            "/etc/check.txt /workspace/next-task.txt");
  BOOST_TEST(seen.exit_code == 0);
  BOOST_TEST(seen.stdout_data == "workspace-data\nmarker-data\netc-data\nnext\n");
}

BOOST_FIXTURE_TEST_CASE(filesystem_pause_ends_processes_and_resume_starts_fresh, fixture) {
  running("fresh");
  sh("fresh", "sleep 1000 >/dev/null 2>&1 &");
  BOOST_TEST(processes("fresh").find("sleep 1000") != std::string::npos);
  BOOST_TEST_REQUIRE(d->pause("fresh", pause_mode::filesystem).ok());
  BOOST_TEST_REQUIRE(d->resume("fresh").ok());
  BOOST_TEST(processes("fresh").find("sleep 1000") == std::string::npos);
}

BOOST_FIXTURE_TEST_CASE(memory_pause_keeps_a_process_and_its_memory, fixture) {
  running("mem");
  auto bg = sh("mem", "i=0; while :; do i=$((i+1)); echo $i > /tmp/counter.new; "
                      "mv /tmp/counter.new /tmp/counter; sleep 0.05; done >/dev/null 2>&1 &");
  BOOST_TEST_REQUIRE(bg.exit_code == 0, bg.stderr_data);
  long before = wait_counter("mem", [](long v) { return v >= 5; });
  BOOST_TEST_REQUIRE(before >= 5);
  BOOST_TEST_REQUIRE(d->pause("mem", pause_mode::memory).ok());
  long at_pause = std::stol(read("mem", "/tmp/counter"));
  BOOST_TEST(at_pause >= before);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  BOOST_TEST(std::stol(read("mem", "/tmp/counter")) == at_pause); // nothing runs while paused
  auto r = d->resume("mem");
  BOOST_TEST_REQUIRE(r.ok(), (r ? "" : r.err().message));
  // The same loop continues from its own count: a restarted loop would begin at 1.
  long after = wait_counter("mem", [&](long v) { return v > at_pause + 3; });
  BOOST_TEST(after > at_pause + 3);
  // The agent that was paused with it answers execs again.
  BOOST_TEST(sh("mem", "echo back").stdout_data == "back\n");
}

BOOST_FIXTURE_TEST_CASE(exec_reports_stdout_stderr_and_exit_codes, fixture) {
  running("ex");
  // Execs run through the agent, the sandbox's first process.
  BOOST_TEST(sh("ex", "tr '\\0' ' ' < /proc/1/cmdline").stdout_data.find("--agent") !=
             std::string::npos);
  auto r = sh("ex", "printf 'out\\0bin'; printf err >&2; exit 7");
  BOOST_TEST(r.exit_code == 7);
  BOOST_TEST(r.signal == 0);
  BOOST_TEST((r.stdout_data == std::string("out\0bin", 7)));
  BOOST_TEST(r.stderr_data == "err");
  BOOST_TEST(!r.timed_out);
  BOOST_TEST(!r.output_truncated);
  BOOST_TEST(sh("ex", "true").exit_code == 0);
  BOOST_TEST(sh("ex", "kill -9 $$").signal == 9);

  exec_request missing;
  missing.argv = {"/no/such/program"};
  auto m = d->exec("ex", missing);
  BOOST_TEST_REQUIRE(m.ok());
  BOOST_TEST(m->exit_code != 0);
}

BOOST_FIXTURE_TEST_CASE(exec_streams_output_to_the_callback, fixture) {
  running("stream");
  std::string seen_out, seen_err;
  exec_request r;
  r.argv = {"/bin/sh", "-c", "echo one; echo two >&2; echo three"};
  r.on_output = [&](output_stream s, std::string_view chunk) {
    (s == output_stream::out ? seen_out : seen_err).append(chunk);
  };
  auto res = d->exec("stream", r);
  BOOST_TEST_REQUIRE(res.ok());
  BOOST_TEST(seen_out == "one\nthree\n");
  BOOST_TEST(seen_err == "two\n");
  BOOST_TEST(res->stdout_data == seen_out);
}

// The agent coalesces a fast writer's pipe reads (busybox's head writes 8 KiB at a time)
// into large frames, and holds a small frame back for at most about a millisecond: a line
// written before a pause still arrives at once, not when the command ends.
BOOST_FIXTURE_TEST_CASE(fast_output_comes_in_large_chunks_and_slow_output_at_once, fixture) {
  running("coalesce");
  constexpr std::size_t k_bytes = 8u << 20;
  std::size_t got = 0, chunks = 0;
  exec_request fast;
  fast.argv = {"head", "-c", std::to_string(k_bytes), "/dev/zero"};
  fast.max_output_bytes = k_bytes;
  fast.on_output = [&](output_stream, std::string_view chunk) {
    got += chunk.size();
    ++chunks;
  };
  auto f = d->exec("coalesce", fast);
  BOOST_TEST_REQUIRE(f.ok());
  BOOST_TEST(f->exit_code == 0);
  BOOST_TEST(got == k_bytes);
  // One chunk per 8 KiB write would be 1,024; frames of 128 KiB and more make at most 64.
  BOOST_TEST(chunks <= 256u, chunks << " chunks for " << k_bytes << " bytes");

  using clock = std::chrono::steady_clock;
  std::string seen;
  std::optional<clock::duration> first_after;
  exec_request slow;
  slow.argv = {"/bin/sh", "-c", "echo first; sleep 2; echo second"};
  const auto t0 = clock::now();
  slow.on_output = [&](output_stream, std::string_view chunk) {
    if (!first_after)
      first_after = clock::now() - t0;
    seen.append(chunk);
  };
  auto s = d->exec("coalesce", slow);
  BOOST_TEST_REQUIRE(s.ok());
  BOOST_TEST(seen == "first\nsecond\n");
  BOOST_TEST_REQUIRE(first_after.has_value());
  BOOST_TEST(std::chrono::duration_cast<std::chrono::milliseconds>(*first_after).count() < 1000,
             "the first line came "
               << std::chrono::duration_cast<std::chrono::milliseconds>(*first_after).count()
               << " ms after the start, with the command's end");
}

BOOST_FIXTURE_TEST_CASE(stdin_is_passed_byte_for_byte_and_absent_stdin_is_eof, fixture) {
  running("in");
  std::string bytes;
  for (int i = 0; i < 256; ++i)
    bytes += static_cast<char>(i);
  bytes = bytes + bytes + std::string(300000, 'z'); // more than a pipe buffer
  exec_request r;
  r.argv = {"cat"};
  r.stdin_data = bytes;
  auto res = d->exec("in", r);
  BOOST_TEST_REQUIRE(res.ok());
  BOOST_TEST(res->exit_code == 0);
  BOOST_TEST((res->stdout_data == bytes));

  exec_request none;
  none.argv = {"/bin/sh", "-c", "cat; echo eof"};
  none.timeout = std::chrono::seconds(30);
  auto n = d->exec("in", none);
  BOOST_TEST_REQUIRE(n.ok());
  BOOST_TEST(!n->timed_out);
  BOOST_TEST(n->stdout_data == "eof\n");
}

BOOST_FIXTURE_TEST_CASE(env_and_cwd_apply_to_one_exec_only, fixture) {
  running("env");
  BOOST_TEST_REQUIRE(d->write_file("env", "/workspace/dir/x", "").ok());
  exec_request r;
  r.argv = {"/bin/sh", "-c", "echo \"$FOO|$PATH\"; pwd"};
  r.env = {{"FOO", "bar baz"}};
  r.cwd = "/workspace/dir";
  auto a = d->exec("env", r);
  BOOST_TEST_REQUIRE(a.ok());
  BOOST_TEST(
    a->stdout_data ==
    "bar baz|/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n/workspace/dir\n");
  auto b = sh("env", "echo \"[$FOO]\"; pwd");
  BOOST_TEST(b.stdout_data == "[]\n/\n");
}

BOOST_FIXTURE_TEST_CASE(several_execs_run_at_the_same_time, fixture) {
  running("par");
  // Each exec waits for a file the next one writes, so they can only all finish if
  // they run concurrently.
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      exec_request r;
      r.argv = {"/bin/sh", "-c",
                "touch /tmp/go" + std::to_string(i) +
                  "; n=0; while [ $n -lt 400 ]; do "
                  "[ -e /tmp/go0 ] && [ -e /tmp/go1 ] && [ -e /tmp/go2 ] && [ -e /tmp/go3 ] && "
                  "exit 0; sleep 0.05; n=$((n+1)); done; exit 1"};
      auto res = d->exec("par", r);
      if (res.ok() && res->exit_code == 0)
        ++ok;
    });
  for (auto& t : threads)
    t.join();
  BOOST_TEST(ok.load() == 4);
}

BOOST_FIXTURE_TEST_CASE(timeout_kills_a_sleeping_child_tree, fixture) {
  running("tmo");
  auto r = sh("tmo", "sh -c 'sleep 1001 & sleep 1002' & sleep 1003; echo never",
              std::chrono::milliseconds(1500));
  BOOST_TEST(r.timed_out);
  BOOST_TEST(r.exit_code == -1);
  BOOST_TEST(r.stdout_data.find("never") == std::string::npos);
  std::string ps;
  for (int i = 0; i < 50; ++i) { // killed processes may take a moment to vanish
    ps = processes("tmo");
    if (ps.find("sleep 100") == std::string::npos)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  BOOST_TEST(ps.find("sleep 100") == std::string::npos, ps);
}

// An exec's guard waits for the next exec only when nothing its program started is left below
// it (runtime/exec_guard/vm_guard.h): what one exec leaves running lives on, reached neither by
// a later exec's timeout nor by its process group.
BOOST_FIXTURE_TEST_CASE(what_an_exec_leaves_running_lives_on_past_later_execs, fixture) {
  running("left");
  auto a = sh("left", "(setsid sleep 3801 >/dev/null 2>&1 &); echo a");
  BOOST_TEST(a.exit_code == 0);
  BOOST_TEST(a.stdout_data == "a\n");
  auto b = sh("left", "sleep 3802", std::chrono::milliseconds(800));
  BOOST_TEST(b.timed_out);
  // `kill 0` reaches the exec's group, its guard included, which ends the exec's tree.
  auto c = sh("left", "sleep 3803 & kill 0; sleep 1; echo never");
  BOOST_TEST(c.signal != 0);
  BOOST_TEST(c.stdout_data.empty());
  std::string ps;
  for (int i = 0; i < 50; ++i) { // killed processes may take a moment to vanish
    ps = processes("left");
    if (ps.find("sleep 3802") == std::string::npos && ps.find("sleep 3803") == std::string::npos)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  BOOST_TEST(ps.find("sleep 3801") != std::string::npos, ps);
  BOOST_TEST(ps.find("sleep 3802") == std::string::npos, ps);
  BOOST_TEST(ps.find("sleep 3803") == std::string::npos, ps);
}

// A signal for an exec whose program has ended reaches nothing, though the exec is not over
// and its guard already runs the next exec: exec A writes more than its output credit (1 MiB,
// its cap too) and ends; the test holds A's output (no credit back), so the agent, which
// reports an exec's end only once it has read what the pipes hold (stderr might hold more),
// keeps A open while A's guard, idle, is handed exec B; then A is sent SIGKILL.
BOOST_FIXTURE_TEST_CASE(a_signal_for_an_ended_exec_never_reaches_the_next, fixture) {
  running("late");
  std::mutex mu;
  std::condition_variable cv;
  bool a_output = false, release = false, b_runs = false;
  std::size_t a_bytes = 0;
  std::optional<outcome<exec_result>> a_result;
  std::thread a_thread([&] {
    exec_request a;
    a.exec_id = "a";
    a.argv = {"head", "-c", "1200000", "/dev/zero"};
    a.on_output = [&](output_stream, std::string_view chunk) {
      std::unique_lock g(mu);
      a_output = true;
      a_bytes += chunk.size();
      cv.notify_all();
      cv.wait(g, [&] { return release; });
    };
    a_result.emplace(d->exec("late", a));
  });
  struct release_a {
    std::mutex& mu;
    std::condition_variable& cv;
    bool& release;
    std::thread& t;
    ~release_a() {
      {
        std::lock_guard g(mu);
        release = true;
      }
      cv.notify_all();
      if (t.joinable())
        t.join();
    }
  } released{mu, cv, release, a_thread};
  {
    std::unique_lock g(mu);
    BOOST_TEST_REQUIRE(cv.wait_for(g, std::chrono::seconds(60), [&] { return a_output; }));
  }
  std::this_thread::sleep_for(std::chrono::seconds(1)); // head ends, its guard waits
  std::optional<outcome<exec_result>> b_result;
  std::thread b_thread([&] {
    exec_request b;
    b.argv = {"/bin/sh", "-c", "echo b1; sleep 2; echo b2"};
    b.on_output = [&](output_stream, std::string_view) {
      std::lock_guard g(mu);
      b_runs = true;
      cv.notify_all();
    };
    b_result.emplace(d->exec("late", b));
  });
  {
    std::unique_lock g(mu);
    BOOST_TEST(cv.wait_for(g, std::chrono::seconds(60), [&] { return b_runs; }));
  }
  auto s = d->signal_exec("late", "a", SIGKILL);
  BOOST_TEST(!s.ok(), "A's signal reached a process");
  b_thread.join();
  BOOST_TEST_REQUIRE(b_result->ok(), (b_result->ok() ? "" : b_result->err().message));
  BOOST_TEST((*b_result)->signal == 0);
  BOOST_TEST((*b_result)->exit_code == 0);
  BOOST_TEST((*b_result)->stdout_data == "b1\nb2\n");
  {
    std::lock_guard g(mu);
    release = true;
  }
  cv.notify_all();
  a_thread.join();
  BOOST_TEST_REQUIRE(a_result->ok(), (a_result->ok() ? "" : a_result->err().message));
  BOOST_TEST((*a_result)->exit_code == 0);
  BOOST_TEST((*a_result)->output_truncated);
  BOOST_TEST(a_bytes == (1u << 20));
}

BOOST_FIXTURE_TEST_CASE(output_flood_is_truncated_at_the_cap, fixture) {
  limits l;
  l.max_output_bytes = 1 << 20;
  running("flood", l);
  auto r = sh("flood", "head -c 100000000 /dev/zero; echo done >&2");
  BOOST_TEST(r.exit_code == 0);
  BOOST_TEST(r.output_truncated);
  BOOST_TEST(r.stdout_data.size() == (1u << 20));
  BOOST_TEST(r.stderr_data == "done\n");
}

namespace {

// An exec of `script` as `user`, its result (failing the test when it is refused).
exec_result as_user(driver& d, const std::string& id, const std::string& user,
                    const std::string& script) {
  exec_request r;
  r.argv = {"/bin/sh", "-c", script};
  r.user = user;
  auto res = d.exec(id, r);
  BOOST_TEST_REQUIRE(res.ok(), user << ": " << (res ? "" : res.err().message));
  return res.value();
}

// Execs run as the user a request names, looked up in the sandbox's own /etc/passwd and
// /etc/group at each exec (so an account added after the template is found too).
void execs_run_as_the_named_user(driver& d, const std::string& id) {
  auto add = d.write_file(id, "/etc/passwd",
                          "root:x:0:0:root:/root:/bin/sh\n"
                          "app:x:1000:1000:app:/home/app:/bin/sh\n"
                          "nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
                          0644);
  BOOST_TEST_REQUIRE(add.ok(), (add ? "" : add.err().message));
  BOOST_TEST_REQUIRE(
    d.write_file(id, "/etc/group", "root:x:0:\nstaff:x:50:app\nnogroup:x:65534:\n", 0644).ok());
  const std::string who = "id -u; id -g; id -G; echo $HOME";
  BOOST_TEST(as_user(d, id, "", who).stdout_data == "0\n0\n0\n/root\n");
  BOOST_TEST(as_user(d, id, "nobody", who).stdout_data == "65534\n65534\n65534\n/nonexistent\n");
  BOOST_TEST(as_user(d, id, "app", who).stdout_data == "1000\n1000\n1000 50\n/home/app\n");
  BOOST_TEST(as_user(d, id, "app:staff", who).stdout_data == "1000\n50\n50\n/home/app\n");
  BOOST_TEST(as_user(d, id, "1234:4321", "id -u; id -g").stdout_data == "1234\n4321\n");
  // Not root: no capability, so root's files are out of reach.
  auto caps = as_user(d, id, "nobody",
                      "grep -E '^CapEff' /proc/self/status; echo x >> /etc/passwd; echo rc=$?");
  BOOST_TEST(caps.stdout_data.find("0000000000000000") != std::string::npos, caps.stdout_data);
  BOOST_TEST(caps.stdout_data.find("rc=0") == std::string::npos, caps.stdout_data);
  // The sandbox's environment may still name HOME.
  exec_request h;
  h.argv = {"/bin/sh", "-c", "echo $HOME"};
  h.user = "app";
  h.env = {{"HOME", "/srv"}};
  BOOST_TEST(d.exec(id, h)->stdout_data == "/srv\n");
  for (const char* bad : {"ghost", "app:wheel", "65536", "app:70000", "a b"}) {
    exec_request r;
    r.argv = {"true"};
    r.user = bad;
    auto res = d.exec(id, r);
    BOOST_TEST((res.code() == sandboxd::errc::invalid_argument), bad);
  }
  exec_request ghost;
  ghost.argv = {"true"};
  ghost.user = "ghost";
  auto g = d.exec(id, ghost);
  BOOST_TEST(g.err().message.find("user 'ghost' is not in the sandbox's /etc/passwd") !=
               std::string::npos,
             g.err().message);
}

} // namespace

BOOST_FIXTURE_TEST_CASE(execs_run_as_the_user_they_name, fixture) {
  running("user");
  execs_run_as_the_named_user(*d, "user");
}

// A terminal: keys typed into it, the shell's prompt and echo coming back, its size as the
// program sees it, a resize while it runs, a full-screen program, and its exit status.
struct terminal_session {
  std::mutex mu;
  std::condition_variable cv;
  std::string screen;           // everything the terminal printed
  std::deque<std::string> keys; // typed, not yet taken by the driver
  bool closed = false;

  void type(const std::string& k) {
    std::lock_guard g(mu);
    keys.push_back(k);
    cv.notify_all();
  }
  void close() {
    std::lock_guard g(mu);
    closed = true;
    cv.notify_all();
  }
  // Waits until the screen holds `text` after `from` (a generous bound that only guards
  // against a hang); the offset just past it.
  std::size_t wait_for(const std::string& text, std::size_t from = 0) {
    std::unique_lock g(mu);
    cv.wait_for(g, std::chrono::seconds(30),
                [&] { return screen.find(text, from) != std::string::npos; });
    auto at = screen.find(text, from);
    BOOST_TEST_REQUIRE(at != std::string::npos, "no '" << text << "' on the screen: " << screen);
    return at + text.size();
  }
};

BOOST_FIXTURE_TEST_CASE(a_terminal_exec_gets_a_pty_that_resizes, fixture) {
  running("tty");
  terminal_session t;
  exec_request r;
  r.exec_id = "term";
  r.argv = {"/bin/sh"};
  r.env = {{"PS1", "prompt> "}, {"TERM", "xterm"}};
  r.terminal = std::pair<std::uint16_t, std::uint16_t>{80, 24};
  r.stdin_source = [&](std::string& chunk) {
    std::unique_lock g(t.mu);
    t.cv.wait(g, [&] { return t.closed || !t.keys.empty(); });
    if (t.keys.empty())
      return false;
    chunk = std::move(t.keys.front());
    t.keys.pop_front();
    return true;
  };
  r.on_output = [&](output_stream s, std::string_view data) {
    BOOST_TEST((s == output_stream::out)); // a terminal has one output
    std::lock_guard g(t.mu);
    t.screen.append(data);
    t.cv.notify_all();
  };
  std::optional<outcome<exec_result>> result;
  std::thread runner([&] { result.emplace(d->exec("tty", r)); });
  struct end_on_failure { // a failed check must not leave the exec running
    fixture& f;
    terminal_session& t;
    std::thread& runner;
    ~end_on_failure() {
      if (!runner.joinable())
        return;
      (void)f.d->signal_exec("tty", "term", SIGKILL);
      t.close();
      runner.join();
    }
  } ended{*this, t, runner};
  auto at = t.wait_for("prompt> "); // an interactive shell: stdin is a terminal
  t.type("tty; stty size; echo $((6*7))\n");
  at = t.wait_for("/dev/pts/", at);
  at = t.wait_for("24 80\r\n", at); // the terminal turns \n into \r\n
  at = t.wait_for("42\r\n", at);
  auto resized = d->resize_exec("tty", "term", 132, 50);
  BOOST_TEST_REQUIRE(resized.ok(), (resized ? "" : resized.err().message));
  t.type("stty size\n");
  at = t.wait_for("50 132\r\n", at);
  // A full-screen program draws with escape sequences into it.
  t.type("top -b -n1 | head -3; clear; echo dr"
         "awn\n");
  at = t.wait_for("Mem:", at);
  at = t.wait_for("\x1b[", at); // clear's escape
  at = t.wait_for("drawn", at);
  // ^C reaches the foreground program, not the shell.
  t.type("echo sleeping; /bin/sleep 1000\n");
  at = t.wait_for("sleeping\r\n", at);
  // Once it runs it is the terminal's foreground job (the shell made it so before its exec).
  exec_request seen;
  seen.argv = {"/bin/sh", "-c", "while ! pidof sleep >/dev/null; do usleep 10000; done"};
  seen.timeout = std::chrono::seconds(30);
  BOOST_TEST_REQUIRE(d->exec("tty", seen)->exit_code == 0);
  t.type("\x03");
  t.type("echo after $?\n");
  at = t.wait_for("after 130", at);
  BOOST_TEST((d->resize_exec("tty", "nope", 10, 10).code() == sandboxd::errc::not_found));
  BOOST_TEST((d->resize_exec("tty", "term", 0, 10).code() == sandboxd::errc::invalid_argument));
  BOOST_TEST((d->resize_exec("tty", "term", 10, 5000).code() == sandboxd::errc::invalid_argument));
  t.type("exit 3\n");
  t.close(); // the driver waits for a pull in progress: no more keys come
  runner.join();
  BOOST_TEST_REQUIRE(result->ok(), (result->ok() ? "" : result->err().message));
  BOOST_TEST((*result)->exit_code == 3);
  BOOST_TEST((*result)->stderr_data.empty());
  // An exec without a terminal has none to resize; a terminal of no size is refused.
  exec_request plain;
  plain.exec_id = "plain";
  plain.argv = {"sleep", "5"};
  std::thread p([&] { (void)d->exec("tty", plain); });
  BOOST_TEST(d->signal_exec("tty", "plain", 0).ok()); // waits for it to run
  BOOST_TEST((d->resize_exec("tty", "plain", 10, 10).code() == sandboxd::errc::invalid_argument));
  BOOST_TEST(d->signal_exec("tty", "plain", SIGKILL).ok());
  p.join();
  exec_request zero;
  zero.argv = {"true"};
  zero.terminal = std::pair<std::uint16_t, std::uint16_t>{0, 24};
  BOOST_TEST((d->exec("tty", zero).code() == sandboxd::errc::invalid_argument));
}

// A driver whose new containers run without the agent (oci_options::agent off): execs go
// through the runtime (`crun exec`, `runsc exec`) under the guard, with the same semantics.
struct fallback_fixture : fixture {
  fallback_fixture() {
    d.reset();
    d = driver_under_test::make(data, false);
  }
  std::string init(const std::string& id) {
    return sh(id, "tr '\\0' ' ' < /proc/1/cmdline").stdout_data;
  }
};

BOOST_FIXTURE_TEST_CASE(without_the_agent_execs_run_through_the_runtime_alike, fallback_fixture) {
  limits l;
  l.max_output_bytes = 1000;
  running("fb", l);
  BOOST_TEST(init("fb").find("--agent") == std::string::npos);
  auto r = sh("fb", "printf out; printf err >&2; echo \"$FOO\" >&2; exit 7");
  BOOST_TEST(r.exit_code == 7);
  BOOST_TEST(r.stdout_data == "out");
  BOOST_TEST(r.stderr_data == "err\n");
  exec_request in;
  in.argv = {"/bin/sh", "-c", "cat; echo \"$FOO\""};
  in.env = {{"FOO", "bar"}};
  in.stdin_data = std::string("a\0b", 3);
  auto i = d->exec("fb", in);
  BOOST_TEST_REQUIRE(i.ok(), (i ? "" : i.err().message));
  BOOST_TEST((i->stdout_data == std::string("a\0bbar\n", 7)));
  auto capped = sh("fb", "head -c 100000 /dev/zero");
  BOOST_TEST(capped.output_truncated);
  BOOST_TEST(capped.stdout_data.size() == 1000u);
  auto t =
    sh("fb", "(setsid sleep 3601 >/dev/null 2>&1 &); sleep 3602", std::chrono::milliseconds(1000));
  BOOST_TEST(t.timed_out);
  std::string ps;
  for (int n = 0; n < 50; ++n) {
    ps = processes("fb");
    if (ps.find("sleep 360") == std::string::npos)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  BOOST_TEST(ps.find("sleep 360") == std::string::npos, ps);

  // Made afresh (a filesystem resume), the container still runs without the agent here.
  BOOST_TEST_REQUIRE(d->pause("fb", pause_mode::filesystem).ok());
  BOOST_TEST_REQUIRE(d->resume("fb").ok());
  BOOST_TEST(init("fb").find("--agent") == std::string::npos);
  BOOST_TEST(sh("fb", "echo again").stdout_data == "again\n");
}

BOOST_FIXTURE_TEST_CASE(without_the_agent_execs_run_as_the_user_they_name, fallback_fixture) {
  running("fbuser");
  BOOST_TEST(init("fbuser").find("--agent") == std::string::npos);
  execs_run_as_the_named_user(*d, "fbuser");
}

BOOST_FIXTURE_TEST_CASE(memory_hog_beyond_the_limit_is_killed_and_reported, fixture) {
  limits l;
  l.memory_bytes = 256ull << 20;
  running("hog", l);
  // Doubling a shell variable reaches the limit in a few seconds even under gVisor.
  auto r = sh("hog", "x=a; while [ ${#x} -lt 1000000000 ]; do x=$x$x; done; echo survived");
  BOOST_TEST(r.oom_killed);
  BOOST_TEST(r.exit_code == -1);
  BOOST_TEST(r.signal == 9);
  BOOST_TEST(r.stdout_data.find("survived") == std::string::npos);
  auto st = d->inspect("hog")->status;
  if (is_runsc && st == sandbox_status::stopped) {
    // gVisor's kernel is in the limited cgroup too: an older runsc ends as a whole (the
    // current one has its kernel kill the offender).
    BOOST_TEST_REQUIRE(d->start("hog").ok());
  } else {
    BOOST_TEST((st == sandbox_status::running));
  }
  BOOST_TEST(sh("hog", "echo alive").stdout_data == "alive\n");
}

BOOST_FIXTURE_TEST_CASE(fork_bomb_is_stopped_by_the_pids_limit_and_host_stays_responsive, fixture) {
  limits l;
  l.pids = 128;
  l.memory_bytes = 1ull << 30;
  running("bomb", l);
  exec_request bomb;
  bomb.argv = {"/bin/sh", "-c", "f(){ f | f & }; f; sleep 3; echo bombed"};
  bomb.timeout = std::chrono::seconds(20);
  auto res = d->exec("bomb", bomb);
  // Under runsc the bomb can take the sandbox down with the exec (runsc then reports the
  // exec's end as an error); crun's exec always answers.
  if (!is_runsc)
    BOOST_TEST_REQUIRE(res.ok(), (res ? "" : res.err().message));
  const exec_result r = res ? res.value() : exec_result{};
  // The host forks and runs a program at once.
  BOOST_TEST(sandboxd::test::run_shell("echo host-ok").output == "host-ok\n");
  std::string events;
  std::ifstream("/sys/fs/cgroup/pids" + oci().cgroup_path("bomb") + "/pids.events") >> events >>
    events;
  auto st = d->inspect("bomb")->status;
  if (is_runsc) {
    // The bomb exhausts the sandbox's pids: it ends as a whole, or survives throttled (the
    // shell says it cannot fork, or runsc's own exec client loses its wait on the shell,
    // "containerManager.WaitPID failed: EOF", and says so on stderr with a failed exit).
    const bool lost_wait =
      res && r.exit_code != 0 && r.stderr_data.find("WaitPID") != std::string::npos;
    BOOST_TEST((st == sandbox_status::stopped || !res || lost_wait ||
                r.stderr_data.find("fork") != std::string::npos),
               (res ? r.stderr_data.substr(0, 300) : res.err().message));
  } else {
    BOOST_TEST((st == sandbox_status::running));
    BOOST_TEST(std::stol(events) > 0, "pids.max was never hit");
    BOOST_TEST(r.stderr_data.find("can't fork") != std::string::npos);
  }
  BOOST_TEST_REQUIRE(d->remove("bomb").ok());
}

BOOST_FIXTURE_TEST_CASE(remove_leaves_no_mount_process_directory_or_runtime_state, fixture) {
  running("del");
  sh("del", "sleep 1000 >/dev/null 2>&1 & echo x > /workspace/x");
  BOOST_TEST_REQUIRE(d->pause("del", pause_mode::memory).ok());
  BOOST_TEST_REQUIRE(d->remove("del").ok());
  // remove() returns with the directory out of sandboxes/; its files go in the background.
  BOOST_TEST(!std::filesystem::exists(data + "/sandboxes/del"));
  oci().drain_removals();
  BOOST_TEST(std::filesystem::is_empty(data + "/removing"));
  // What may stay is a spare skeleton for the next sandbox: empty directories (the
  // writable layer a new one) and empty files.
  for (auto& e : std::filesystem::recursive_directory_iterator(data + "/spare")) {
    if (e.is_directory())
      BOOST_TEST(std::filesystem::is_empty(e.path()) != (e.path().parent_path() == data + "/spare"),
                 e.path());
    if (e.is_regular_file())
      BOOST_TEST(e.file_size() == 0u, e.path());
  }

  // Nothing is mounted below the data directory but the layer pool itself and runsc's
  // empty network namespace (both kept while the driver lives), and the sandbox's layer
  // is gone from the pool.
  std::ifstream mounts("/proc/mounts");
  std::string line;
  while (std::getline(mounts, line))
    if (line.find(data) != std::string::npos)
      BOOST_TEST((line.find(" " + data + "/layers ") != std::string::npos ||
                  line.find(" " + data + "/state/runsc/null-netns ") != std::string::npos),
                 line);
  BOOST_TEST(!std::filesystem::exists(data + "/layers/del"));
  auto ps = sandboxd::test::run_shell("ps -eo args | grep -F -- " +
                                      sandboxd::test::shell_quote(data) + " | grep -v grep");
  BOOST_TEST(ps.output == "");
  BOOST_TEST(!std::filesystem::exists(data + "/sandboxes/del"));
  BOOST_TEST(!std::filesystem::exists("/sys/fs/cgroup/memory" + oci().cgroup_path("del")));
  BOOST_TEST(!std::filesystem::exists("/sys/fs/cgroup/pids" + oci().cgroup_path("del")));
  std::string cmd;
  for (auto& a : oci().runtime_command())
    cmd += sandboxd::test::shell_quote(a) + " ";
  auto listed = sandboxd::test::run_shell(cmd + "list");
  BOOST_TEST(listed.exit_code == 0);
  BOOST_TEST(listed.output.find("del") == std::string::npos, listed.output);
  BOOST_TEST(d->list()->empty());
}

// A data directory below a directory closed to other users (a node's data directory is
// 0700) is worked through a bind of it under /run/sandboxd, which is gone again with the
// last sandbox and the driver.
BOOST_FIXTURE_TEST_CASE(a_data_directory_below_a_closed_directory_works_through_an_entry, fixture) {
  std::string closed = dir.path() + "/closed";
  std::filesystem::create_directories(closed);
  ::chmod(closed.c_str(), 0700);
  std::string entry;
  {
    oci_options o;
    o.runtime = driver_under_test::kind;
    o.data_dir = closed + "/data";
    oci_driver inner(o);
    entry = inner.working_dir();
    BOOST_TEST(entry.rfind("/run/sandboxd/", 0) == 0u, entry);
    BOOST_TEST(is_mount_point(entry));
    create_request req;
    req.id = "behind";
    BOOST_TEST_REQUIRE(inner.create(req).ok());
    BOOST_TEST_REQUIRE(inner.start("behind").ok());
    exec_request e;
    e.argv = {"echo", "through"};
    auto r = inner.exec("behind", e);
    BOOST_TEST_REQUIRE(r.ok(), (r ? "" : r.err().message));
    BOOST_TEST(r->stdout_data == "through\n", r->stderr_data);
    // Files are where the data directory is.
    BOOST_TEST_REQUIRE(inner.write_file("behind", "/workspace/x", "x", 0644).ok());
    BOOST_TEST_REQUIRE(inner.remove("behind").ok());
    inner.drain_removals();
  }
  BOOST_TEST(!std::filesystem::exists(entry));
}

BOOST_AUTO_TEST_SUITE_END()
