// node_worker — runs a node (embedded PostgreSQL, hollow runtime) on a data directory under
// a mixed workload until it is killed; the child process of test_node's kill -9 case.
//
// Usage: node_worker DIR SEED file|kafka [BROKERS TOPIC]
// The workload's random choices come from SEED (test_node derives it from its printed seed,
// so a failing run can be repeated). The node's data directory is DIR/data. Once started
// it makes DIR/ready. Each acknowledged command is appended to DIR/acks as
// "<sandbox id> <sequence>\n", each acknowledged exec and file write through the control
// plane's operations to DIR/ops as "<sandbox id> exec|write <exec or op id>\n", and each
// projector commit to DIR/commits as "<partition> <next offset>\n", with one write() after
// the fact, so a SIGKILL never loses a line the kernel took: the parent checks every line
// against what the next node finds.
// Execs of the hollow runtime's `sleep 1` and writes are in flight most of the time, so a
// kill finds some between their intent and their outcome.
#include "node/node.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <future>
#include <iostream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace ac = sandboxd::actors;
namespace ev = sandboxd::events;
namespace nd = sandboxd::node;
namespace cmd = sandboxd::actors::cmd;
using namespace std::chrono_literals;

namespace {

void append_line(int fd, const std::string& line) {
  if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    std::abort();
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 6) {
    std::cerr << "usage: node_worker DIR SEED file|kafka [BROKERS TOPIC]\n";
    return 2;
  }
  const std::string dir = argv[1], kind = argv[3];
  const std::uint64_t seed = std::stoull(argv[2]);
  const int acks = ::open((dir + "/acks").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const int commits =
    ::open((dir + "/commits").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const int ops = ::open((dir + "/ops").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

  nd::node_config c;
  c.data_dir = dir + "/data";
  c.partitions = 4;
  if (kind == "kafka") {
    c.log = nd::log_kind::kafka;
    c.kafka.brokers = argv[4];
    c.kafka.topic = argv[5];
    c.kafka.replication_factor = 1;
    c.kafka.min_insync_replicas = 1;
  }
  c.runtimes = {ev::runtime_kind::hollow};
  c.plane.runtime_threads = 4;
  c.plane.timer_poll = 20ms;
  c.on_projection_commit = [commits](const std::map<std::int32_t, std::int64_t>& moved) {
    std::string lines;
    for (const auto& [p, next] : moved)
      lines += std::to_string(p) + " " + std::to_string(next) + "\n";
    append_line(commits, lines);
  };
  nd::node n(c);
  n.start();
  ::close(::open((dir + "/ready").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));

  std::mutex mu;
  std::vector<std::string> ids;
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t)
    clients.emplace_back([&, t] {
      std::mt19937_64 rng(seed + static_cast<std::uint64_t>(t));
      for (int k = 0;; ++k) {
        std::string id;
        {
          std::lock_guard l(mu);
          if (!ids.empty())
            id = ids[rng() % ids.size()];
        }
        ac::command co;
        co.tenant = "t1";
        co.principal = "worker";
        const unsigned pick = id.empty() ? 0 : rng() % 100;
        // An exec or a file write through the control plane's operations (a paused sandbox
        // refuses them: not acknowledged, not recorded).
        if (pick >= 65 && pick < 90) {
          const ac::caller who{"t1", "worker", "w" + std::to_string(t) + "-" + std::to_string(k)};
          std::string line;
          if (pick < 78) {
            ac::exec_request x;
            x.argv = {"sleep", rng() % 2 ? "1" : "0.2"};
            std::promise<ac::op_result<ev::exec_finished>> p;
            n.plane().exec(id, who, x, nullptr, [&p](auto r) { p.set_value(std::move(r)); });
            auto r = p.get_future().get();
            if (r.ok())
              line = id + " exec " + r.value.exec_id + "\n";
          } else {
            std::promise<ac::op_result<ev::file_op_finished>> p;
            n.plane().write_file(id, who, "/workspace/f" + std::to_string(k % 5),
                                 std::string(4096 + rng() % 4096, 'w'), 0644,
                                 [&p](auto r) { p.set_value(std::move(r)); });
            auto r = p.get_future().get();
            if (r.ok())
              line = id + " write " + r.value.op_id + "\n";
          }
          if (!line.empty())
            append_line(ops, line);
          continue;
        }
        if (pick < 20) {
          ev::created spec;
          spec.template_name = "base";
          spec.limits.memory_mib = 256;
          spec.limits.cpu_millicores = 500;
          spec.runtime = ev::runtime_kind::hollow;
          co.body = cmd::create{spec};
          id.clear();
        } else if (pick < 40) {
          co.body = cmd::pause{rng() % 2 ? ev::pause_mode::memory : ev::pause_mode::filesystem};
        } else if (pick < 60) {
          co.body = cmd::resume{};
        } else if (pick < 65) {
          co.body = cmd::remove{};
        } else {
          cmd::exec x;
          x.exec_id = "x" + std::to_string(t) + "-" + std::to_string(k);
          x.argv = {"echo", "hello"};
          co.body = x;
        }
        auto r =
          n.call(id, std::move(co), rng() % 2 ? ac::reply_when::settled : ac::reply_when::durable);
        if (!r.ok()) {
          if (pick < 20)
            std::cerr << "create failed: " << r.failure->message << std::endl;
          continue;
        }
        append_line(acks, r.state.sandbox_id + " " + std::to_string(r.state.sequence) + "\n");
        if (id.empty()) {
          std::lock_guard l(mu);
          ids.push_back(r.state.sandbox_id);
        }
      }
    });
  for (auto& t : clients)
    t.join();
}
