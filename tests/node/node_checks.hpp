// node_checks — what the node tests on real sandboxes share: the precondition that a
// runtime can run here, exec and file operations through the node's control plane (waited
// for), exec through the driver alone (to look into a sandbox), and the check after a
// session that the read models equal a rebuild from offset zero, the audit log verifies
// and each event of a sandbox has its audit row with its outcome.
#pragma once

#include "node/runtime_set.hpp"
#include "projections/audit_log.hpp"
#include "projections/rebuild.hpp"
#include "tests/node/node_fixture.hpp"

#include <prometheus/metric_family.h>

#include <future>

namespace sandboxd::test {

namespace utf = boost::unit_test;
namespace proj = sandboxd::projections;

struct runtime_can_run {
  ev::runtime_kind kind;
  boost::test_tools::assertion_result operator()(utf::test_unit_id) const {
    boost::test_tools::assertion_result r(true);
    if (::geteuid() != 0) {
      r = false;
      r.message() << "real sandboxes need root";
    } else if (auto why = nd::runtime_unavailable(kind)) {
      r = false;
      r.message() << ev::to_string(kind) << " cannot run sandboxes here: " << *why;
    }
    return r;
  }
};

// Runs `argv` in the sandbox through the driver (the node's exec keeps no output).
inline rt::exec_result run_in(nd::node& n, ev::runtime_kind kind, const std::string& id,
                              std::vector<std::string> argv) {
  rt::exec_request r;
  r.argv = std::move(argv);
  r.timeout = 30s;
  auto x = n.driver(kind)->exec(id, r);
  BOOST_REQUIRE_MESSAGE(x.ok(), "exec in " << id << ": " << (x.ok() ? "" : x.err().message));
  return x.value();
}

// Starts an operation of the control plane with a `done` that fulfils a promise, and waits.
template <class T, class Start>
ac::op_result<T> wait_op(Start&& start) {
  auto p = std::make_shared<std::promise<ac::op_result<T>>>();
  auto f = p->get_future();
  start([p](ac::op_result<T> r) { p->set_value(std::move(r)); });
  return f.get();
}

inline ac::caller tester() {
  return ac::caller{"t1", "alice", unique_name("op-")};
}

// Runs an exec through the node's control plane; `out` gets the output as it streams.
inline ac::op_result<ev::exec_finished>
exec_through(nd::node& n, const std::string& id, ac::exec_request x, std::string* out = nullptr) {
  auto p = std::make_shared<std::promise<ac::op_result<ev::exec_finished>>>();
  n.plane().exec(
    id, ac::caller{"t1", "alice", "ops"}, std::move(x),
    [out](rt::output_stream s, std::string_view d) {
      if (out && s == rt::output_stream::out)
        *out += d;
    },
    [p](ac::op_result<ev::exec_finished> r) { p->set_value(std::move(r)); });
  return p->get_future().get();
}

// After a session: the read models equal a rebuild from offset zero, the audit log
// verifies, and the sandbox's audit rows are its events, one each, with their outcomes.
inline void check_read_models(nd::node& n, const std::vector<std::string>& sandboxes) {
  n.catch_up();
  const auto report =
    proj::rebuild_and_compare(n.log(), n.conninfo(), n.schema(), n.schema() + "_rebuild");
  for (const auto& d : report.differences)
    BOOST_ERROR("read model differs from a rebuild: " << d.table << " only in " << d.side << ": "
                                                      << d.row);
  BOOST_TEST(report.rows_compared > 0u);
  pqxx::connection c(n.conninfo());
  pqxx::work tx(c);
  tx.exec("SET search_path TO " + tx.quote_name(n.schema()));
  for (const auto& f : proj::verify_audit_log(tx))
    BOOST_ERROR("audit log: " << f.message);
  for (const auto& id : sandboxes) {
    const auto events = events_of(n.log(), id);
    std::set<std::pair<std::string, std::string>> expected, stored;
    for (const auto& e : events) {
      const auto row = proj::audit_row_of(e, n.log().partition_for(id));
      expected.emplace(row.event_id, row.action + "/" + row.outcome);
    }
    for (const auto& r : tx.exec_params("SELECT event_id, action, outcome FROM audit_log WHERE "
                                        "sandbox_id = $1",
                                        id))
      stored.emplace(r[0].as<std::string>(), r[1].as<std::string>() + "/" + r[2].as<std::string>());
    BOOST_TEST(stored == expected,
               id << ": audit rows differ from its " << events.size() << " events");
    const auto row = tx.exec_params("SELECT last_seq FROM sandboxes WHERE id = $1", id);
    BOOST_REQUIRE_EQUAL(row.size(), 1u);
    BOOST_TEST(row[0][0].as<std::uint64_t>() == events.back().sequence);
  }
}

// The execs and file changes of `events` that have no outcome event: "exec <id>" and
// "file op <id>", each once. Every started operation must end up with one.
inline std::vector<std::string> outcomes_missing(const std::vector<ev::event>& events) {
  std::set<std::string> open;
  for (const auto& e : events) {
    if (auto* s = std::get_if<ev::exec_started>(&e.body))
      open.insert("exec " + s->exec_id);
    else if (auto* f = std::get_if<ev::exec_finished>(&e.body))
      open.erase("exec " + f->exec_id);
    else if (auto* r = std::get_if<ev::file_op_requested>(&e.body))
      open.insert("file op " + r->op_id);
    else if (auto* d = std::get_if<ev::file_op_finished>(&e.body))
      open.erase("file op " + d->op_id);
  }
  return {open.begin(), open.end()};
}

// The value of metric `name` with `labels` among `families` (a histogram's sample count); -1
// when there is none.
inline double metric(const std::vector<prometheus::MetricFamily>& families, const std::string& name,
                     const std::map<std::string, std::string>& labels = {}) {
  for (const auto& f : families) {
    if (f.name != name)
      continue;
    for (const auto& m : f.metric) {
      std::map<std::string, std::string> have;
      for (const auto& l : m.label)
        have[l.name] = l.value;
      bool match = true;
      for (const auto& [k, v] : labels)
        match = match && have[k] == v;
      if (!match)
        continue;
      switch (f.type) {
      case prometheus::MetricType::Counter:
        return m.counter.value;
      case prometheus::MetricType::Gauge:
        return m.gauge.value;
      case prometheus::MetricType::Histogram:
        return static_cast<double>(m.histogram.sample_count);
      default:
        return m.untyped.value;
      }
    }
  }
  return -1;
}

} // namespace sandboxd::test
