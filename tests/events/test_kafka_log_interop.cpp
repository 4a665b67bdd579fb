// A record appended through kafka_log is an ordinary Kafka record: kcat (a consumer no one
// here wrote) reads it at the position the append reported, with the sandbox id as key,
// and the stock `capnp decode` tool decodes its value against schemas/events.capnp.
#define BOOST_TEST_MODULE kafka_log_interop
#include <boost/test/unit_test.hpp>

#include "events/event.hpp"
#include "events/kafka_log.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/kafka_log_options.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <unistd.h>

using namespace sandboxd::events;
using sandboxd::test::check_shell;
using sandboxd::test::run_shell;
using sandboxd::test::shell_quote;

namespace {

boost::test_tools::assertion_result kcat_and_capnp(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result r(
    run_shell("command -v kcat && command -v capnp").exit_code == 0);
  r.message() << "kcat or capnp is not installed (scripts/setup installs both)";
  return r;
}

} // namespace

BOOST_AUTO_TEST_CASE(kcat_reads_an_appended_event_and_capnp_decode_decodes_it,
                     *boost::unit_test::precondition(kcat_and_capnp)) {
  const std::string bootstrap = sandboxd::test::shared_kafka_bootstrap();
  const std::string topic = "interop-" + std::to_string(::getpid());
  kafka_log log(sandboxd::test::single_broker_log(bootstrap, topic, 4));

  event e;
  e.event_id = "ev_interop_1";
  e.sandbox_id = "sb_interop_7";
  e.sequence = 1;
  e.tenant = "tenant_a";
  e.principal = "user_42";
  e.occurred_at = time_point(nanoseconds(1764500000123456789));
  e.correlation_id = "req_9";
  created c;
  c.template_name = "python-3.12";
  c.limits.memory_mib = 512;
  e.body = c;
  // Other records around it, so the position really matters.
  auto filler = log.append({{"sb_other", "not an event"}, {e.sandbox_id, "earlier"}}).get();
  BOOST_REQUIRE(filler.ok());
  auto r = log.append({{e.sandbox_id, encode(e)}}).get();
  BOOST_REQUIRE_MESSAGE(r.ok(), r.failure->message);
  const auto where = r.positions[0];
  BOOST_TEST(where.partition == partition_for(e.sandbox_id, 4));

  sandboxd::test::temp_dir tmp{"interop"};
  const std::string kcat = "kcat -C -q -e -c 1 -b " + shell_quote(bootstrap) + " -t " +
                           shell_quote(topic) + " -p " + std::to_string(where.partition) + " -o " +
                           std::to_string(where.offset);
  const std::string meta = check_shell(kcat + " -f '%k|%p|%o\\n'");
  BOOST_TEST(meta == e.sandbox_id + "|" + std::to_string(where.partition) + "|" +
                       std::to_string(where.offset) + "\n");
  const std::string value_file = tmp / "value.bin";
  check_shell(kcat + " -D '' -f '%s' > " + shell_quote(value_file));
  const std::string schema = sandboxd::test::source_dir() + "/schemas/events.capnp";
  const std::string decoded =
    check_shell("capnp decode " + shell_quote(schema) + " Event < " + shell_quote(value_file));
  BOOST_TEST_MESSAGE(decoded);
  for (const std::string want :
       {"eventId = \"ev_interop_1\"", "sandboxId = \"sb_interop_7\"", "sequence = 1",
        "tenant = \"tenant_a\"", "occurredAtNs = 1764500000123456789", "template = \"python-3.12\"",
        "memoryMib = 512"})
    BOOST_TEST(decoded.find(want) != std::string::npos, "missing " << want);
}
