// Both example consumers (examples/cpp/tail_events, examples/python/tail_events.py) read the
// events of a real sandboxd session — sandboxctl creating, pausing, resuming and deleting
// sandboxes on the hollow runtime — from the daemon's file log and, with a daemon writing to
// a topic of the real Kafka broker, from that topic. Each prints every event of the session
// once: for the file log exactly the records the log holds (read with file_log_reader), each
// sandbox's sequences dense from 1 with the lifecycle's event types, and the Python lines are
// the C++ lines.
#define BOOST_TEST_MODULE tail_session
#include "tests/e2e/e2e_support.hpp"

#include "events/file_log_reader.hpp"
#include "tests/projections/postgres_installed.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/process.hpp"

#include <algorithm>
#include <map>
#include <set>

using namespace sandboxd::test;
namespace events = sandboxd::events;

namespace {

std::string build_dir() {
  return binary_dir();
}

boost::test_tools::assertion_result python_env(utf::test_unit_id) {
  auto r = run_shell(shell_quote(source_dir() + "/scripts/python-env") + " " +
                     shell_quote(build_dir()) + " 2>&1");
  if (r.exit_code == 0)
    r = run_shell(shell_quote(build_dir() + "/venv/bin/python") +
                  " -c 'import capnp, confluent_kafka' 2>&1");
  boost::test_tools::assertion_result ok(r.exit_code == 0);
  ok.message() << "the Python environment of scripts/python-env is not usable: " << r.output;
  return ok;
}

std::vector<std::string> sorted_lines(const std::string& out) {
  std::vector<std::string> v;
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);)
    if (!l.empty())
      v.push_back(l);
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<std::string> cpp_tail(const std::string& args) {
  auto r = run_shell(shell_quote(built_program("examples/tail_events")) + " " + args + " 2>&1");
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, "tail_events " << args << ": " << r.output);
  return sorted_lines(r.output);
}

std::vector<std::string> python_tail(const std::string& args) {
  auto r = run_shell(shell_quote(build_dir() + "/venv/bin/python") + " " +
                     shell_quote(source_dir() + "/examples/python/tail_events.py") + " " + args +
                     " 2>/dev/null");
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, "tail_events.py " << args << ": " << r.output);
  return sorted_lines(r.output);
}

// The session: three sandboxes, one paused and resumed, one deleted. Returns their ids.
std::vector<std::string> run_session(const daemon_process& d) {
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i)
    ids.push_back(create(d, {"--memory", "256", "--label", "n=" + std::to_string(i)}));
  ctl_ok(d, {"pause", ids[0]});
  ctl_ok(d, {"resume", ids[0]});
  ctl_ok(d, {"delete", ids[1]});
  return ids;
}

// Each line "P:O SANDBOX SEQ TYPE AT TENANT": the session's sandboxes with dense sequences
// from 1 and the lifecycle's types.
void check_session_lines(const std::vector<std::string>& lines,
                         const std::vector<std::string>& ids) {
  std::map<std::string, std::vector<std::uint64_t>> seqs;
  std::map<std::string, std::multiset<std::string>> types;
  for (const auto& line : lines) {
    std::istringstream f(line);
    std::string where, sandbox, type, tenant;
    std::uint64_t seq = 0;
    long long at = 0;
    f >> where >> sandbox >> seq >> type >> at >> tenant;
    seqs[sandbox].push_back(seq);
    types[sandbox].insert(type);
  }
  BOOST_TEST(seqs.size() == ids.size());
  for (auto& [id, s] : seqs) {
    std::sort(s.begin(), s.end());
    for (std::size_t i = 0; i < s.size(); ++i)
      BOOST_TEST(s[i] == i + 1, id << " sequence " << s[i]);
  }
  for (const auto* t :
       {"created", "started", "pauseRequested", "paused", "resumeRequested", "resumed"})
    BOOST_TEST(types[ids[0]].count(t) == 1u, ids[0] << " " << t);
  for (const auto* t : {"created", "started", "deleteRequested", "deleted"})
    BOOST_TEST(types[ids[1]].count(t) == 1u, ids[1] << " " << t);
}

} // namespace

BOOST_AUTO_TEST_CASE(both_consumers_read_a_sessions_file_log,
                     *utf::precondition(postgres_installed) * utf::precondition(python_env)) {
  daemon_process d({"--runtime", "hollow"});
  const auto ids = run_session(d);
  BOOST_REQUIRE_EQUAL(d.stop(), 0);
  const std::string log = d.data() + "/log";

  std::vector<std::string> expected; // the records as the log holds them
  {
    events::file_log_reader reader(log);
    for (std::int32_t p = 0; p < reader.partitions(); ++p)
      reader.visit(p, 0, [&](std::int64_t offset, std::string_view, std::string_view value) {
        auto e = events::decode(value).get();
        expected.push_back(std::to_string(p) + ":" + std::to_string(offset) + " " + e.sandbox_id +
                           " " + std::to_string(e.sequence));
        return true;
      });
  }
  std::sort(expected.begin(), expected.end());
  const auto from_cpp = cpp_tail("--data-dir " + shell_quote(log));
  std::vector<std::string> printed; // "P:O SANDBOX SEQ" of each line
  for (const auto& l : from_cpp) {
    std::istringstream f(l);
    std::string where, sandbox, seq;
    f >> where >> sandbox >> seq;
    printed.push_back(where + " " + sandbox + " " + seq);
  }
  std::sort(printed.begin(), printed.end());
  BOOST_TEST(printed == expected, boost::test_tools::per_element());
  check_session_lines(from_cpp, ids);
  BOOST_TEST(python_tail("--data-dir " + shell_quote(log)) == from_cpp,
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(both_consumers_read_a_sessions_kafka_topic,
                     *utf::precondition(postgres_installed) * utf::precondition(python_env)) {
  const auto bootstrap = shared_kafka_bootstrap();
  const std::string topic = "tail-session-" + std::to_string(::getpid());
  daemon_process d({"--runtime", "hollow", "--event-log", "kafka", "--kafka-brokers", bootstrap,
                    "--kafka-topic", topic, "--kafka-replication", "1", "--kafka-min-insync", "1"});
  const auto ids = run_session(d);
  BOOST_REQUIRE_EQUAL(d.stop(), 0);
  const std::string args = "--brokers " + shell_quote(bootstrap) + " --topic " + shell_quote(topic);
  const auto from_cpp = cpp_tail(args);
  check_session_lines(from_cpp, ids);
  BOOST_TEST(python_tail(args) == from_cpp, boost::test_tools::per_element());
}
