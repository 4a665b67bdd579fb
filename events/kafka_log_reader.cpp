// kafka_log's reads: a partition from an explicit offset through one consumer, the end
// offset from the high watermark, and waiting for a record to arrive.
#include "events/kafka_log_impl.hpp"

namespace sandboxd::events {

using namespace kafka_log_parts;

void kafka_log::impl::restart_reader(partition_reader& r, std::int32_t partition) {
  for (auto* msg : r.buffered)
    rd_kafka_message_destroy(msg);
  r.buffered.clear();
  if (r.started)
    rd_kafka_consume_stop(consumer_topic, partition);
  r.started = false;
}

bool kafka_log::impl::position(partition_reader& r, std::int32_t partition, std::int64_t offset,
                               std::optional<error>& failure) {
  // A reader a little behind catches up by skipping fetched records: cheaper than a
  // restart, which waits for the broker's next fetch round.
  if (r.started && r.next <= offset && offset - r.next <= k_skip_limit)
    return true;
  restart_reader(r, partition);
  if (rd_kafka_consume_start(consumer_topic, partition, offset) != 0) {
    failure = broker_error("cannot start reading partition " + std::to_string(partition),
                           rd_kafka_err2str(rd_kafka_last_error()));
    return false;
  }
  r.started = true;
  r.next = offset;
  return true;
}

rd_kafka_message_t* kafka_log::impl::next_message(partition_reader& r, std::int32_t partition,
                                                  int timeout_ms) {
  if (!r.buffered.empty()) {
    auto* msg = r.buffered.front();
    r.buffered.pop_front();
    return msg;
  }
  return rd_kafka_consume(consumer_topic, partition, timeout_ms);
}

bool kafka_log_parts::transient(rd_kafka_resp_err_t e) {
  switch (e) {
  case RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION:
  case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
  case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
  case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
  case RD_KAFKA_RESP_ERR_FENCED_LEADER_EPOCH:
  case RD_KAFKA_RESP_ERR_UNKNOWN_LEADER_EPOCH:
  case RD_KAFKA_RESP_ERR_OFFSET_NOT_AVAILABLE:
  case RD_KAFKA_RESP_ERR__TRANSPORT:
    return true;
  default:
    return false;
  }
}

rd_kafka_resp_err_t kafka_log::impl::high_watermark(std::int32_t partition, std::int64_t& high) {
  const auto deadline = clock::now() + options.append_timeout;
  auto backoff = std::chrono::milliseconds(20);
  for (;;) {
    const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    std::int64_t low = 0;
    rd_kafka_resp_err_t e;
    {
      std::shared_lock producer_lock(producer_mu);
      e = rd_kafka_query_watermark_offsets(producer, options.topic.c_str(), partition, &low, &high,
                                           to_ms(std::max(left, std::chrono::milliseconds(1))));
    }
    // This log's own commits are readable once their markers are written: wait for the last
    // stable offset to reach them.
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR && fenced &&
        high < committed_end[static_cast<std::size_t>(partition)].load() &&
        clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    if (!transient(e) || clock::now() + backoff >= deadline)
      return e;
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
  }
}

std::int64_t kafka_log::impl::consumed_position(rd_kafka_t* rk, std::int32_t partition) {
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(list, options.topic.c_str(), partition);
  rd_kafka_position(rk, list);
  const std::int64_t at = list->elems[0].err == RD_KAFKA_RESP_ERR_NO_ERROR
                            ? list->elems[0].offset
                            : RD_KAFKA_OFFSET_INVALID;
  rd_kafka_topic_partition_list_destroy(list);
  return at;
}

offset_result kafka_log::impl::visible_end(std::int32_t partition, std::int64_t stable) {
  auto& tail = *tails[static_cast<std::size_t>(partition)];
  std::lock_guard l(tail.mu);
  if (tail.stable == stable)
    return {tail.visible, std::nullopt};
  // The last committed record below `stable` is at or above what was known at the last
  // look (`floor`). Usually it is just below the commit marker at stable - 1: look at a
  // small window below `stable` first, and widen it until a record is found or the window
  // reaches the floor.
  const std::int64_t floor = std::max<std::int64_t>(0, tail.stable);
  const std::int64_t floor_visible = tail.stable < 0 ? 0 : tail.visible;
  if (stable <= floor) { // nothing below it since the last look (an empty partition)
    tail.stable = stable;
    tail.visible = std::min(floor_visible, stable);
    return {tail.visible, std::nullopt};
  }
  std::lock_guard p(probe_mu);
  for (std::int64_t window = 2;; window *= 8) {
    const std::int64_t start = std::max(floor, stable - window);
    if (rd_kafka_consume_start(probe_topic, partition, start) != 0)
      return {-1, broker_error("cannot look at the end of partition " + std::to_string(partition),
                               rd_kafka_err2str(rd_kafka_last_error()))};
    std::int64_t last = -1;
    bool reached = false;
    const auto deadline = clock::now() + options.append_timeout;
    for (int waited = 0; clock::now() < deadline; waited = std::min(waited + 1, 20)) {
      // Short waits: the markers after the last record are taken in by a consume call that
      // then waits for more, and the position is what ends the look.
      auto* msg = rd_kafka_consume(probe_topic, partition, waited);
      if (msg != nullptr) {
        const bool data = msg->err == RD_KAFKA_RESP_ERR_NO_ERROR;
        const std::int64_t at = msg->offset;
        rd_kafka_message_destroy(msg);
        if (data && at < stable)
          last = std::max(last, at);
        if (data && at >= stable) {
          reached = true;
          break;
        }
      }
      // Past the records and transaction markers below `stable`.
      if (consumed_position(probe, partition) >= stable) {
        reached = true;
        break;
      }
    }
    rd_kafka_consume_stop(probe_topic, partition);
    if (!reached)
      return {-1,
              broker_error("the end of partition " + std::to_string(partition) + " did not arrive",
                           "fetch timed out")};
    if (last >= 0 || start == floor) {
      tail.stable = stable;
      tail.visible = last >= 0 ? last + 1 : floor_visible;
      return {tail.visible, std::nullopt};
    }
  }
}

read_result kafka_log::do_read(std::int32_t partition, std::int64_t from, std::size_t max) {
  auto& m = *impl_;
  read_result out;
  auto& r = *m.readers[partition];
  std::lock_guard l(r.mu);
  // Records exist at `from` only below the high watermark (the last stable offset: readers
  // read committed records only); never wait for others.
  std::int64_t high = 0;
  const rd_kafka_resp_err_t e = m.high_watermark(partition, high);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    out.failure = m.broker_error("cannot learn the end of partition " + std::to_string(partition),
                                 rd_kafka_err2str(e));
    return out;
  }
  if (from >= high)
    return out;
  if (m.sparse) {
    // Only transaction markers or aborted records from `from` on: nothing to wait for.
    auto& tail = *m.tails[static_cast<std::size_t>(partition)];
    std::lock_guard t(tail.mu);
    if (tail.stable == high && from >= tail.visible)
      return out;
  }
  if (!m.position(r, partition, from, out.failure))
    return out;
  // Dense offsets: exactly this many records are there. Sparse: fewer may be (markers and
  // aborted records take offsets); the read ends when the reader is past `high`.
  const std::size_t want =
    m.sparse ? max : static_cast<std::size_t>(std::min<std::int64_t>(max, high - from));
  std::int64_t expect = from;
  const auto deadline = clock::now() + m.options.append_timeout;
  auto at_end = [&] {
    return m.sparse && r.buffered.empty() && m.consumed_position(m.consumer, partition) >= high;
  };
  while (out.records.size() < want && !out.failure) {
    // Wait for the fetch while nothing is taken yet; afterwards take only what is there.
    const bool first = out.records.empty();
    if (first && clock::now() >= deadline) {
      out.failure = m.broker_error("records of partition " + std::to_string(partition) +
                                     " from offset " + std::to_string(from) + " did not arrive",
                                   "fetch timed out");
      break;
    }
    if (expect >= high || at_end())
      break;
    auto* msg = m.next_message(r, partition, first ? 100 : 0);
    if (msg == nullptr) {
      if (first || at_end())
        continue;
      break;
    }
    if (msg->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      if (transient(msg->err) && clock::now() < deadline) {
        // A leader moving: fetch again from where this read stands.
        rd_kafka_message_destroy(msg);
        m.restart_reader(r, partition);
        if (!m.position(r, partition, expect, out.failure))
          break;
        continue;
      }
      if (msg->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
        out.failure = m.broker_error("reading partition " + std::to_string(partition) + " failed",
                                     rd_kafka_message_errstr(msg));
    } else if (msg->offset < expect) {
      r.next = msg->offset + 1; // skipping up to `from`
    } else if (msg->offset == expect || (m.sparse && msg->offset < high)) {
      out.records.push_back({partition, msg->offset,
                             std::string(static_cast<const char*>(msg->key), msg->key_len),
                             std::string(static_cast<const char*>(msg->payload), msg->len)});
      expect = msg->offset + 1;
      r.next = expect;
    } else if (m.sparse) {
      // At or past `high`: kept for the next read.
      r.buffered.push_front(msg);
      break;
    } else {
      out.failure =
        error{errc::unavailable, m.where + ": partition " + std::to_string(partition) +
                                   " skipped from offset " + std::to_string(expect) + " to " +
                                   std::to_string(msg->offset) +
                                   "; records were deleted (retention?) — the event log must keep "
                                   "every record"};
    }
    rd_kafka_message_destroy(msg);
  }
  if (out.failure) {
    m.restart_reader(r, partition);
    out.records.clear();
  }
  return out;
}

offset_result kafka_log::do_end_offset(std::int32_t partition) {
  auto& m = *impl_;
  std::int64_t high = 0;
  const rd_kafka_resp_err_t e = m.high_watermark(partition, high);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
    return {-1, m.broker_error("cannot learn the end of partition " + std::to_string(partition),
                               rd_kafka_err2str(e))};
  if (m.sparse)
    return m.visible_end(partition, high);
  return {high, std::nullopt};
}

bool kafka_log::do_wait_for(std::int32_t partition, std::int64_t offset,
                            std::chrono::milliseconds timeout) {
  auto& m = *impl_;
  auto& r = *m.readers[partition];
  std::lock_guard l(r.mu);
  std::optional<error> failure;
  if (!m.position(r, partition, offset, failure))
    return false;
  const auto deadline = clock::now() + timeout;
  for (;;) {
    const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    // The broker holds each fetch until records arrive (fetch.wait.max.ms); this thread
    // sleeps in librdkafka's queue meanwhile.
    auto* msg = m.next_message(r, partition, to_ms(std::max(left, std::chrono::milliseconds(0))));
    if (msg == nullptr)
      return false;
    if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR && msg->offset >= r.next) {
      if (msg->offset >= offset) {
        // Kept for the read that follows.
        r.buffered.push_front(msg);
        return true;
      }
      r.next = msg->offset + 1;
    }
    rd_kafka_message_destroy(msg);
    if (clock::now() >= deadline)
      return false;
  }
}

} // namespace sandboxd::events
