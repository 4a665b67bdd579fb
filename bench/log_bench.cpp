// log_bench — throughput and latency of the event log, each next to the reference it is
// measured against in the same run:
//   file_log appends (256-byte records, fsync on, 64 concurrent appenders, each with one
//   append in flight: as chains of completion callbacks, the way sandboxd's journal
//   appends; again as 64 threads blocked in append_and_wait; and as 64 threads blocked on
//   append's future) against a plain write + fdatasync loop writing the very batch sizes
//   file_log's group commit wrote (appending to a file: fsync_limit_per_s; and, beside it,
//   the same loop over zeroed room, as file_log's writer does, each sync data-only:
//   fsync_zeroed_limit_per_s); file_log reads; kafka_log appends against a plain librdkafka
//   producer loop, both on one real broker (started here) with the same durability settings.
// Usage: log_bench [--json] [--records-per-appender N] [--kafka-records N] [--no-kafka]
// With --json the last line is one JSON object with every figure: file_append_per_s and
// its references are the callback run; file_threads_* the append_and_wait threads,
// file_future_* the threads on append().get().
#include "events/file_log.hpp"
#include "events/file_log_format.hpp"
#include "events/kafka_log.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/kafka_log_options.hpp"
#include "tests/support/temp_dir.hpp"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace sandboxd::events;
using clock_type = std::chrono::steady_clock;
namespace lf = sandboxd::events::file_log_format;

namespace {

constexpr std::size_t k_record_bytes = 256;
constexpr int k_appenders = 64;

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

std::string record_value(std::size_t i) {
  std::string v = "record-" + std::to_string(i) + "-";
  v.resize(k_record_bytes, 'x');
  return v;
}

struct file_figures {
  double append_per_s = 0;
  double ack_p50_ms = 0;
  double ack_p99_ms = 0;
  double limit_per_s = 0;        // the reference loop appending to the file
  double zeroed_limit_per_s = 0; // the same over zeroed room (data-only syncs)
  double mean_batch_records = 0;
  double read_per_s = 0;
};

// The byte size of every batch file_log wrote, in order, from its segment files.
std::vector<std::size_t> batch_sizes(const std::string& dir, std::size_t& records) {
  std::vector<std::size_t> out;
  records = 0;
  for (std::uint64_t n = 0;; ++n) {
    const std::string path = dir + "/" + lf::segment_file_name(n);
    if (!std::filesystem::exists(path))
      break;
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::uint64_t at = lf::k_segment_header_size;
    while (at < bytes.size()) {
      std::uint32_t length, count;
      if (lf::check_batch(bytes.data() + at, bytes.size() - at, length, count) !=
          lf::batch_check::ok) {
        // The room the writer zeroes ahead of its batches ends the segment while it is open.
        if (std::all_of(bytes.begin() + static_cast<std::ptrdiff_t>(at), bytes.end(),
                        [](char c) { return c == 0; }))
          break;
        throw std::runtime_error("bench: cannot parse " + path);
      }
      out.push_back(lf::k_batch_header_size + length);
      records += count;
      at += lf::k_batch_header_size + length;
    }
  }
  return out;
}

// The reference: one pwrite and one fdatasync per batch from `at` on, nothing else; returns
// seconds. `zeroed`: the range gets zeros first (synced, not timed), as file_log's writer
// zeroes room ahead of its batches, so every timed sync is data-only, like file_log's best
// case; otherwise the loop appends at the end of the file (each sync also commits the
// file's new size).
double fsync_reference(int fd, std::uint64_t& at, const std::vector<std::size_t>& sizes,
                       bool zeroed) {
  std::string buf(*std::max_element(sizes.begin(), sizes.end()), 'x');
  if (zeroed) {
    std::uint64_t total = 0;
    for (std::size_t s : sizes)
      total += s;
    const std::string zeros(total, '\0');
    if (::pwrite(fd, zeros.data(), zeros.size(), static_cast<off_t>(at)) !=
          static_cast<ssize_t>(zeros.size()) ||
        ::fdatasync(fd) != 0)
      throw std::runtime_error("bench: cannot zero the reference file");
  }
  const auto t0 = clock_type::now();
  for (std::size_t s : sizes) {
    if (::pwrite(fd, buf.data(), s, static_cast<off_t>(at)) != static_cast<ssize_t>(s) ||
        ::fdatasync(fd) != 0)
      throw std::runtime_error("bench: write/fdatasync failed");
    at += s;
  }
  return seconds_since(t0);
}

// Appends and the reference alternate in rounds, so both see the same disk: on a shared
// machine the cost of an fdatasync drifts from one second to the next.
enum class appender_kind {
  // An appender is a chain of appends: each append's completion callback records its
  // latency and issues the appender's next append. No thread per appender; this is how
  // sandboxd's journal appends (actors never block a thread on the log).
  callback,
  // An appender is a thread blocked in append_and_wait.
  thread_wait,
  // An appender is a thread blocked on append()'s future.
  thread_future,
};

// 64 appenders, each with one append in flight, chained through completion callbacks.
// Returns the failures; fills `lat` (per appender, ms).
int run_callback_appenders(file_log& log, int per, std::vector<std::vector<double>>& lat) {
  struct chain {
    file_log* log;
    std::string key;
    int left;
    clock_type::time_point started;
    std::vector<double>* lat;
  };
  std::mutex mu;
  std::condition_variable cv;
  int running = k_appenders, failures = 0;
  std::vector<chain> chains(k_appenders);
  std::function<void(chain&, std::size_t)> issue = [&](chain& c, std::size_t i) {
    c.started = clock_type::now();
    c.log->append({{c.key, record_value(i)}}, [&, cp = &c, i](append_result r) {
      chain& c = *cp;
      c.lat->push_back(seconds_since(c.started) * 1000.0);
      if (r.ok() && --c.left > 0) {
        issue(c, i + 1);
        return;
      }
      std::lock_guard l(mu);
      failures += !r.ok();
      if (--running == 0)
        cv.notify_one();
    });
  };
  for (int t = 0; t < k_appenders; ++t) {
    lat[t].reserve(per);
    chains[t] = {&log, "sb_bench_" + std::to_string(t), per, {}, &lat[t]};
  }
  for (int t = 0; t < k_appenders; ++t)
    issue(chains[t], 0);
  std::unique_lock l(mu);
  cv.wait(l, [&] { return running == 0; });
  return failures;
}

file_figures bench_file(int per_appender, int rounds, appender_kind kind, bool reads) {
  sandboxd::test::temp_dir tmp{"log-bench"};
  file_figures f;
  file_log_options o;
  o.dir = tmp.path() + "/log";
  o.partitions = 8;
  // Two reference files, created as a segment is: a first write, synced with its directory
  // entry. One is appended to, the other zeroed ahead of its batches.
  int reference_fd[2];
  std::uint64_t reference_at[2] = {16, 16};
  for (int i = 0; i < 2; ++i) {
    const std::string path = tmp.path() + "/reference" + std::to_string(i);
    reference_fd[i] = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int dir_fd = ::open(tmp.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (reference_fd[i] < 0 || ::write(reference_fd[i], "reference header", 16) != 16 ||
        ::fdatasync(reference_fd[i]) != 0 || ::fsync(dir_fd) != 0)
      throw std::runtime_error("bench: cannot prepare " + path);
    ::close(dir_fd);
  }
  std::vector<double> latencies;
  double append_secs = 0, reference_secs = 0, zeroed_reference_secs = 0;
  std::size_t appended = 0, batches_seen = 0, records_seen = 0;
  {
    file_log log(o);
    for (int round = 0; round < rounds; ++round) {
      const int per = per_appender / rounds;
      std::vector<std::vector<double>> lat(k_appenders);
      std::vector<std::thread> threads;
      std::atomic<int> failures{0};
      const auto t0 = clock_type::now();
      if (kind == appender_kind::callback)
        failures = run_callback_appenders(log, per, lat);
      for (int t = 0; kind != appender_kind::callback && t < k_appenders; ++t)
        threads.emplace_back([&, t] {
          lat[t].reserve(per);
          const std::string key = "sb_bench_" + std::to_string(t);
          for (int i = 0; i < per; ++i) {
            const auto a0 = clock_type::now();
            std::vector<log_record> batch = {{key, record_value(static_cast<std::size_t>(i))}};
            auto r = kind == appender_kind::thread_future ? log.append(std::move(batch)).get()
                                                          : log.append_and_wait(batch);
            lat[t].push_back(seconds_since(a0) * 1000.0);
            failures += !r.ok();
          }
        });
      for (auto& th : threads)
        th.join();
      append_secs += seconds_since(t0);
      if (failures.load() != 0)
        throw std::runtime_error("bench: file_log appends failed");
      appended += static_cast<std::size_t>(k_appenders) * per;
      for (auto& l : lat)
        latencies.insert(latencies.end(), l.begin(), l.end());
      // This round's batches, exactly as group commit wrote them.
      std::size_t records = 0;
      auto sizes = batch_sizes(o.dir, records);
      std::vector<std::size_t> fresh(sizes.begin() + static_cast<std::ptrdiff_t>(batches_seen),
                                     sizes.end());
      batches_seen = sizes.size();
      records_seen = records;
      reference_secs += fsync_reference(reference_fd[0], reference_at[0], fresh, false);
      zeroed_reference_secs += fsync_reference(reference_fd[1], reference_at[1], fresh, true);
    }
    f.append_per_s = static_cast<double>(appended) / append_secs;
    f.limit_per_s = static_cast<double>(records_seen) / reference_secs;
    f.zeroed_limit_per_s = static_cast<double>(records_seen) / zeroed_reference_secs;
    f.mean_batch_records = static_cast<double>(records_seen) / static_cast<double>(batches_seen);

    // Reads: every partition from the start, twice, in chunks of 1000.
    std::size_t read = 0;
    const auto r0 = clock_type::now();
    for (int round = 0; reads && round < 2; ++round)
      for (std::int32_t p = 0; p < log.partitions(); ++p) {
        std::int64_t at = 0;
        for (;;) {
          auto r = log.read(p, at, 1000);
          if (r.records.empty())
            break;
          at += static_cast<std::int64_t>(r.records.size());
          read += r.records.size();
        }
      }
    f.read_per_s = static_cast<double>(read) / seconds_since(r0);
  }
  ::close(reference_fd[0]);
  ::close(reference_fd[1]);
  std::sort(latencies.begin(), latencies.end());
  f.ack_p50_ms = latencies[latencies.size() / 2];
  f.ack_p99_ms = latencies[latencies.size() * 99 / 100];
  return f;
}

struct kafka_figures {
  double append_per_s = 0;
  double raw_per_s = 0;
};

// A plain producer loop: produce every record, then flush; the same durability settings
// kafka_log uses (idempotent, acks=all, murmur2_random, linger.ms=2).
double raw_rdkafka(const std::string& bootstrap, const std::string& topic, std::size_t n) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  for (auto [k, v] :
       std::vector<std::pair<const char*, const char*>>{{"bootstrap.servers", bootstrap.c_str()},
                                                        {"enable.idempotence", "true"},
                                                        {"acks", "all"},
                                                        {"partitioner", "murmur2_random"},
                                                        {"linger.ms", "2"},
                                                        {"log_level", "3"}})
    rd_kafka_conf_set(conf, k, v, err, sizeof err);
  static std::atomic<std::size_t> delivered, failed;
  delivered = 0;
  failed = 0;
  rd_kafka_conf_set_dr_msg_cb(
    conf, [](rd_kafka_t*, const rd_kafka_message_t* m, void*) { (m->err ? failed : delivered)++; });
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (rk == nullptr)
    throw std::runtime_error(std::string("bench: producer: ") + err);
  std::vector<std::string> values(n);
  for (std::size_t i = 0; i < n; ++i)
    values[i] = record_value(i);
  const auto t0 = clock_type::now();
  for (std::size_t i = 0; i < n; ++i) {
    const std::string key = "sb_bench_" + std::to_string(i % k_appenders);
    for (;;) {
      auto e = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic.c_str()),
                                 RD_KAFKA_V_KEY(key.data(), key.size()),
                                 RD_KAFKA_V_VALUE(values[i].data(), values[i].size()),
                                 RD_KAFKA_V_MSGFLAGS(0), RD_KAFKA_V_END);
      if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        rd_kafka_poll(rk, 1);
        continue;
      }
      if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
        throw std::runtime_error(std::string("bench: produce: ") + rd_kafka_err2str(e));
      break;
    }
    rd_kafka_poll(rk, 0);
  }
  rd_kafka_flush(rk, 120000);
  const double secs = seconds_since(t0);
  rd_kafka_destroy(rk);
  if (failed.load() != 0 || delivered.load() != n)
    throw std::runtime_error("bench: raw producer lost records");
  return static_cast<double>(n) / secs;
}

// kafka_log: 64 appenders, each keeping up to 16 appends of 8 records in flight (as a
// journal that batches and pipelines would), so the producer sees as much at once as the
// raw loop gives it.
double kafka_appends(const std::string& bootstrap, const std::string& topic, std::size_t n) {
  constexpr std::size_t batch = 8, window = 16;
  kafka_log log(sandboxd::test::single_broker_log(bootstrap, topic, 8));
  const std::size_t per = n / k_appenders / batch;
  std::atomic<std::size_t> failures{0};
  std::vector<std::thread> threads;
  const auto t0 = clock_type::now();
  for (int t = 0; t < k_appenders; ++t)
    threads.emplace_back([&, t] {
      std::mutex mu;
      std::condition_variable cv;
      std::size_t inflight = 0;
      const std::string key = "sb_bench_" + std::to_string(t);
      for (std::size_t i = 0; i < per; ++i) {
        {
          std::unique_lock l(mu);
          cv.wait(l, [&] { return inflight < window; });
          ++inflight;
        }
        std::vector<log_record> records;
        for (std::size_t j = 0; j < batch; ++j)
          records.push_back({key, record_value(i * batch + j)});
        log.append(std::move(records), [&](append_result r) {
          failures += !r.ok();
          std::lock_guard l(mu);
          --inflight;
          cv.notify_all();
        });
      }
      std::unique_lock l(mu);
      cv.wait(l, [&] { return inflight == 0; });
    });
  for (auto& th : threads)
    th.join();
  const double secs = seconds_since(t0);
  if (failures.load() != 0)
    throw std::runtime_error("bench: kafka_log appends failed");
  return static_cast<double>(per * batch * k_appenders) / secs;
}

kafka_figures bench_kafka(std::size_t n) {
  kafka_figures k;
  sandboxd::test::kafka_broker broker;
  sandboxd::test::create_topic(broker.bootstrap(), "bench-raw", 8);
  // Warm both paths up once (connections, metadata, producer id), then measure.
  raw_rdkafka(broker.bootstrap(), "bench-raw", 1000);
  k.raw_per_s = raw_rdkafka(broker.bootstrap(), "bench-raw", n);
  kafka_appends(broker.bootstrap(), "bench-log", 4096);
  k.append_per_s = kafka_appends(broker.bootstrap(), "bench-log", n);
  return k;
}

} // namespace

int main(int argc, char** argv) {
  bool json = false, kafka = true;
  int per_appender = 1000;
  int rounds = 5;
  std::size_t kafka_records = 300000;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json")
      json = true;
    else if (a == "--no-kafka")
      kafka = false;
    else if (a == "--records-per-appender" && i + 1 < argc)
      per_appender = std::stoi(argv[++i]);
    else if (a == "--kafka-records" && i + 1 < argc)
      kafka_records = std::stoul(argv[++i]);
    else {
      std::fprintf(stderr, "usage: log_bench [--json] [--records-per-appender N] "
                           "[--kafka-records N] [--no-kafka]\n");
      return 2;
    }
  }
  auto f = bench_file(per_appender, rounds, appender_kind::callback, true);
  auto fw = bench_file(per_appender, rounds, appender_kind::thread_wait, false);
  auto ff = bench_file(per_appender, rounds, appender_kind::thread_future, false);
  for (const auto& [what, x] :
       {std::pair{"callback chains", &f}, std::pair{"threads in append_and_wait", &fw},
        std::pair{"threads on append().get()", &ff}})
    std::printf("file_log, %d appenders as %s: %.0f records/s (%zu-byte records, fsync on; "
                "%.1f records per group commit; ack p50 %.2f ms, p99 %.2f ms); "
                "write+fdatasync of the same batches: %.0f records/s (file_log at %.2f of it); "
                "the same over zeroed room: %.0f records/s\n",
                k_appenders, what, x->append_per_s, k_record_bytes, x->mean_batch_records,
                x->ack_p50_ms, x->ack_p99_ms, x->limit_per_s, x->append_per_s / x->limit_per_s,
                x->zeroed_limit_per_s);
  std::printf("file_log read: %.0f records/s\n", f.read_per_s);
  kafka_figures k;
  if (kafka) {
    k = bench_kafka(kafka_records);
    std::printf("kafka_log append: %.0f records/s; raw librdkafka loop: %.0f records/s "
                "(kafka_log at %.2f of it)\n",
                k.append_per_s, k.raw_per_s, k.append_per_s / k.raw_per_s);
  }
  if (json) {
    std::printf("{\"file_append_per_s\": %.0f, \"fsync_limit_per_s\": %.0f, "
                "\"file_vs_limit\": %.3f, \"file_ack_p50_ms\": %.3f, \"file_ack_p99_ms\": %.3f, "
                "\"file_mean_batch_records\": %.1f, \"file_read_per_s\": %.0f, "
                "\"fsync_zeroed_limit_per_s\": %.0f, \"file_vs_zeroed_limit\": %.3f",
                f.append_per_s, f.limit_per_s, f.append_per_s / f.limit_per_s, f.ack_p50_ms,
                f.ack_p99_ms, f.mean_batch_records, f.read_per_s, f.zeroed_limit_per_s,
                f.append_per_s / f.zeroed_limit_per_s);
    for (const auto& [name, x] : {std::pair{"threads", &fw}, std::pair{"future", &ff}})
      std::printf(", \"file_%s_append_per_s\": %.0f, \"file_%s_limit_per_s\": %.0f, "
                  "\"file_%s_vs_limit\": %.3f, \"file_%s_ack_p50_ms\": %.3f, "
                  "\"file_%s_ack_p99_ms\": %.3f, \"file_%s_mean_batch_records\": %.1f",
                  name, x->append_per_s, name, x->limit_per_s, name,
                  x->append_per_s / x->limit_per_s, name, x->ack_p50_ms, name, x->ack_p99_ms, name,
                  x->mean_batch_records);
    if (kafka)
      std::printf(", \"kafka_append_per_s\": %.0f, \"raw_rdkafka_per_s\": %.0f, "
                  "\"kafka_vs_raw\": %.3f",
                  k.append_per_s, k.raw_per_s, k.append_per_s / k.raw_per_s);
    std::printf("}\n");
  }
  return 0;
}
