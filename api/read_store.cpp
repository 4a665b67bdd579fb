#include "api/read_store.hpp"

#include "projections/audit_log.hpp"
#include "projections/billing_report.hpp"
#include "projections/pg_array.hpp"
#include "projections/projection_status.hpp"
#include "projections/rebuild.hpp"
#include "projections/sandbox_row.hpp"
#include "replay/sandbox_history.hpp"

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

namespace {
// Every read of the read models sees one snapshot (REPEATABLE READ): under READ COMMITTED
// each statement has its own, so a verification read an audit chain's head and then rows
// the projector committed after it, and reported them as written outside the projection.
using snapshot_read = pqxx::transaction<pqxx::repeatable_read, pqxx::read_only>;
} // namespace

#include <mutex>

namespace sandboxd::api {
namespace {

std::string to_hex(std::string_view bytes) {
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(k_hex[c >> 4]);
    out.push_back(k_hex[c & 15]);
  }
  return out;
}

std::optional<std::string> from_hex(std::string_view hex) {
  const auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    return -1;
  };
  if (hex.size() % 2)
    return std::nullopt;
  std::string out;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0)
      return std::nullopt;
    out.push_back(static_cast<char>(hi << 4 | lo));
  }
  return out;
}

// A page token: the keyset position as a JSON array, hex-encoded.
std::string make_token(const nlohmann::json& position) {
  return to_hex(position.dump());
}

std::optional<nlohmann::json> read_token(const std::string& token, std::size_t fields) {
  auto text = from_hex(token);
  if (!text)
    return std::nullopt;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_array() || j.size() != fields)
    return std::nullopt;
  return j;
}

error bad_token(const char* call) {
  return make_error(errc::invalid_argument, std::string("the page token is not one ") + call +
                                              " returned; pass nextPageToken unchanged, or "
                                              "\"\" for the first page");
}

std::uint32_t page_limit(std::uint32_t asked) {
  return asked == 0 ? 100 : std::min(asked, read_store::k_max_page);
}

constexpr double k_gib_ms = double(projections::bytes_per_gib) * 1000.0;

} // namespace

struct read_store::pool {
  std::mutex mu;
  std::vector<std::unique_ptr<pqxx::connection>> idle;
};

read_store::read_store(std::string conninfo, std::string schema)
    : conninfo_(std::move(conninfo)), schema_(std::move(schema)), pool_(std::make_unique<pool>()) {}

read_store::~read_store() = default;

template <class T, class F>
result<T> read_store::with_connection(const char* what, F&& f) {
  std::unique_ptr<pqxx::connection> c;
  {
    std::lock_guard l(pool_->mu);
    if (!pool_->idle.empty()) {
      c = std::move(pool_->idle.back());
      pool_->idle.pop_back();
    }
  }
  try {
    if (!c)
      c = std::make_unique<pqxx::connection>(conninfo_);
    result<T> out = f(*c);
    std::lock_guard l(pool_->mu);
    pool_->idle.push_back(std::move(c));
    return out;
  } catch (const pqxx::broken_connection& e) {
    return make_error(errc::unavailable, std::string("the read models' PostgreSQL cannot be "
                                                     "reached for ") +
                                           what + " (" + e.what() + "); retry later");
  } catch (const pqxx::failure& e) {
    // The connection may be in any state after a failed statement: it is not reused.
    return make_error(errc::unavailable, std::string("the read models' PostgreSQL failed ") + what +
                                           " (" + e.what() + "); retry later");
  }
}

result<list_page> read_store::list(const std::string& tenant, const list_filter& q) {
  std::optional<nlohmann::json> after;
  if (!q.page_token.empty()) {
    after = read_token(q.page_token, 2);
    if (!after || !(*after)[0].is_number_integer() || !(*after)[1].is_string())
      return bad_token("list");
  }
  const auto limit = page_limit(q.limit);
  projections::pg_array states;
  for (const auto& s : q.states)
    states.add(s);
  return with_connection<list_page>("list", [&](pqxx::connection& c) -> result<list_page> {
    snapshot_read tx(c);
    tx.exec("SET LOCAL search_path TO " + tx.quote_name(schema_));
    const std::int64_t after_us = after ? (*after)[0].get<std::int64_t>() : 0;
    const std::string after_id = after ? (*after)[1].get<std::string>() : std::string();
    auto rows = tx.exec_params(
      "SELECT id, state, template, limits::text, labels::text, pause_mode, writable_layer_bytes,"
      " (extract(epoch FROM created_at) * 1000000)::bigint,"
      " (extract(epoch FROM updated_at) * 1000000)::bigint, last_seq, runtime"
      " FROM sandboxes"
      " WHERE tenant = $1"
      "   AND ($2 OR NOT deleted OR cardinality($3::text[]) > 0)"
      "   AND (cardinality($3::text[]) = 0 OR state = ANY($3::text[]))"
      "   AND labels @> $4::jsonb"
      "   AND (NOT $5 OR (created_at, id) < (to_timestamp(0) + $6 * interval '1 microsecond', $7))"
      " ORDER BY created_at DESC, id DESC LIMIT $8",
      tenant, q.include_deleted, states.str(), projections::labels_json(q.labels),
      after.has_value(), after_us, after_id, limit + 1);
    list_page page;
    for (const auto& r : rows) {
      if (page.rows.size() == limit) {
        const auto& last = page.rows.back();
        page.next_page_token = make_token({last.created_at_ns / 1000, last.id});
        break;
      }
      sandbox_summary s;
      s.id = r[0].as<std::string>();
      s.state = r[1].as<std::string>();
      s.template_name = r[2].as<std::string>();
      auto lj = nlohmann::json::parse(r[3].as<std::string>());
      s.limits.memory_mib = lj.value("memory_mib", 0u);
      s.limits.cpu_millicores = lj.value("cpu_millicores", 0u);
      s.limits.pids = lj.value("pids", 0u);
      s.limits.disk_mib = lj.value("disk_mib", 0u);
      const auto labels = nlohmann::json::parse(r[4].as<std::string>());
      for (auto it = labels.begin(); it != labels.end(); ++it)
        s.labels.push_back({it.key(), it->is_string() ? it->get<std::string>() : it->dump()});
      s.pause_mode = r[5].as<std::string>();
      s.writable_bytes = r[6].as<std::uint64_t>();
      s.created_at_ns = r[7].as<std::int64_t>() * 1000;
      s.updated_at_ns = r[8].as<std::int64_t>() * 1000;
      s.sequence = r[9].as<std::uint64_t>();
      s.runtime = r[10].as<std::string>();
      page.rows.push_back(std::move(s));
    }
    return page;
  });
}

result<bill_report> read_store::bill(const std::string& tenant, std::int64_t from_ns,
                                     std::int64_t to_ns, bill_grouping by) {
  if (tenant.empty())
    return make_error(errc::invalid_argument, "a bill is for one tenant; name it");
  const std::int64_t from_ms = from_ns / 1'000'000, to_ms = to_ns / 1'000'000;
  if (from_ns % 1'000'000 || to_ns % 1'000'000 || from_ms % projections::ms_per_hour ||
      to_ms % projections::ms_per_hour || to_ms <= from_ms)
    return make_error(errc::invalid_argument,
                      "a billing period is whole hours, from before to; round the times to "
                      "the hour");
  const std::int64_t step = by == bill_grouping::sandbox ? to_ms - from_ms
                            : by == bill_grouping::hour  ? projections::ms_per_hour
                                                         : 24 * projections::ms_per_hour;
  if ((to_ms - from_ms) / step > 1000)
    return make_error(errc::invalid_argument,
                      "a bill has at most 1000 periods; shorten it or group by day or sandbox");
  return with_connection<bill_report>("a bill", [&](pqxx::connection& c) -> result<bill_report> {
    snapshot_read tx(c);
    tx.exec("SET LOCAL search_path TO " + tx.quote_name(schema_));
    bill_report report;
    for (std::int64_t at = from_ms; at < to_ms; at += step) {
      const auto end = std::min(at + step, to_ms);
      auto b = projections::billing_report(tx, tenant, at, end);
      if (!b.value)
        return *b.failure;
      bill_line period;
      period.tenant = tenant;
      period.from_ns = at * 1'000'000;
      period.to_ns = end * 1'000'000;
      for (auto& l : b.value->lines) {
        bill_line line = period;
        line.sandbox_id = l.sandbox_id;
        line.compute_gib_seconds = double(l.compute_byte_ms) / k_gib_ms;
        line.storage_gib_seconds = double(l.storage_byte_ms) / k_gib_ms;
        line.compute_micros = l.compute_micro_usd;
        line.storage_micros = l.storage_micro_usd;
        line.event_ids = std::move(l.event_ids);
        report.total_compute_micros += line.compute_micros;
        report.total_storage_micros += line.storage_micros;
        if (by == bill_grouping::sandbox) {
          report.lines.push_back(std::move(line));
          continue;
        }
        period.compute_gib_seconds += line.compute_gib_seconds;
        period.storage_gib_seconds += line.storage_gib_seconds;
        period.compute_micros += line.compute_micros;
        period.storage_micros += line.storage_micros;
      }
      if (by != bill_grouping::sandbox)
        report.lines.push_back(std::move(period));
    }
    report.total_micros = report.total_compute_micros + report.total_storage_micros;
    return report;
  });
}

result<audit_page> read_store::audit(const audit_query& q) {
  std::optional<nlohmann::json> after;
  if (!q.page_token.empty()) {
    after = read_token(q.page_token, 4);
    if (!after || !(*after)[0].is_number_integer() || !(*after)[1].is_string() ||
        !(*after)[2].is_number_integer() || !(*after)[3].is_number_integer())
      return bad_token("audit");
  }
  const auto limit = page_limit(q.limit);
  return with_connection<audit_page>("audit rows", [&](pqxx::connection& c) -> result<audit_page> {
    snapshot_read tx(c);
    tx.exec("SET LOCAL search_path TO " + tx.quote_name(schema_));
    auto rows = tx.exec_params(
      "SELECT tenant, partition, position, event_id, sandbox_id, occurred_at_ns, principal,"
      " action, outcome, detail, encode(hash, 'hex'), redacted"
      " FROM audit_log"
      " WHERE ($1 = '' OR tenant = $1) AND ($2 = '' OR sandbox_id = $2)"
      "   AND occurred_at_ns >= $3::bigint AND ($4::bigint = 0 OR occurred_at_ns < $4::bigint)"
      "   AND (NOT $5 OR (occurred_at_ns, tenant, partition, position) > ($6, $7, $8, $9))"
      " ORDER BY occurred_at_ns, tenant, partition, position LIMIT $10",
      q.tenant, q.sandbox_id, q.from_ns, q.to_ns, after.has_value(),
      after ? (*after)[0].get<std::int64_t>() : 0,
      after ? (*after)[1].get<std::string>() : std::string(),
      after ? (*after)[2].get<std::int32_t>() : 0, after ? (*after)[3].get<std::int64_t>() : 0,
      limit + 1);
    audit_page page;
    for (const auto& r : rows) {
      if (page.rows.size() == limit) {
        const auto& last = page.rows.back();
        page.next_page_token =
          make_token({last.occurred_at_ns, last.tenant, last.partition, last.position});
        break;
      }
      audit_entry e;
      e.tenant = r[0].as<std::string>();
      e.partition = r[1].as<std::int32_t>();
      e.position = r[2].as<std::int64_t>();
      e.event_id = r[3].as<std::string>();
      e.sandbox_id = r[4].as<std::string>();
      e.occurred_at_ns = r[5].as<std::int64_t>();
      e.principal = r[6].as<std::string>();
      e.action = r[7].as<std::string>();
      e.outcome = r[8].as<std::string>();
      e.detail = r[9].as<std::string>();
      e.hash = from_hex(r[10].as<std::string>()).value_or(std::string());
      e.redacted = r[11].as<bool>();
      page.rows.push_back(std::move(e));
    }
    return page;
  });
}

result<audit_check> read_store::verify(const std::string& tenant) {
  return with_connection<audit_check>(
    "audit verification", [&](pqxx::connection& c) -> result<audit_check> {
      snapshot_read tx(c);
      tx.exec("SET LOCAL search_path TO " + tx.quote_name(schema_));
      audit_check check;
      check.checked_rows =
        tx.exec_params("SELECT count(*) FROM audit_log WHERE $1 = '' OR tenant = $1", tenant)[0][0]
          .as<std::uint64_t>();
      for (auto& f : projections::verify_audit_log(tx)) {
        if (!tenant.empty() && f.tenant != tenant)
          continue;
        check.problems.push_back(
          audit_problem{std::move(f.tenant), f.partition, f.position, std::move(f.event_id),
                        std::string(projections::to_string(f.problem)), std::move(f.message)});
      }
      return check;
    });
}

namespace {

// The one projection a node runs (node/node.cpp) keeps every read model.
std::optional<error> unknown_projection(const std::string& name) {
  if (name == "read_models")
    return std::nullopt;
  return error{errc::not_found, "projection '" + name +
                                  "' does not exist; this sandboxd runs one, 'read_models' "
                                  "(every read model)"};
}

// A fault of a call on the projections as its error value.
template <class F>
auto projection_call(const std::string& what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const pqxx::broken_connection& e) {
    return make_error(errc::unavailable, "the read models' PostgreSQL cannot be reached for " +
                                           what + " (" + e.what() + "); retry later");
  } catch (const std::exception& e) {
    return make_error(errc::internal, what + " failed: " + e.what());
  }
}

} // namespace

result<std::vector<projection_partition>> read_store::projection_status(events::event_log& log) {
  return projection_call(
    "the projections' status", [&]() -> result<std::vector<projection_partition>> {
      std::vector<projection_partition> out;
      const auto now =
        std::chrono::time_point_cast<events::nanoseconds>(std::chrono::system_clock::now());
      for (const auto& s : projections::projection_status(conninfo_, schema_, log, now))
        out.push_back(
          {s.projection, s.partition, s.offset, s.end_offset, s.lag_events(), s.lag_seconds});
      return out;
    });
}

result<projection_rebuild> read_store::rebuild_projection(events::event_log& log,
                                                          const std::string& name) {
  if (auto bad = unknown_projection(name))
    return *bad;
  return projection_call("rebuilding projection " + name, [&]() -> result<projection_rebuild> {
    auto r = projections::rebuild_and_replace(log, conninfo_, schema_, schema_ + "_rebuild", name);
    projection_rebuild out;
    out.name = name;
    out.rows_replaced = r.rows_replaced;
    out.offsets.assign(r.offsets.begin(), r.offsets.end());
    return out;
  });
}

result<projection_check> read_store::verify_projection(events::event_log& log,
                                                       const std::string& name) {
  if (auto bad = unknown_projection(name))
    return *bad;
  projection_check check;
  check.name = name;
  projections::rebuild_report report;
  try {
    report = projections::rebuild_and_compare(log, conninfo_, schema_, schema_ + "_verify", name);
  } catch (const pqxx::broken_connection& e) {
    return make_error(errc::unavailable, std::string("the read models' PostgreSQL cannot be "
                                                     "reached to verify them (") +
                                           e.what() + "); retry later");
  } catch (const std::exception& e) {
    return make_error(errc::internal, "verifying projection " + name + " failed: " + e.what());
  }
  check.rows_compared = report.rows_compared;
  check.offsets.assign(report.offsets.begin(), report.offsets.end());
  for (auto& d : report.differences) {
    projection_difference out{d.table, d.side, d.row, {}};
    const auto row = nlohmann::json::parse(d.row, nullptr, false);
    const char* key = d.table == "sandboxes" ? "id" : "sandbox_id";
    if (row.is_object() && row.contains(key) && row[key].is_string()) {
      const auto id = row[key].get<std::string>();
      for (const auto& h : replay::read_history(log, id)) {
        auto at = report.offsets.find(h.partition);
        if (at != report.offsets.end() && h.offset < at->second)
          out.events.push_back(h.event.event_id);
      }
    }
    check.differences.push_back(std::move(out));
  }
  return check;
}

} // namespace sandboxd::api
