#include "tests/support/kafka_group.hpp"

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace sandboxd::test {

struct kafka_group_member::impl {
  rd_kafka_t* rk = nullptr;
  mutable std::mutex mu;
  mutable std::condition_variable changed;
  std::string metadata;
  std::uint64_t generations = 0;
  std::vector<std::int32_t> assignment;
  std::atomic<bool> stop{false};
  bool closed = false;
  std::thread poller;

  void remember() {
    std::string blob;
    if (auto* md = rd_kafka_consumer_group_metadata(rk)) {
      void* buf = nullptr;
      size_t size = 0;
      if (auto* e = rd_kafka_consumer_group_metadata_write(md, &buf, &size))
        rd_kafka_error_destroy(e);
      else {
        blob.assign(static_cast<const char*>(buf), size);
        rd_kafka_mem_free(rk, buf);
      }
      rd_kafka_consumer_group_metadata_destroy(md);
    }
    std::lock_guard l(mu);
    metadata = std::move(blob);
  }

  static void on_rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                           rd_kafka_topic_partition_list_t* parts, void* opaque) {
    auto* self = static_cast<impl*>(opaque);
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
      rd_kafka_assign(rk, parts);
      rd_kafka_pause_partitions(rk, parts);
      std::vector<std::int32_t> got;
      for (int i = 0; i < parts->cnt; ++i)
        got.push_back(parts->elems[i].partition);
      self->remember();
      std::lock_guard l(self->mu);
      self->assignment = std::move(got);
      ++self->generations;
      self->changed.notify_all();
    } else {
      rd_kafka_assign(rk, nullptr);
      std::lock_guard l(self->mu);
      self->assignment.clear();
    }
  }
};

kafka_group_member::kafka_group_member(const std::string& bootstrap, const std::string& group,
                                       const std::string& topic, const std::string& instance_id,
                                       std::chrono::milliseconds session_timeout)
    : impl_(std::make_unique<impl>()) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  auto set = [&](const char* k, const std::string& v) {
    if (rd_kafka_conf_set(conf, k, v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      throw std::runtime_error(std::string("kafka_group_member: ") + k + ": " + err);
    }
  };
  set("bootstrap.servers", bootstrap);
  set("group.id", group);
  if (!instance_id.empty())
    set("group.instance.id", instance_id);
  set("session.timeout.ms", std::to_string(session_timeout.count()));
  set("heartbeat.interval.ms", std::to_string(std::max<long>(100, session_timeout.count() / 6)));
  set("enable.auto.commit", "false");
  set("log_level", "3");
  rd_kafka_conf_set_opaque(conf, impl_.get());
  rd_kafka_conf_set_rebalance_cb(conf, &impl::on_rebalance);
  impl_->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (impl_->rk == nullptr)
    throw std::runtime_error(std::string("kafka_group_member: ") + err);
  rd_kafka_poll_set_consumer(impl_->rk);
  rd_kafka_topic_partition_list_t* sub = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(sub, topic.c_str(), RD_KAFKA_PARTITION_UA);
  const auto e = rd_kafka_subscribe(impl_->rk, sub);
  rd_kafka_topic_partition_list_destroy(sub);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    rd_kafka_destroy(impl_->rk);
    throw std::runtime_error(std::string("kafka_group_member: subscribe: ") + rd_kafka_err2str(e));
  }
  auto* m = impl_.get();
  m->poller = std::thread([m] {
    while (!m->stop.load())
      if (auto* msg = rd_kafka_consumer_poll(m->rk, 50))
        rd_kafka_message_destroy(msg);
  });
}

kafka_group_member::~kafka_group_member() {
  leave();
  rd_kafka_destroy(impl_->rk);
}

void kafka_group_member::leave() {
  if (impl_->closed)
    return;
  impl_->stop = true;
  impl_->poller.join();
  rd_kafka_consumer_close(impl_->rk);
  impl_->closed = true;
}

std::string kafka_group_member::metadata() const {
  std::lock_guard l(impl_->mu);
  return impl_->metadata;
}

std::uint64_t kafka_group_member::generations() const {
  std::lock_guard l(impl_->mu);
  return impl_->generations;
}

bool kafka_group_member::wait_generation_after(std::uint64_t seen,
                                               std::chrono::milliseconds timeout) const {
  std::unique_lock l(impl_->mu);
  return impl_->changed.wait_for(l, timeout, [&] { return impl_->generations > seen; });
}

std::vector<std::int32_t> kafka_group_member::assignment() const {
  std::lock_guard l(impl_->mu);
  return impl_->assignment;
}

} // namespace sandboxd::test
