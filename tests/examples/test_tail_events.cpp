// The example consumers run as processes. The C++ one (examples/cpp/tail_events.cpp) against a
// file log and against a topic of the real Kafka broker holding the same records: it prints
// every event once (a duplicate record skipped), with its partition, offset, sandbox, sequence
// and payload type, and both sources print the same lines. The Python one
// (examples/python/tail_events.py, confluent-kafka + pycapnp in the venv of
// scripts/python-env) prints exactly the C++ one's lines from the same topic.
#define BOOST_TEST_MODULE tail_events
#include <boost/test/unit_test.hpp>

#include "events/file_log.hpp"
#include "tests/projections/lifecycle_stream.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/kafka_log_options.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <algorithm>
#include <set>
#include <sstream>
#include <unistd.h>

using namespace sandboxd;
using sandboxd::test::shell_quote;

namespace {

std::vector<std::string> sorted_lines(const std::string& out) {
  std::vector<std::string> v;
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);)
    if (!l.empty())
      v.push_back(l);
  std::sort(v.begin(), v.end());
  return v;
}

// The records: a mixed stream, and the first sandbox's `created` again at the end (a
// duplicate a consumer drops).
struct sample {
  std::vector<events::event> stream = test::mixed_stream(40, 3, 1'700'000'000'000'000'000);
  std::vector<events::log_record> records;
  sample() {
    records = test::to_records(stream);
    records.push_back({stream.front().sandbox_id, test::encode_record(stream.front())});
  }
  // A new topic of the shared broker holding the records.
  std::string to_topic() const {
    const std::string topic =
      "tail-events-" + std::to_string(::getpid()) + "-" + std::to_string(++topics_);
    events::kafka_log log(test::single_broker_log(test::shared_kafka_bootstrap(), topic, 4));
    BOOST_REQUIRE(log.append(records).get().ok());
    return topic;
  }
  static inline int topics_ = 0;
};

std::string python_env_problem() {
  const std::string build = test::binary_dir();
  auto r = test::run_shell(shell_quote(test::source_dir() + "/scripts/python-env") + " " +
                           shell_quote(build) + " 2>&1");
  if (r.exit_code != 0)
    return "the Python environment cannot be made (scripts/python-env): " + r.output;
  r = test::run_shell(shell_quote(build + "/venv/bin/python") +
                      " -c 'import capnp, confluent_kafka' 2>&1");
  if (r.exit_code != 0)
    return "the venv lacks pycapnp or confluent-kafka: " + r.output;
  return "";
}

boost::test_tools::assertion_result python_env(boost::unit_test::test_unit_id) {
  const auto problem = python_env_problem();
  boost::test_tools::assertion_result r(problem.empty());
  r.message() << problem;
  return r;
}

std::vector<std::string> tail(const std::string& args) {
  auto r = test::run_shell(shell_quote(test::built_program("examples/tail_events")) + " " + args +
                           " 2>/dev/null");
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, "tail_events " << args << ": " << r.output);
  return sorted_lines(r.output);
}

} // namespace

BOOST_AUTO_TEST_CASE(prints_every_event_once_from_the_file_log_and_from_kafka) {
  const sample s;
  const auto& stream = s.stream;
  const auto& records = s.records;

  test::temp_dir dir("tail-events");
  {
    events::file_log_options o;
    o.dir = dir / "log";
    o.partitions = 4;
    events::file_log log(o);
    BOOST_REQUIRE(log.append_and_wait(records).ok());
  }
  const auto from_file = tail("--data-dir " + shell_quote(dir / "log"));
  BOOST_REQUIRE_EQUAL(from_file.size(), stream.size());
  std::set<std::string> seen;
  std::size_t created = 0, pause_requested = 0;
  for (const auto& line : from_file) {
    std::istringstream f(line);
    std::string where, sandbox, type, tenant;
    std::uint64_t seq = 0;
    long long at = 0;
    f >> where >> sandbox >> seq >> type >> at >> tenant;
    BOOST_TEST(seen.insert(sandbox + ":" + std::to_string(seq)).second, line);
    created += type == "created";
    pause_requested += type == "pauseRequested";
  }
  BOOST_TEST(created == 40u);
  BOOST_TEST(pause_requested == 40u);
  for (const auto& e : stream)
    BOOST_TEST(seen.count(e.event_id) == 1u, e.event_id);

  const std::string topic = s.to_topic();
  const auto bootstrap = test::shared_kafka_bootstrap();
  const auto from_kafka =
    tail("--brokers " + shell_quote(bootstrap) + " --topic " + shell_quote(topic));
  BOOST_TEST(from_kafka == from_file, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(the_python_consumer_prints_what_the_cpp_one_prints,
                     *boost::unit_test::precondition(python_env)) {
  const sample s;
  const std::string topic = s.to_topic();
  const auto bootstrap = test::shared_kafka_bootstrap();
  const std::string build = test::binary_dir();
  auto r = test::run_shell(shell_quote(build + "/venv/bin/python") + " " +
                           shell_quote(test::source_dir() + "/examples/python/tail_events.py") +
                           " --brokers " + shell_quote(bootstrap) + " --topic " +
                           shell_quote(topic) + " 2>/dev/null");
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, "tail_events.py: " << r.output);
  const auto from_python = sorted_lines(r.output);
  BOOST_TEST(from_python.size() == s.stream.size());
  const auto from_cpp =
    tail("--brokers " + shell_quote(bootstrap) + " --topic " + shell_quote(topic));
  BOOST_TEST(from_python == from_cpp, boost::test_tools::per_element());
}
