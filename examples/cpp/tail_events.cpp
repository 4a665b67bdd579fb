// tail_events — a small consumer of sandboxd's event stream (docs/event-stream.md): prints
// one line per event, "PARTITION:OFFSET SANDBOX SEQUENCE TYPE OCCURRED_AT_NS TENANT".
//
//   tail_events --brokers HOST:PORT [--topic sandboxd-events]   (librdkafka + Cap'n Proto)
//   tail_events --data-dir DIR                                  (the file log, read-only)
//   [--follow]: with --brokers, keep waiting for new events (^C ends)
//
// Kafka: every partition of the topic is read from offset 0 with librdkafka's C API, no
// consumer group (a real consumer keeps its offsets with its results). Each record value is
// one Cap'n Proto `Event` (schemas/events.capnp); the payload's type is read by reflection, so
// a payload newer than this build prints as "unknown(N)". Per sandbox, a sequence at or below
// the last one printed is a duplicate and is skipped. Without --follow it stops once every
// partition reached its end.
#include "events/file_log_reader.hpp"
#include "schemas/events.capnp.h"

#include <capnp/dynamic.h>
#include <capnp/serialize.h>
#include <librdkafka/rdkafka.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace {

std::map<std::string, std::uint64_t> last_sequence;

// Prints one record; false when its bytes are not an Event.
bool print_record(std::int32_t partition, std::int64_t offset, std::string_view value) {
  std::vector<capnp::word> words((value.size() + 7) / 8);
  std::memcpy(words.data(), value.data(), value.size());
  try {
    capnp::FlatArrayMessageReader reader(kj::arrayPtr(words.data(), words.size()));
    auto ev = reader.getRoot<sandboxd::schema::Event>();
    auto& last = last_sequence[ev.getSandboxId().cStr()];
    if (ev.getSequence() <= last)
      return true; // a duplicate
    last = ev.getSequence();
    std::string type =
      "unknown(" + std::to_string(static_cast<unsigned>(ev.getPayload().which())) + ")";
    KJ_IF_MAYBE (field, capnp::toDynamic(ev).get("payload").as<capnp::DynamicStruct>().which())
      type = field->getProto().getName().cStr();
    std::printf("%d:%lld %s %llu %s %lld %s\n", partition, static_cast<long long>(offset),
                ev.getSandboxId().cStr(), static_cast<unsigned long long>(ev.getSequence()),
                type.c_str(), static_cast<long long>(ev.getOccurredAtNs()), ev.getTenant().cStr());
    std::fflush(stdout);
    return true;
  } catch (const kj::Exception& e) {
    std::fprintf(stderr, "tail_events: %d:%lld is not an event: %s\n", partition,
                 static_cast<long long>(offset), e.getDescription().cStr());
    return false;
  }
}

int tail_file_log(const std::string& dir) {
  sandboxd::events::file_log_reader log(dir);
  for (std::int32_t p = 0; p < log.partitions(); ++p)
    log.visit(p, 0, [&](std::int64_t offset, std::string_view, std::string_view value) {
      print_record(p, offset, value);
      return true;
    });
  return 0;
}

int tail_kafka(const std::string& brokers, const std::string& topic, bool follow) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "bootstrap.servers", brokers.c_str(), err, sizeof err) !=
        RD_KAFKA_CONF_OK ||
      rd_kafka_conf_set(conf, "enable.partition.eof", "true", err, sizeof err) !=
        RD_KAFKA_CONF_OK) {
    std::fprintf(stderr, "tail_events: %s\n", err);
    return 2;
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (!rk) {
    std::fprintf(stderr, "tail_events: %s\n", err);
    return 2;
  }
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  const rd_kafka_metadata_t* md = nullptr;
  if (rd_kafka_metadata(rk, 0, rkt, &md, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR ||
      md->topic_cnt != 1 || md->topics[0].err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    std::fprintf(stderr, "tail_events: topic %s not found at %s\n", topic.c_str(), brokers.c_str());
    return 1;
  }
  const int partitions = md->topics[0].partition_cnt;
  rd_kafka_metadata_destroy(md);
  rd_kafka_queue_t* queue = rd_kafka_queue_new(rk);
  for (int p = 0; p < partitions; ++p)
    rd_kafka_consume_start_queue(rkt, p, RD_KAFKA_OFFSET_BEGINNING, queue);
  int at_end = 0, rc = 0;
  while (follow || at_end < partitions) {
    rd_kafka_message_t* m = rd_kafka_consume_queue(queue, 1000);
    if (!m)
      continue;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      ++at_end; // each partition reports its end once per time it catches up
    } else if (m->err) {
      std::fprintf(stderr, "tail_events: %s\n", rd_kafka_message_errstr(m));
      rc = 1;
      rd_kafka_message_destroy(m);
      break;
    } else if (!print_record(m->partition, m->offset,
                             {static_cast<const char*>(m->payload), m->len})) {
      rc = 1;
    }
    rd_kafka_message_destroy(m);
  }
  for (int p = 0; p < partitions; ++p)
    rd_kafka_consume_stop(rkt, p);
  rd_kafka_queue_destroy(queue);
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(rk);
  return rc;
}

} // namespace

int main(int argc, char** argv) {
  std::string brokers, topic = "sandboxd-events", dir;
  bool follow = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--brokers" && i + 1 < argc)
      brokers = argv[++i];
    else if (a == "--topic" && i + 1 < argc)
      topic = argv[++i];
    else if (a == "--data-dir" && i + 1 < argc)
      dir = argv[++i];
    else if (a == "--follow")
      follow = true;
    else {
      std::fprintf(stderr, "usage: tail_events (--brokers HOST:PORT [--topic T] [--follow] | "
                           "--data-dir DIR)\n");
      return 2;
    }
  }
  try {
    if (!dir.empty())
      return tail_file_log(dir);
    if (!brokers.empty())
      return tail_kafka(brokers, topic, follow);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tail_events: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "tail_events: give --brokers or --data-dir\n");
  return 2;
}
