// Replay-based debugging: replay (a sandbox's events, each with the state after it) and
// diff (what changed between two of its sequence numbers), folded from the event log
// itself. Through the daemon (admin scope: it reads its own log), or offline, with no
// daemon: --data-dir reads a node's file log (or a copy of it) read-only, never changing a
// byte of the directory; --brokers/--topic reads the Kafka topic from offset 0 without a
// consumer group.
#include "cli/command_support.hpp"
#include "cli/command_table.hpp"
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/replay_view.hpp"
#include "cli/time_arg.hpp"
#include "events/file_log_reader.hpp"
#include "events/kafka_log.hpp"

#include <filesystem>
#include <memory>

namespace sandboxd::cli {
namespace {

struct log_source {
  std::string data_dir;
  std::string brokers;
  std::string topic = "sandboxd-events";
  std::int32_t partitions = 8;
};

void add_source_flags(CLI::App* c, log_source& s) {
  auto* dir = c->add_option("--data-dir", s.data_dir,
                            "read the file log of this data directory (a node's DATA_DIR, its "
                            "log/ folder, or a copy), read-only, with no daemon (default: ask "
                            "the daemon, admin scope)")
                ->type_name("DIR");
  c->add_option("--brokers", s.brokers, "read the log from this Kafka cluster, with no daemon")
    ->type_name("HOST:PORT,...")
    ->excludes(dir);
  c->add_option("--topic", s.topic, "the Kafka topic of the log (with --brokers)")
    ->type_name("TOPIC")
    ->capture_default_str();
  c->add_option("--partitions", s.partitions,
                "the topic's partition count, as the daemon is configured (with --brokers)")
    ->type_name("N")
    ->capture_default_str();
}

// The log named by the flags. Throws log_fault when it cannot be opened.
std::unique_ptr<events::event_log> open_log(const log_source& s) {
  if (!s.data_dir.empty()) {
    // A node keeps its file log in DATA_DIR/log; the log's own directory is taken too.
    const std::string nested = s.data_dir + "/log";
    const bool node_dir =
      !std::filesystem::exists(s.data_dir + "/META") && std::filesystem::exists(nested + "/META");
    return std::make_unique<events::file_log_reader>(node_dir ? nested : s.data_dir);
  }
  events::kafka_log_options o;
  o.bootstrap_servers = s.brokers;
  o.topic = s.topic;
  o.partitions = s.partitions;
  // Reading only: the topic's replication and retention settings are the writer's concern.
  o.replication_factor = 1;
  o.min_insync_replicas = 1;
  o.check_topic_configs = false;
  o.warn = [](const std::string&) {};
  o.open_timeout = std::chrono::seconds(15);
  return std::make_unique<events::kafka_log>(o);
}

// The sandbox's history: from the log the flags name, or from the daemon (admin scope),
// which reads it from its own log. Faults of an offline log are std::exception.
result<std::vector<replay::history_entry>> history_of(context& cx, const log_source& src,
                                                      const std::string& id) {
  if (src.data_dir.empty() && src.brokers.empty()) {
    auto c = cx.client();
    if (!c)
      return c.err();
    auto events = (*c)->history(id);
    if (!events)
      return events.err();
    std::vector<replay::history_entry> h;
    for (auto& e : *events)
      h.push_back({e.partition, e.offset, std::move(e.event)});
    return h;
  }
  auto log = open_log(src);
  auto h = replay::read_history(*log, id);
  if (h.empty())
    return make_error(errc::not_found, "sandbox " + id + " has no events in " + log->describe() +
                                         "; check the sandbox id and the log");
  return h;
}

// The sandbox's history folded up to `bound`, or the exit code of the failure reported.
int with_steps(context& cx, const log_source& src, const std::string& id,
               const replay::replay_bound& bound,
               const std::function<int(std::vector<replay::replay_step>&)>& body) {
  try {
    auto history = history_of(cx, src, id);
    if (!history)
      return cx.fail(history.err());
    auto steps = replay::fold_history(id, std::move(*history), bound);
    return body(steps);
  } catch (const std::exception& e) {
    // The log cannot be read (damage, a broker down) or holds a gap: faults, told as such.
    return cx.fail(make_error(errc::internal, e.what()));
  }
}

void add_replay(command_table& t) {
  struct args {
    std::string id, at;
    std::optional<std::uint64_t> until_seq;
    log_source src;
  };
  auto a = std::make_shared<args>();
  auto* c = t.add(
    t.app(), "replay",
    "A sandbox's events from the log, each with the state after it (status, limits, pause "
    "mode, writable bytes, execs in flight, deadlines)",
    "  sandboxctl replay sb-0a1b2c3d4e5f --data-dir /backup/node-1\n"
    "  sandboxctl replay sb-0a1b2c3d4e5f --data-dir /backup/node-1 --at 2026-12-01T13:59:27Z\n"
    "  sandboxctl --json replay sb-0a1b2c3d4e5f --brokers kafka:9092 --until-seq 12",
    [a](context& cx) {
      replay::replay_bound bound;
      bound.until_seq = a->until_seq;
      if (!a->at.empty()) {
        auto at = parse_time(a->at, cx.now());
        if (!at)
          return cx.usage("--at: " + at.err().message);
        bound.at = *at;
      }
      return with_steps(cx, a->src, a->id, bound, [&](std::vector<replay::replay_step>& steps) {
        for (const auto& s : steps) {
          if (cx.as_json())
            cx.print(step_json(s));
          else
            cx.out(step_text(s));
        }
        if (steps.empty() && !cx.as_json())
          cx.note("sandbox " + a->id + " had no event yet at that point");
        return k_exit_ok;
      });
    });
  c->add_option("id", a->id, "the sandbox's id")->required()->type_name("ID");
  auto* until =
    c->add_option("--until-seq", a->until_seq, "stop after this sequence number")->type_name("N");
  c->add_option("--at", a->at, "stop at this instant: the last state is the sandbox at TIME")
    ->type_name("TIME")
    ->excludes(until);
  add_source_flags(c, a->src);
}

void add_diff(command_table& t) {
  struct args {
    std::string id;
    std::uint64_t from_seq = 0, to_seq = 0;
    log_source src;
  };
  auto a = std::make_shared<args>();
  auto* c = t.add(
    t.app(), "diff",
    "What changed in a sandbox's state between two of its sequence numbers (fields, timers, "
    "execs), and the events that changed it",
    "  sandboxctl diff sb-0a1b2c3d4e5f --from-seq 4 --to-seq 9 --data-dir /backup/node-1",
    [a](context& cx) {
      if (a->to_seq < a->from_seq)
        return cx.usage("--to-seq must not be below --from-seq");
      replay::replay_bound bound;
      bound.until_seq = a->to_seq;
      return with_steps(cx, a->src, a->id, bound, [&](std::vector<replay::replay_step>& steps) {
        const auto before = replay::state_after(a->id, steps, a->from_seq);
        const auto after = replay::state_after(a->id, steps, a->to_seq);
        std::vector<replay::replay_step> between;
        for (auto& s : steps)
          if (s.event.sequence > a->from_seq)
            between.push_back(std::move(s));
        const auto changes = replay::diff_states(before, after);
        if (cx.as_json())
          cx.print(diff_json(a->from_seq, a->to_seq, changes, between));
        else
          cx.out(diff_text(changes, between));
        return k_exit_ok;
      });
    });
  c->add_option("id", a->id, "the sandbox's id")->required()->type_name("ID");
  c->add_option("--from-seq", a->from_seq,
                "the earlier point: the state after this sequence "
                "number (0: before the sandbox existed)")
    ->required()
    ->type_name("A");
  c->add_option("--to-seq", a->to_seq, "the later point: the state after this sequence number")
    ->required()
    ->type_name("B");
  add_source_flags(c, a->src);
}

} // namespace

void add_replay_commands(command_table& t) {
  add_replay(t);
  add_diff(t);
}

} // namespace sandboxd::cli
