// crash_loop_worker — runs the actor system on a data directory under a mixed workload
// until it is killed; the child process of test_crash_loop.
//
// Usage: crash_loop_worker hollow|crun DATA_DIR SEED [FAULT_SEED]
// Each acknowledged command is written to DATA_DIR/acks as one line, with one write() after
// the reply arrives, so a SIGKILL never loses a line the kernel took:
//   <sandbox id> <sequence of the command's own event> <event type> <key fields...>
// (sequence 0 and type created-again / delete-again: accepted without an event). The parent
// checks the event at that sequence in the log against the line.
// With FAULT_SEED, the log is a faulty_log that fails appends at random (not stored, or
// maybe stored: written, lost or late), each injected fault named in DATA_DIR/faults.
#include "actors/control_plane.hpp"
#include "events/file_log.hpp"
#include "runtime/hollow_driver.hpp"
#include "runtime/oci_driver.hpp"
#include "tests/actors/faulty_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace ac = sandboxd::actors;
namespace ev = sandboxd::events;
namespace rt = sandboxd::runtime;
namespace cmd = sandboxd::actors::cmd;
using namespace std::chrono_literals;

namespace {

// What the acknowledgement of `c` says about the event at the reply's own sequence.
std::string ack_line(const ac::command& c, const ac::command_reply& r) {
  std::string what;
  if (auto* x = std::get_if<cmd::create>(&c.body)) {
    const auto& crid = x->spec.client_request_id;
    what = r.own_sequence == 0
             ? "created-again " + crid
             : "created " + x->spec.template_name + " " + (crid.empty() ? std::string("-") : crid) +
                 " " + std::to_string(x->spec.limits.memory_mib);
  } else if (auto* p = std::get_if<cmd::pause>(&c.body)) {
    what = "pause_requested " + ev::to_string(p->mode);
  } else if (std::holds_alternative<cmd::resume>(c.body)) {
    what = "resume_requested";
  } else if (std::holds_alternative<cmd::remove>(c.body)) {
    what = r.own_sequence == 0 ? "delete-again" : "delete_requested";
  } else if (auto* t = std::get_if<cmd::set_timeout>(&c.body)) {
    what =
      "timeout_changed " +
      std::to_string(
        std::chrono::duration_cast<std::chrono::milliseconds>(t->timeouts.idle_timeout).count());
  } else if (auto* e = std::get_if<cmd::exec>(&c.body)) {
    what = "exec_started " + e->exec_id + " " + e->argv.at(0);
  }
  return r.state.sandbox_id + " " + std::to_string(r.own_sequence) + " " + what + "\n";
}

// Appends `line` to `fd` with one write(), or ends the process (a lost line would be a
// false alarm or a check not made).
void write_line(int fd, const std::string& line) {
  if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    std::abort();
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::cerr << "usage: crash_loop_worker hollow|crun DATA_DIR SEED [FAULT_SEED]\n";
    return 2;
  }
  const std::string kind = argv[1], dir = argv[2];
  const auto seed = std::stoull(argv[3]);
  ev::file_log file(ev::file_log_options{dir + "/log", 4});
  sandboxd::test::faulty_log log(file);
  if (argc == 5) {
    const int faults =
      ::open((dir + "/faults").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    log.set_late_by(5ms);
    log.on_injected([faults](sandboxd::test::append_fault f) {
      write_line(faults, std::string(sandboxd::test::to_string(f)) + "\n");
    });
    // crun workers append about ten times less in a round: a higher rate, as many faults.
    const double rate = kind == "crun" ? 0.08 : 0.03;
    log.fail_randomly(std::stoull(argv[4]), rate, rate);
  }
  std::unique_ptr<rt::driver> driver;
  if (kind == "crun") {
    rt::oci_options o;
    o.runtime = rt::oci_runtime::crun;
    o.data_dir = dir + "/runtime";
    driver = std::make_unique<rt::oci_driver>(o);
  } else {
    driver = std::make_unique<rt::hollow_driver>(rt::hollow_options{dir + "/runtime", {}});
  }
  ac::control_plane_options o;
  o.log = &log;
  o.driver = driver.get();
  o.data_dir = dir + "/data";
  o.runtime_threads = 4;
  o.timer_poll = 20ms;
  o.passivate_after = 100ms;
  o.storage_sample_interval = 500ms;
  o.snapshot_every_records = 200;
  ac::control_plane plane(o);
  std::cout << "recovered " << plane.recovery().sandboxes << " sandboxes" << std::endl;

  const int acks = ::open((dir + "/acks").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  std::mutex mu;
  std::vector<std::string> ids;
  const int clients = kind == "crun" ? 2 : 6;
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t)
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(seed * 31 + static_cast<std::uint64_t>(t));
      for (int n = 0;; ++n) {
        std::string id;
        {
          std::lock_guard l(mu);
          if (!ids.empty())
            id = ids[rng() % ids.size()];
        }
        ac::command c;
        c.tenant = "t1";
        c.principal = "worker";
        const unsigned pick = id.empty() ? 0 : rng() % 100;
        if (pick < 20) {
          ev::created s;
          s.template_name = "base";
          s.limits.memory_mib = 128;
          s.limits.cpu_millicores = 500;
          s.runtime = kind == "crun" ? ev::runtime_kind::crun : ev::runtime_kind::hollow;
          if (rng() % 3 == 0)
            s.client_request_id = "req-" + std::to_string(rng() % 50);
          if (rng() % 4 == 0)
            s.timeouts.idle_timeout = 300ms;
          if (rng() % 5 == 0)
            s.timeouts.max_lifetime = 2s;
          if (rng() % 5 == 0)
            s.timeouts.paused_retention = 500ms;
          c.body = cmd::create{s};
          id.clear();
        } else if (pick < 40) {
          c.body = cmd::pause{rng() % 2 ? ev::pause_mode::memory : ev::pause_mode::filesystem};
        } else if (pick < 60) {
          c.body = cmd::resume{};
        } else if (pick < 70) {
          c.body = cmd::remove{};
        } else if (pick < 80) {
          ev::sandbox_timeouts to;
          to.idle_timeout = 400ms;
          c.body = cmd::set_timeout{to};
        } else {
          cmd::exec x;
          x.exec_id = "x" + std::to_string(t) + "-" + std::to_string(n);
          x.argv = {"echo", "hello"};
          c.body = x;
        }
        const auto when = rng() % 2 ? ac::reply_when::settled : ac::reply_when::durable;
        auto r = plane.call(id, c, when);
        if (!r.ok())
          continue;
        write_line(acks, ack_line(c, r));
        if (id.empty()) {
          std::lock_guard l(mu);
          ids.push_back(r.state.sandbox_id);
        }
      }
    });
  for (auto& t : threads)
    t.join();
}
