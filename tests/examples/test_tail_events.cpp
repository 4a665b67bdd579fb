// The C++ example consumer (examples/cpp/tail_events.cpp) run as a process against a file log
// and against a topic of the real Kafka broker holding the same records: it prints every event
// once (a duplicate record skipped), with its partition, offset, sandbox, sequence and payload
// type, and both sources print the same lines.
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

std::vector<std::string> tail(const std::string& args) {
  auto r = test::run_shell(std::string(TAIL_EVENTS_BIN) + " " + args + " 2>/dev/null");
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, "tail_events " << args << ": " << r.output);
  return sorted_lines(r.output);
}

} // namespace

BOOST_AUTO_TEST_CASE(prints_every_event_once_from_the_file_log_and_from_kafka) {
  auto stream = test::mixed_stream(40, 3, 1'700'000'000'000'000'000);
  // The first sandbox's `created` again at the end: a duplicate a consumer drops.
  auto dup = stream.front();
  auto records = test::to_records(stream);
  records.push_back({dup.sandbox_id, test::encode_record(dup)});

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

  const std::string topic = "tail-events-" + std::to_string(::getpid());
  const auto bootstrap = test::shared_kafka_bootstrap();
  {
    events::kafka_log log(test::single_broker_log(bootstrap, topic, 4));
    BOOST_REQUIRE(log.append(records).get().ok());
  }
  const auto from_kafka =
    tail("--brokers " + shell_quote(bootstrap) + " --topic " + shell_quote(topic));
  BOOST_TEST(from_kafka == from_file, boost::test_tools::per_element());
}
