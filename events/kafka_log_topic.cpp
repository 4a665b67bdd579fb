// kafka_log's topic: created with the configs that keep every event, or, when it exists,
// described and refused if it would delete or under-replicate events.
#include "events/kafka_log_impl.hpp"

#include <climits>
#include <cstdio>
#include <functional>

namespace sandboxd::events {

using namespace kafka_log_parts;

namespace {

// Runs one admin request on `rk` and returns its result event (nullptr when no answer came
// within `timeout_ms`); `problem` holds the request's own error.
rd_kafka_event_t* admin_result(rd_kafka_t* rk, int timeout_ms,
                               const std::function<void(rd_kafka_queue_t*)>& request,
                               std::string& problem) {
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  request(q);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(q, timeout_ms);
  rd_kafka_queue_destroy(q);
  if (ev == nullptr)
    problem = "no answer";
  else if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR)
    problem = rd_kafka_event_error_string(ev);
  return ev;
}

} // namespace

std::string kafka_log::impl::create_topic(int timeout_ms) {
  char err[512];
  rd_kafka_NewTopic_t* nt = rd_kafka_NewTopic_new(options.topic.c_str(), options.partitions,
                                                  options.replication_factor, err, sizeof err);
  if (nt == nullptr)
    throw log_fault(where + ": cannot describe the new topic: " + err);
  for (const auto& [name, value] : topic_configs_for(requirements()))
    if (rd_kafka_NewTopic_set_config(nt, name.c_str(), value.c_str()) !=
        RD_KAFKA_RESP_ERR_NO_ERROR) {
      rd_kafka_NewTopic_destroy(nt);
      throw log_fault(where + ": cannot set " + name + " on the new topic");
    }
  std::string problem;
  rd_kafka_event_t* ev = admin_result(
    producer, timeout_ms,
    [&](rd_kafka_queue_t* q) { rd_kafka_CreateTopics(producer, &nt, 1, nullptr, q); }, problem);
  if (ev != nullptr && problem.empty()) {
    if (const auto* res = rd_kafka_event_CreateTopics_result(ev)) {
      std::size_t n = 0;
      const auto** topics = rd_kafka_CreateTopics_result_topics(res, &n);
      for (std::size_t i = 0; i < n; ++i) {
        auto te = rd_kafka_topic_result_error(topics[i]);
        if (te != RD_KAFKA_RESP_ERR_NO_ERROR && te != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
          problem = rd_kafka_err2str(te) + std::string(": ") +
                    (rd_kafka_topic_result_error_string(topics[i])
                       ? rd_kafka_topic_result_error_string(topics[i])
                       : "");
      }
    }
  }
  if (ev != nullptr)
    rd_kafka_event_destroy(ev);
  rd_kafka_NewTopic_destroy(nt);
  return problem;
}

std::map<std::string, std::string> kafka_log::impl::describe_topic_configs(int timeout_ms) {
  rd_kafka_ConfigResource_t* resource =
    rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, options.topic.c_str());
  std::string problem;
  rd_kafka_event_t* ev = admin_result(
    producer, timeout_ms,
    [&](rd_kafka_queue_t* q) { rd_kafka_DescribeConfigs(producer, &resource, 1, nullptr, q); },
    problem);
  std::map<std::string, std::string> out;
  if (ev != nullptr && problem.empty()) {
    std::size_t n = 0;
    const auto* res = rd_kafka_event_DescribeConfigs_result(ev);
    const auto** resources = res ? rd_kafka_DescribeConfigs_result_resources(res, &n) : nullptr;
    if (n != 1) {
      problem = "no description of the topic in the answer";
    } else if (rd_kafka_ConfigResource_error(resources[0]) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      const char* why = rd_kafka_ConfigResource_error_string(resources[0]);
      problem = why ? why : rd_kafka_err2str(rd_kafka_ConfigResource_error(resources[0]));
    } else {
      std::size_t count = 0;
      const auto** entries = rd_kafka_ConfigResource_configs(resources[0], &count);
      for (std::size_t i = 0; i < count; ++i) {
        const char* value = rd_kafka_ConfigEntry_value(entries[i]);
        out[rd_kafka_ConfigEntry_name(entries[i])] = value ? value : "";
      }
    }
  }
  if (ev != nullptr)
    rd_kafka_event_destroy(ev);
  rd_kafka_ConfigResource_destroy(resource);
  if (!problem.empty())
    throw log_fault(where + ": cannot describe the topic's configs (" + problem +
                    "); the log does not use a topic whose retention and replication it "
                    "cannot check");
  return out;
}

void kafka_log::impl::ensure_topic() {
  if (auto problem = requirements_problem(requirements()))
    throw log_fault(where + ": " + *problem);
  if (single_copy(requirements())) {
    const std::string warning =
      where + ": min_insync_replicas is " + std::to_string(options.min_insync_replicas) +
      " (replication factor " + std::to_string(options.replication_factor) +
      "): an acknowledged event may be on one broker only, and is lost with its disk; use "
      "replication_factor 3 and min_insync_replicas 2 on a cluster of 3 or more brokers";
    if (options.warn)
      options.warn(warning);
    else
      std::fprintf(stderr, "sandboxd: warning: %s\n", warning.c_str());
  }
  const auto deadline = clock::now() + options.open_timeout;
  bool asked_to_create = false;
  std::string last_problem;
  for (;;) {
    const rd_kafka_metadata_t* md = nullptr;
    const int left = to_ms(std::chrono::duration_cast<std::chrono::milliseconds>(
      std::max(deadline - clock::now(), clock::duration(std::chrono::milliseconds(1)))));
    // All topics: asking for one by name could create it with the broker's defaults.
    auto e = rd_kafka_metadata(producer, 1, nullptr, &md, left);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      last_problem = rd_kafka_err2str(e);
    } else {
      const rd_kafka_metadata_topic_t* found = nullptr;
      for (int i = 0; i < md->topic_cnt; ++i)
        if (options.topic == md->topics[i].topic)
          found = &md->topics[i];
      if (found != nullptr && found->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        kafka_topic_state state;
        state.partitions = found->partition_cnt;
        state.fewest_replicas = found->partition_cnt > 0 ? INT32_MAX : 0;
        bool leaders = true;
        for (int i = 0; i < found->partition_cnt; ++i) {
          const auto& p = found->partitions[i];
          leaders = leaders && p.leader >= 0 && p.err == RD_KAFKA_RESP_ERR_NO_ERROR;
          state.fewest_replicas = std::min(state.fewest_replicas, p.replica_cnt);
        }
        rd_kafka_metadata_destroy(md);
        if (leaders) {
          if (options.check_topic_configs)
            state.configs = describe_topic_configs(left);
          auto problems = topic_problems(options.topic, requirements(), state);
          if (!problems.empty()) {
            std::string message = where + " would not keep every event:";
            for (const auto& p : problems)
              message += "\n  - " + p;
            message += "\nFix the topic, or point the log at another (new) topic.";
            throw log_fault(message);
          }
          partitions = state.partitions;
          return;
        }
        last_problem = "partitions without a leader yet";
      } else {
        rd_kafka_metadata_destroy(md);
        if (!asked_to_create) {
          asked_to_create = true;
          if (auto problem = create_topic(left); !problem.empty())
            last_problem = "creating the topic failed: " + problem;
        }
        if (last_problem.empty())
          last_problem = "the topic does not exist yet";
      }
    }
    if (clock::now() >= deadline)
      throw log_fault(where + ": not ready within " + std::to_string(options.open_timeout.count()) +
                      " ms (" + last_problem +
                      "); check that the brokers are reachable and the topic can be created");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

} // namespace sandboxd::events
