// node_fixture — what the node tests share: a data directory that a guardian cleans even
// when the test dies (containers deleted, overlays unmounted, processes working in it
// killed, the directory removed), the event log under test (file_log, or kafka_log on the
// real broker: SANDBOXD_NODE_LOG=kafka in the environment), configs, command builders and
// the log's view of one sandbox.
#pragma once

#include "actors/control_plane.hpp"
#include "events/event.hpp"
#include "node/node.hpp"
#include "runtime/data_entry.hpp"
#include "runtime/driver.hpp"
#include "tests/support/guardian.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/node_cleanup.hpp"
#include "tests/support/pg_server.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/test/unit_test.hpp>

#include <pqxx/pqxx>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace sandboxd::actors {
inline std::ostream& operator<<(std::ostream& o, sandbox_status s) {
  return o << to_string(s);
}
} // namespace sandboxd::actors
namespace sandboxd::runtime {
inline std::ostream& operator<<(std::ostream& o, sandbox_status s) {
  return o << to_string(s);
}
inline std::ostream& operator<<(std::ostream& o, errc c) {
  return o << to_string(c);
}
} // namespace sandboxd::runtime
namespace sandboxd::events {
inline std::ostream& operator<<(std::ostream& o, runtime_kind k) {
  return o << to_string(k);
}
inline std::ostream& operator<<(std::ostream& o, pause_mode m) {
  return o << to_string(m);
}
} // namespace sandboxd::events

namespace sandboxd::test {

using namespace std::chrono_literals;
namespace ev = sandboxd::events;
namespace ac = sandboxd::actors;
namespace rt = sandboxd::runtime;
namespace nd = sandboxd::node;

// /tmp/sandboxd-test-node-XXXXXX, mode 0711 so that the embedded PostgreSQL's user can
// traverse it; the node's data directory is its `data`.
class node_dir {
public:
  node_dir() : tmp_("node") {
    ::chmod(tmp_.path().c_str(), 0711);
    std::vector<std::string> entries;
    for (const char* sub : {"/data", "/data/runtimes/crun", "/data/runtimes/runsc"})
      entries.push_back(runtime::entry_path(tmp_.path() + sub, "/run/sandboxd"));
    guardian_ = std::make_unique<guardian>(node_cleanup_command(tmp_.path(), entries));
  }
  ~node_dir() { guardian_.reset(); }

  const std::string& path() const { return tmp_.path(); }
  std::string data() const { return tmp_.path() + "/data"; }

private:
  temp_dir tmp_;
  std::unique_ptr<guardian> guardian_;
};

inline std::string unique_name(const std::string& prefix) {
  static std::atomic<int> n{0};
  return prefix + std::to_string(::getpid()) + "_" + std::to_string(n++);
}

// The event log a node runs on in a test.
enum class test_log { file, kafka };

// The log under test of a binary that runs on one log: kafka with SANDBOXD_NODE_LOG=kafka in
// the environment (the ctest entry says which), else file.
inline test_log log_under_test() {
  const char* v = std::getenv("SANDBOXD_NODE_LOG");
  return v && std::string(v) == "kafka" ? test_log::kafka : test_log::file;
}

// A Boost.Test precondition: the log under test is Kafka.
inline boost::test_tools::assertion_result log_under_test_is_kafka(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result r(log_under_test() == test_log::kafka);
  if (!r)
    r.message() << "about Kafka topics; the log under test is the file log (SANDBOXD_NODE_LOG)";
  return r;
}

// The node's log: file_log in the data directory, or a new topic on the shared broker.
inline void use_log(nd::node_config& c, test_log log, std::int32_t partitions = 4) {
  c.partitions = partitions;
  if (log == test_log::kafka) {
    c.log = nd::log_kind::kafka;
    c.kafka.brokers = shared_kafka_bootstrap();
    c.kafka.topic = unique_name("node-");
    c.kafka.replication_factor = 1;
    c.kafka.min_insync_replicas = 1;
  } else {
    c.log = nd::log_kind::file;
  }
}

// A node on `dir`: the given log (the log under test unless said), the given runtimes, and
// either the embedded PostgreSQL or a schema of its own on the binary's shared test server.
inline nd::node_config node_config_for(const node_dir& dir, std::vector<ev::runtime_kind> runtimes,
                                       bool embedded_postgres, test_log log = log_under_test()) {
  nd::node_config c;
  c.data_dir = dir.data();
  use_log(c, log);
  if (!embedded_postgres) {
    c.postgres = pg_server::shared().conninfo();
    c.schema = unique_name("node_");
  }
  c.runtimes = std::move(runtimes);
  c.plane.runtime_threads = 4;
  c.plane.passivate_after = 200ms;
  c.plane.timer_poll = 20ms;
  return c;
}

inline ac::command user_command(ac::command_body body, const std::string& tenant = "t1") {
  ac::command c;
  c.tenant = tenant;
  c.principal = "alice";
  c.correlation_id = unique_name("corr-");
  c.body = std::move(body);
  return c;
}

inline ac::command create_command(ev::runtime_kind kind, std::uint32_t memory_mib = 256) {
  ev::created spec;
  spec.template_name = "base";
  spec.limits.memory_mib = memory_mib;
  spec.limits.cpu_millicores = 1000;
  spec.limits.pids = 128;
  spec.runtime = kind;
  return user_command(ac::cmd::create{spec});
}

// The events of one sandbox, in log order.
inline std::vector<ev::event> events_of(ev::event_log& log, const std::string& sandbox_id) {
  std::vector<ev::event> out;
  const auto p = log.partition_for(sandbox_id);
  std::int64_t at = 0;
  for (;;) {
    auto rr = log.read(p, at, 4096);
    if (rr.records.empty())
      return out;
    for (auto& r : rr.records) {
      at = r.offset + 1;
      if (r.key != sandbox_id)
        continue;
      auto d = ev::decode(r.value);
      if (d.ok())
        out.push_back(d.get());
    }
  }
}

template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = 30s) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (pred())
      return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

// The first exec_finished of `exec_id` in the sandbox's events, once it is there.
inline std::optional<ev::exec_finished> exec_outcome(ev::event_log& log, const std::string& id,
                                                     const std::string& exec_id) {
  std::optional<ev::exec_finished> found;
  eventually([&] {
    for (const auto& e : events_of(log, id))
      if (auto* f = std::get_if<ev::exec_finished>(&e.body); f && f->exec_id == exec_id)
        found = *f;
    return found.has_value();
  });
  return found;
}

// Pids of processes whose command line or working directory is under `dir`.
inline std::vector<int> processes_under(const std::string& dir) {
  std::vector<int> out;
  for (const auto& p : std::filesystem::directory_iterator("/proc")) {
    const std::string name = p.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos || std::stoi(name) == ::getpid())
      continue;
    std::string cmdline;
    try {
      std::ifstream f(p.path() / "cmdline", std::ios::binary);
      cmdline.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    } catch (const std::exception&) {
      continue; // it ended meanwhile
    }
    std::error_code ec;
    const auto cwd = std::filesystem::read_symlink(p.path() / "cwd", ec).string();
    if (cmdline.find(dir) != std::string::npos || (!ec && cwd.rfind(dir, 0) == 0))
      out.push_back(std::stoi(name));
  }
  return out;
}

// The processes in the cgroups of sandbox `id` (/sandboxd/<instance>-<id> and below, in
// the controllers the runtimes use); none once they are gone. What runs inside a container
// is in another mount namespace, so its command line and working directory do not show
// host paths: its cgroup does.
inline std::set<int> sandbox_processes(const std::string& id) {
  std::set<int> out;
  for (const char* ctrl : {"pids", "memory", "freezer", "cpu"}) {
    const std::filesystem::path base = std::string("/sys/fs/cgroup/") + ctrl + "/sandboxd";
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(base, ec)) {
      const std::string name = e.path().filename().string();
      if (name.size() <= id.size() || name.compare(name.size() - id.size(), id.size(), id) != 0 ||
          name[name.size() - id.size() - 1] != '-')
        continue;
      std::vector<std::filesystem::path> dirs{e.path()};
      for (const auto& sub : std::filesystem::recursive_directory_iterator(e.path(), ec))
        if (sub.is_directory())
          dirs.push_back(sub.path());
      for (const auto& d : dirs) {
        std::ifstream procs(d / "cgroup.procs");
        int pid = 0;
        while (procs >> pid)
          out.insert(pid);
      }
    }
  }
  return out;
}

// A process's command line, spaces for NULs, for messages.
inline std::string process_line(int pid) {
  std::string s;
  try {
    std::ifstream f("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
    s.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  } catch (const std::exception&) {
    return "(ended)";
  }
  for (auto& c : s)
    c = c == '\0' ? ' ' : c;
  return s;
}

// Mount points under `dir`, and under the entries (runtime/data_entry.hpp) through which the
// drivers of a node's data directory `dir` work (dir/runtimes/<kind>).
inline std::vector<std::string> mounts_under(const std::string& dir) {
  std::vector<std::string> prefixes{dir};
  std::error_code ec;
  for (const auto& rt : std::filesystem::directory_iterator(dir + "/runtimes", ec))
    prefixes.push_back(
      runtime::entry_path(std::filesystem::canonical(rt.path()).string(), "/run/sandboxd"));
  std::vector<std::string> out;
  std::ifstream m("/proc/mounts");
  std::string dev, point, rest;
  while (m >> dev >> point && std::getline(m, rest))
    for (const auto& p : prefixes)
      if (point.rfind(p, 0) == 0) {
        out.push_back(point);
        break;
      }
  return out;
}

} // namespace sandboxd::test
