// test_sandbox_machine.cpp — the sandbox state machine against docs/state-machine.md:
// every input in every state, plus the deadlines and the envelope of emitted events.
// (test_sandbox_machine_random.cpp drives random sequences through the same table.)
#define BOOST_TEST_MODULE sandbox_machine
#include <boost/test/unit_test.hpp>

#include "tests/actors/machine_sim.hpp"
#include "tests/actors/state_table.hpp"

#include <functional>
#include <set>

using namespace sandboxd;
using namespace sandboxd::actors;
using namespace sandboxd::actors::testing;
using namespace std::chrono_literals;

namespace {

// A canonical command for each row of the table, given the state it is sent to.
struct input_case {
  command_body body;
  bool late = false;        // sent long after every deadline (ten years on)
  bool needs_exec = false;  // the state is built with an exec in flight
  bool idle_delete = false; // the sandbox's idle action is delete
  bool run_timeout = false; // the sandbox has a run-time timeout (sandbox_timeouts::timeout)
  bool redacted = false;    // a deleted sandbox was redacted before
  bool pooled = false;      // the sandbox is a warm pool's, not claimed yet
};

events::file_op_requested intent(std::string op_id, events::file_op_kind kind, std::string path) {
  events::file_op_requested r;
  r.op_id = std::move(op_id);
  r.kind = kind;
  r.path = std::move(path);
  r.bytes = 12;
  return r;
}

const std::map<std::string, std::function<input_case(const sandbox_state&)>>& input_cases() {
  using C = input_case;
  static const std::map<std::string, std::function<input_case(const sandbox_state&)>> cases{
    {"create", [](auto&) { return C{cmd::create{canonical_spec("req-2")}}; }},
    {"create_same_request", [](auto&) { return C{cmd::create{canonical_spec("req-1")}}; }},
    {"create_invalid",
     [](auto&) {
       auto spec = canonical_spec("req-3");
       spec.template_name.clear();
       return C{cmd::create{spec}};
     }},
    {"pause_filesystem", [](auto&) { return C{cmd::pause{events::pause_mode::filesystem}}; }},
    {"pause_memory", [](auto&) { return C{cmd::pause{events::pause_mode::memory}}; }},
    {"resume", [](auto&) { return C{cmd::resume{}}; }},
    {"delete", [](auto&) { return C{cmd::remove{}}; }},
    {"exec",
     [](auto&) {
       return C{cmd::exec{"exec-2", {"python3", "-c", "1"}, "/work", 10s}};
     }},
    {"exec_invalid",
     [](auto&) {
       return C{cmd::exec{"exec-2", {}, "/work", 10s}};
     }},
    {"read_file",
     [](auto&) {
       return C{cmd::read_file{"/work/a.txt", std::nullopt}};
     }},
    {"read_file_invalid",
     [](auto&) {
       return C{cmd::list_dir{"work", std::nullopt}};
     }},
    {"read_served",
     [](auto&) {
       events::file_read served{"/work/a.txt", 12};
       return C{cmd::stat_path{"/work/a.txt", served}};
     }},
    {"file_change",
     [](auto&) {
       return C{cmd::write_file{intent("op-2", events::file_op_kind::write, "/work/a.txt"), {}}};
     }},
    {"file_change_invalid",
     [](auto&) {
       return C{cmd::remove_path{intent("op-2", events::file_op_kind::remove, "/work/../etc"), {}}};
     }},
    {"file_change_finished",
     [](const sandbox_state& s) {
       events::file_op_finished f;
       f.op_id = s.file_ops_in_flight.empty() ? "op-1" : s.file_ops_in_flight.front().op_id;
       C c{cmd::make_dir{{}, f}};
       c.needs_exec = true;
       return c;
     }},
    {"file_change_finished_unknown",
     [](auto&) {
       events::file_op_finished f;
       f.op_id = "op-9";
       return C{cmd::rename_path{{}, f}};
     }},
    {"kill_exec",
     [](const sandbox_state& s) {
       C c{cmd::kill_exec{s.execs_in_flight.empty() ? "exec-1" : s.execs_in_flight.front(), 9}};
       c.needs_exec = true;
       return c;
     }},
    {"kill_exec_unknown",
     [](auto&) {
       return C{cmd::kill_exec{"exec-9", 9}};
     }},
    {"timeout_timer_pause",
     [](auto&) {
       C c{cmd::timeout_timer{}, true};
       c.run_timeout = true;
       return c;
     }},
    {"timeout_timer_delete",
     [](auto&) {
       C c{cmd::timeout_timer{}, true, false, true};
       c.run_timeout = true;
       return c;
     }},
    {"timeout_timer_early", [](auto&) { return C{cmd::timeout_timer{}}; }},
    {"set_timeout",
     [](auto&) {
       return C{cmd::set_timeout{
         {10min, events::idle_action::delete_sandbox, events::pause_mode::memory, 2h, 0s}}};
     }},
    {"set_timeout_invalid",
     [](auto&) {
       return C{cmd::set_timeout{
         {-1s, events::idle_action::pause_sandbox, events::pause_mode::memory, 2h, 0s}}};
     }},
    {"snapshot",
     [](auto&) {
       return C{cmd::snapshot{"snap-0123456789abcdef", "op-s1", "before", std::nullopt}};
     }},
    {"snapshot_invalid",
     [](auto&) {
       return C{cmd::snapshot{"snap-1", "op-s1", "", std::nullopt}}; // a forged id
     }},
    {"snapshot_finished",
     [](const sandbox_state&) {
       events::snapshot_taken t;
       t.op_id = "op-s1";
       t.snapshot_id = "snap-0123456789abcdef";
       t.writable_layer_bytes = 8192;
       C c{cmd::snapshot{{}, {}, {}, t}};
       c.needs_exec = true;
       return c;
     }},
    {"snapshot_finished_unknown",
     [](auto&) {
       events::snapshot_taken t;
       t.op_id = "op-s9";
       t.snapshot_id = "snap-0123456789abcdef";
       return C{cmd::snapshot{{}, {}, {}, t}};
     }},
    {"delete_snapshot", [](auto&) { return C{cmd::delete_snapshot{"snap-0123456789abcdef"}}; }},
    {"delete_snapshot_invalid", [](auto&) { return C{cmd::delete_snapshot{"../../etc"}}; }},
    {"redact", [](auto&) { return C{cmd::redact{"privacy request 7"}}; }},
    {"redact_repeated",
     [](auto&) {
       C c{cmd::redact{"privacy request 8"}};
       c.redacted = true;
       return c;
     }},
    {"set_network",
     [](auto&) {
       return C{
         cmd::set_network{{events::network_mode::allow_list, {"pypi.org", "*.github.com:443"}}}};
     }},
    {"set_network_invalid",
     [](auto&) {
       return C{cmd::set_network{{events::network_mode::allow_list, {"not a rule"}}}};
     }},
    {"open_connection",
     [](auto&) {
       return C{cmd::open_connection{"conn-2", allowed_destination()}};
     }},
    {"open_connection_denied",
     [](auto&) {
       auto d = allowed_destination();
       d.name = "evil.example";
       return C{cmd::open_connection{"conn-2", d}};
     }},
    {"open_connection_invalid",
     [](auto&) {
       return C{cmd::open_connection{"", allowed_destination()}};
     }},
    {"dns_allowed",
     [](auto&) {
       events::net_destination d;
       d.protocol = events::net_protocol::dns;
       d.name = "pypi.org";
       d.source = events::name_source::dns_question;
       return C{cmd::open_connection{"", d}};
     }},
    {"close_connection",
     [](const sandbox_state& s) {
       events::connection_closed f;
       f.connection_id = s.connections_open.empty() ? "conn-1" : s.connections_open.front();
       f.bytes_out = 10;
       f.bytes_in = 20;
       C c{cmd::close_connection{f}};
       c.needs_exec = true;
       return c;
     }},
    {"close_connection_unknown",
     [](auto&) {
       events::connection_closed f;
       f.connection_id = "conn-9";
       return C{cmd::close_connection{f}};
     }},
    {"runtime_started", [](auto&) { return C{cmd::runtime_started{}}; }},
    {"claim",
     [](auto&) {
       C c{cmd::claim{canonical_claim("req-2")}};
       c.pooled = true;
       return c;
     }},
    {"claim_no_env",
     [](auto&) {
       auto claim = canonical_claim("req-2");
       claim.env.clear();
       C c{cmd::claim{claim}};
       c.pooled = true;
       return c;
     }},
    {"claim_same_request", [](auto&) { return C{cmd::claim{canonical_claim("req-1")}}; }},
    {"claim_invalid",
     [](auto&) {
       auto claim = canonical_claim("req-2");
       claim.labels.push_back({"", "no key"});
       C c{cmd::claim{claim}};
       c.pooled = true;
       return c;
     }},
    {"claim_not_pool", [](auto&) { return C{cmd::claim{canonical_claim("req-5")}}; }},
    {"runtime_claimed", [](auto&) { return C{cmd::runtime_claimed{}}; }},
    {"runtime_paused", [](auto&) { return C{cmd::runtime_paused{4096}}; }},
    {"runtime_resumed", [](auto&) { return C{cmd::runtime_resumed{}}; }},
    {"runtime_deleted", [](auto&) { return C{cmd::runtime_deleted{}}; }},
    {"runtime_failed", [](auto&) { return C{cmd::runtime_failed{"runsc: exit status 128"}}; }},
    {"runtime_lost",
     [](auto&) {
       return C{cmd::runtime_failed{"recovery found no container", true}};
     }},
    {"exec_finished",
     [](const sandbox_state& s) {
       std::string id = s.execs_in_flight.empty() ? "exec-1" : s.execs_in_flight.front();
       C c{cmd::exec_finished{id, 0, 0, 2s, 10, 0, false}};
       c.needs_exec = true;
       return c;
     }},
    {"exec_finished_unknown",
     [](auto&) {
       return C{cmd::exec_finished{"exec-9", 0, 0, 2s, 10, 0, false}};
     }},
    {"storage_sampled", [](auto&) { return C{cmd::storage_sampled{65536}}; }},
    {"idle_timer_pause",
     [](auto&) {
       return C{cmd::idle_timer{}, true};
     }},
    {"idle_timer_delete",
     [](auto&) {
       return C{cmd::idle_timer{}, true, false, true};
     }},
    {"idle_timer_early", [](auto&) { return C{cmd::idle_timer{}}; }},
    {"lifetime_timer",
     [](auto&) {
       return C{cmd::lifetime_timer{}, true};
     }},
    {"lifetime_timer_early", [](auto&) { return C{cmd::lifetime_timer{}}; }},
    {"retention_timer",
     [](auto&) {
       return C{cmd::retention_timer{}, true};
     }},
    {"retention_timer_early", [](auto&) { return C{cmd::retention_timer{}}; }},
  };
  return cases;
}

void must(machine_sim& sim, command_body body) {
  auto d = sim.apply(std::move(body));
  BOOST_REQUIRE_MESSAGE(d.ok(), "setting up: " << (d.ok() ? "" : d.failure().message));
}

// A sandbox in `column`'s state, reached through decide and evolve by the shortest path;
// with an exec, a file change, a connection and a snapshot started while running when
// `with_exec`; a warm pool's sandbox when `pooled` (a claiming one always is: claimed with
// canonical_claim()).
machine_sim build(const std::string& column, bool with_exec, bool pooled = false) {
  machine_sim sim;
  if (column == "absent")
    return sim;
  if (column == "claiming") {
    must(sim, cmd::create{pool_spec()});
    must(sim, cmd::runtime_started{});
    // The canonical policy, so that a connection's input is what it is for a created one.
    must(sim, cmd::set_network{canonical_spec().network});
    must(sim, cmd::claim{canonical_claim()});
    BOOST_REQUIRE_EQUAL(column_of(sim.state), column);
    return sim;
  }
  must(sim, cmd::create{pooled ? pool_spec() : canonical_spec()});
  if (column != "creating") {
    must(sim, cmd::runtime_started{});
    if (with_exec) {
      must(sim, cmd::exec{"exec-1", {"sleep", "100"}, "/", 0s});
      must(sim, cmd::write_file{intent("op-1", events::file_op_kind::write, "/a"), {}});
      must(sim, cmd::open_connection{"conn-1", allowed_destination()});
      must(sim, cmd::snapshot{"snap-0123456789abcdef", "op-s1", "", std::nullopt});
    }
  }
  if (column == "failed") {
    must(sim, cmd::runtime_failed{"container exited"});
  } else if (column == "deleting" || column == "deleted") {
    must(sim, cmd::remove{});
    if (column == "deleted")
      must(sim, cmd::runtime_deleted{});
  } else if (column != "creating" && column != "running") {
    bool memory = column.ends_with("_mem") || column == "resuming";
    must(sim, cmd::pause{memory ? events::pause_mode::memory : events::pause_mode::filesystem});
    if (!column.starts_with("pausing"))
      must(sim, cmd::runtime_paused{4096});
    if (column == "resuming")
      must(sim, cmd::resume{});
  }
  BOOST_REQUIRE_EQUAL(column_of(sim.state), column);
  return sim;
}

const state_table& table() {
  static const state_table t = load_state_table();
  return t;
}

} // namespace

BOOST_AUTO_TEST_SUITE(sandbox_machine)

BOOST_AUTO_TEST_CASE(document_lists_every_state_and_every_input) {
  const std::vector<std::string> columns{"absent",      "creating",  "running",    "pausing_fs",
                                         "pausing_mem", "paused_fs", "paused_mem", "resuming",
                                         "deleting",    "deleted",   "failed",     "claiming"};
  BOOST_TEST(table().columns == columns, boost::test_tools::per_element());
  std::set<std::string> documented(table().rows.begin(), table().rows.end());
  BOOST_TEST(documented.size() == table().rows.size(), "a row appears twice");
  for (const auto& [name, make] : input_cases())
    BOOST_TEST(documented.count(name) == 1, "input " << name << " is not in the table");
  for (const auto& row : table().rows)
    BOOST_TEST(input_cases().count(row) == 1, "the table's row " << row << " has no test input");
}

BOOST_AUTO_TEST_CASE(every_input_in_every_state_matches_the_table) {
  int checked = 0;
  for (const auto& row : table().rows) {
    for (const auto& column : table().columns) {
      BOOST_TEST_CONTEXT("input " << row << " in state " << column) {
        auto probe = build(column, false);
        const auto shape = input_cases().at(row)(probe.state);
        auto sim = build(column, shape.needs_exec, shape.pooled);
        auto in = input_cases().at(row)(sim.state);
        if (in.idle_delete)
          sim.state.spec.timeouts.on_idle = events::idle_action::delete_sandbox;
        if (in.run_timeout)
          sim.state.spec.timeouts.timeout = 2h;
        if (in.redacted && sim.state.status == sandbox_status::deleted)
          must(sim, cmd::redact{"request 1"});
        auto now = in.late ? sim.now + std::chrono::hours(24 * 365 * 10) : sim.now;
        const auto& expected = table().at(row, column);

        // The canonical command is the row it stands for, unless the cell says the input
        // cannot arise in this state.
        auto classified = input_of(sim.state, in.body, now);
        if (expected.what == cell::kind::not_applicable) {
          BOOST_TEST(classified != row, "n/a, but the input arises here");
          continue;
        }
        BOOST_TEST_REQUIRE(classified == row);

        auto d = decide(sim.state, make_command(in.body), now);
        auto after = sim.state;
        if (d.ok())
          for (const auto& e : d.emitted())
            after = evolve(after, e);
        auto why = mismatch(expected, d, after);
        BOOST_TEST(why.empty(), why);
        if (!d.ok())
          BOOST_TEST(d.failure().message.find(k_sandbox) != std::string::npos,
                     "the message names the sandbox: " << d.failure().message);
        if (d.ok())
          for (std::size_t i = 0; i < d.emitted().size(); ++i) {
            const auto& e = d.emitted()[i];
            BOOST_TEST(e.sequence == sim.state.sequence + i + 1);
            BOOST_TEST(e.event_id == k_sandbox + ":" + std::to_string(e.sequence));
            BOOST_TEST(e.sandbox_id == k_sandbox);
            BOOST_TEST(e.tenant == k_tenant);
            BOOST_TEST(e.principal == "alice@acme");
            BOOST_TEST(e.correlation_id == "corr-1");
            BOOST_TEST(e.causation_id == "cause-1");
            BOOST_TEST((e.occurred_at == now));
          }
        ++checked;
      }
    }
  }
  BOOST_TEST(checked > 300);
}

BOOST_AUTO_TEST_CASE(exec_on_paused_sandbox_is_conflict_and_says_to_resume) {
  auto sim = build("paused_mem", false);
  auto d = sim.apply(cmd::exec{"e", {"ls"}, "/", 0s});
  BOOST_REQUIRE(!d.ok());
  BOOST_TEST((d.failure().code == events::errc::conflict));
  BOOST_TEST(d.failure().message.find("resume it before exec") != std::string::npos);
}

// Bytes that are not UTF-8 text never reach the log from a create or an exec: the read models
// (PostgreSQL) and OCI runtimes take only text. Refused before any event, naming the field.
BOOST_AUTO_TEST_CASE(labels_template_env_and_argv_must_be_text) {
  using namespace std::string_literals;
  auto refused = [](command_body body, const std::string& state, const std::string& words) {
    auto sim = build(state, false);
    const auto before = sim.state.sequence;
    auto d = sim.apply(std::move(body));
    BOOST_TEST_REQUIRE(!d.ok());
    BOOST_TEST((d.failure().code == events::errc::invalid_argument));
    BOOST_TEST(d.failure().message.find(words) != std::string::npos, d.failure().message);
    BOOST_TEST(sim.state.sequence == before);
  };
  auto spec = canonical_spec("req-9");
  spec.labels = {{"customer", "\xFF\xFE"}};
  refused(cmd::create{spec}, "absent", "label \"customer\" holds a NUL byte or is not UTF-8");
  spec = canonical_spec("req-9");
  spec.labels = {{"a\0b"s, "v"}};
  refused(cmd::create{spec}, "absent", "is not UTF-8");
  spec = canonical_spec("req-9");
  spec.template_name = "base\xC0\xAF";
  refused(cmd::create{spec}, "absent", "template name");
  spec = canonical_spec("req-9");
  spec.env = {{"PATH", "/bin\xFF"}};
  refused(cmd::create{spec}, "absent", "env variable \"PATH\"");
  refused(cmd::exec{"e", {"echo", "\xFF"}, "/", 0s}, "running", "not UTF-8");
  refused(cmd::exec{"e", {"echo", "a\0b"s}, "/", 0s}, "running", "NUL");
  refused(cmd::exec{"e", {"ls"}, "/tmp/\xFF", 0s}, "running", "working directory");
}

BOOST_AUTO_TEST_CASE(file_write_on_memory_paused_sandbox_is_conflict_but_read_is_served) {
  auto sim = build("paused_mem", false);
  auto w = sim.apply(cmd::write_file{intent("op-1", events::file_op_kind::write, "/a"), {}});
  BOOST_REQUIRE(!w.ok());
  BOOST_TEST((w.failure().code == events::errc::conflict));
  auto admitted = sim.apply(cmd::read_file{"/a", std::nullopt});
  BOOST_REQUIRE(admitted.ok());
  BOOST_TEST(admitted.emitted().empty(), "a read is logged once served, not when admitted");
  auto r = sim.apply(cmd::read_file{"/a", events::file_read{"/a", 1}});
  BOOST_REQUIRE(r.ok());
  BOOST_TEST((std::get<events::file_read>(r.emitted().at(0).body).path == "/a"));
  BOOST_TEST((sim.state.status == sandbox_status::paused));
}

BOOST_AUTO_TEST_CASE(a_file_change_is_in_flight_from_its_intent_to_its_outcome) {
  auto sim = build("running", false);
  must(sim, cmd::make_dir{intent("op-1", events::file_op_kind::make_dir, "/w"), {}});
  BOOST_TEST((sim.state.file_ops_in_flight ==
              std::vector<file_op_in_flight>{{"op-1", events::file_op_kind::make_dir}}));
  must(sim, cmd::pause{events::pause_mode::filesystem});
  must(sim, cmd::runtime_paused{1});
  BOOST_TEST(sim.state.file_ops_in_flight.size() == 1u, "a pause does not end a file change");
  events::file_op_finished f;
  f.op_id = "op-1";
  f.kind = events::file_op_kind::make_dir;
  must(sim, cmd::make_dir{{}, f});
  BOOST_TEST(sim.state.file_ops_in_flight.empty());
  auto again = sim.apply(cmd::make_dir{{}, f});
  BOOST_TEST((!again.ok() && again.failure().code == events::errc::not_found));
}

BOOST_AUTO_TEST_CASE(secret_env_values_are_logged_only_by_name) {
  machine_sim sim;
  auto spec = canonical_spec();
  // A digest the caller put in is dropped too: nothing derived from a secret is logged.
  spec.env = {{"PLAIN", "visible", false, std::nullopt},
              {"TOKEN", "s3cr3t", true, sha256_of("s3cr3t")}};
  must(sim, cmd::create{spec});
  const auto& logged = std::get<events::created>(sim.log.back().body).env;
  BOOST_REQUIRE_EQUAL(logged.size(), 2u);
  BOOST_TEST(logged[0].value == "visible");
  BOOST_TEST(logged[1].value.empty());
  BOOST_TEST(logged[1].secret);
  BOOST_TEST(!logged[1].value_sha256.has_value());
  const auto digest = sha256_of("s3cr3t");
  const std::string digest_bytes(digest.begin(), digest.end());
  BOOST_TEST(events::encode(sim.log.back()).find("s3cr3t") == std::string::npos);
  BOOST_TEST(events::encode(sim.log.back()).find(digest_bytes) == std::string::npos);
  must(sim, cmd::runtime_started{});
  cmd::exec x{"e1", {"env"}, "/", 0s};
  x.env = {{"EXEC_SECRET", "hunter2", true, std::nullopt}};
  must(sim, x);
  BOOST_TEST(events::encode(sim.log.back()).find("hunter2") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(run_timeout_counts_from_the_last_start_or_resume_and_set_timeout_moves_it) {
  machine_sim sim;
  auto spec = canonical_spec();
  spec.timeouts.timeout = 10min;
  must(sim, cmd::create{spec});
  sim.now += 1min;
  must(sim, cmd::runtime_started{});
  const auto started_at = sim.log.back().occurred_at;
  BOOST_REQUIRE(next_deadlines(sim.state).timeout.has_value());
  BOOST_TEST((*next_deadlines(sim.state).timeout == started_at + 10min));
  // Seven minutes in, a new timeout of 20 minutes ends the run 20 minutes from now.
  sim.now = started_at + 7min;
  auto t = sim.state.spec.timeouts;
  t.timeout = 20min;
  must(sim, cmd::set_timeout{t});
  BOOST_TEST((*next_deadlines(sim.state).timeout == started_at + 27min));
  sim.now = started_at + 26min;
  auto early = sim.apply(cmd::timeout_timer{});
  BOOST_TEST((!early.ok() && early.failure().code == events::errc::conflict));
  sim.now = started_at + 27min;
  auto fired = sim.apply(cmd::timeout_timer{});
  BOOST_REQUIRE(fired.ok());
  BOOST_TEST((std::get<events::pause_requested>(fired.emitted().at(0).body).reason ==
              events::pause_reason::idle_timeout));
  BOOST_TEST(!next_deadlines(sim.state).timeout.has_value(), "no run timeout while pausing");
}

BOOST_AUTO_TEST_CASE(retried_create_returns_the_sandbox_without_new_events) {
  auto sim = build("running", false);
  auto before = sim.state;
  auto d = sim.apply(cmd::create{canonical_spec("req-1")});
  BOOST_REQUIRE(d.ok());
  BOOST_TEST(d.emitted().empty());
  BOOST_TEST((sim.state == before));
  auto other = sim.apply(cmd::create{canonical_spec("req-other")});
  BOOST_REQUIRE(!other.ok());
  BOOST_TEST((other.failure().code == events::errc::conflict));
}

BOOST_AUTO_TEST_CASE(idle_deadline_follows_last_activity_and_waits_for_execs) {
  auto sim = build("running", false);
  auto started_at = sim.log.back().occurred_at;
  BOOST_REQUIRE(next_deadlines(sim.state).idle.has_value());
  BOOST_TEST((*next_deadlines(sim.state).idle == started_at + 5min));

  sim.now = started_at + 4min;
  must(sim, cmd::exec{"e1", {"sleep", "600"}, "/", 0s});
  BOOST_TEST(!next_deadlines(sim.state).idle.has_value(), "no idle deadline while exec runs");
  sim.now = started_at + 30min;
  auto early = sim.apply(cmd::idle_timer{});
  BOOST_TEST((!early.ok() && early.failure().code == events::errc::conflict));

  must(sim, cmd::exec_finished{"e1", 0, 0, 26min, 0, 0, false});
  auto finished_at = sim.log.back().occurred_at;
  BOOST_TEST((*next_deadlines(sim.state).idle == finished_at + 5min));
  sim.now = finished_at + 5min;
  auto fired = sim.apply(cmd::idle_timer{});
  BOOST_REQUIRE(fired.ok());
  auto p = std::get<events::pause_requested>(fired.emitted().at(0).body);
  BOOST_TEST((p.reason == events::pause_reason::idle_timeout));
  BOOST_TEST((p.mode == events::pause_mode::filesystem));
}

BOOST_AUTO_TEST_CASE(lifetime_counts_from_creation_and_retention_from_pause) {
  auto sim = build("paused_fs", false);
  auto created_at = sim.log.front().occurred_at;
  auto paused_at = sim.log.back().occurred_at;
  auto d = next_deadlines(sim.state);
  BOOST_TEST((d.lifetime == created_at + 1h));
  BOOST_TEST((d.retention == paused_at + 24h));
  BOOST_TEST(!d.idle.has_value());

  sim.now = created_at + 1h - 1ns;
  BOOST_TEST(!sim.apply(cmd::lifetime_timer{}).ok());
  sim.now = created_at + 1h;
  auto fired = sim.apply(cmd::lifetime_timer{});
  BOOST_REQUIRE(fired.ok());
  BOOST_TEST((std::get<events::delete_requested>(fired.emitted().at(0).body).reason ==
              events::delete_reason::lifetime));
  BOOST_TEST(!next_deadlines(sim.state).lifetime.has_value(), "no lifetime while deleting");
}

BOOST_AUTO_TEST_CASE(filesystem_pause_ends_execs_memory_pause_keeps_them) {
  auto fs = build("paused_fs", true);
  BOOST_TEST(fs.state.execs_in_flight.empty());
  auto mem = build("paused_mem", true);
  BOOST_TEST(mem.state.execs_in_flight == std::vector<std::string>{"exec-1"},
             boost::test_tools::per_element());
}

// The runtime's measure of the layer at its removal is what `deleted` logs (storage billing
// closes on it, docs/billing.md); replaying the log gives the same state.
BOOST_AUTO_TEST_CASE(deleted_carries_the_layer_measured_at_the_removal) {
  auto sim = build("deleting", false);
  auto r = sim.apply(cmd::runtime_deleted{std::uint64_t{3} << 30});
  BOOST_REQUIRE(r.ok());
  BOOST_REQUIRE(!r.emitted().empty());
  const auto* d = std::get_if<events::deleted>(&r.emitted().back().body);
  BOOST_REQUIRE(d != nullptr);
  BOOST_TEST(d->writable_layer_bytes == std::uint64_t{3} << 30);
  BOOST_TEST((sim.state.status == sandbox_status::deleted));
  auto replayed = initial_state(k_sandbox);
  for (const auto& e : sim.log)
    replayed = evolve(replayed, e);
  BOOST_TEST((replayed == sim.state));
}

BOOST_AUTO_TEST_CASE(step_in_flight_names_the_transitional_state) {
  BOOST_TEST((step_in_flight(build("creating", false).state) == events::runtime_step::creating));
  BOOST_TEST((step_in_flight(build("pausing_mem", false).state) == events::runtime_step::pausing));
  BOOST_TEST((step_in_flight(build("resuming", false).state) == events::runtime_step::resuming));
  BOOST_TEST((step_in_flight(build("deleting", false).state) == events::runtime_step::deleting));
  BOOST_TEST(!step_in_flight(build("paused_fs", false).state).has_value());
  auto failed = build("failed", false).state;
  BOOST_TEST((failed.failed_step == events::runtime_step::running));
  BOOST_TEST(failed.failure_reason == "container exited");
}

BOOST_AUTO_TEST_CASE(evolve_ignores_a_duplicate_and_throws_on_a_gap) {
  auto sim = build("running", false);
  auto again = evolve(sim.state, sim.log.front());
  BOOST_TEST((again == sim.state));
  auto gap = sim.log.back();
  gap.sequence = sim.state.sequence + 2;
  BOOST_CHECK_THROW(evolve(sim.state, gap), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(rejection_event_only_advances_the_sequence) {
  auto sim = build("paused_mem", false);
  auto c = make_command(cmd::exec{"e", {"ls"}, "/", 0s});
  auto d = decide(sim.state, c, sim.now);
  BOOST_REQUIRE(!d.ok());
  auto e = rejection_event(sim.state, c, d.failure(), sim.now);
  BOOST_REQUIRE(e.has_value());
  BOOST_TEST(e->sequence == sim.state.sequence + 1);
  auto r = std::get<events::command_rejected>(e->body);
  BOOST_TEST((r.command == events::command_kind::exec));
  BOOST_TEST((r.code == events::errc::conflict));
  auto after = evolve(sim.state, *e);
  BOOST_TEST(after.sequence == sim.state.sequence + 1);
  after.sequence = sim.state.sequence;
  BOOST_TEST((after == sim.state));
  BOOST_TEST(!rejection_event(build("deleted", false).state, c, d.failure(), sim.now));
}

BOOST_AUTO_TEST_SUITE_END()
