#include "console/request_args.hpp"

#include "cli/time_arg.hpp"
#include "cli/value_args.hpp"

#include <algorithm>
#include <charconv>

namespace sandboxd::console {
namespace {

error invalid(std::string message) {
  return make_error(errc::invalid_argument, std::move(message));
}

const char* const k_states[] = {"creating", "running",  "pausing", "paused",
                                "resuming", "deleting", "deleted", "failed"};

result<std::uint64_t> parse_number(const std::string& name, const std::string& text) {
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    return invalid(name + "=" + text + " is not a whole number; give one, e.g. " + name + "=50");
  return v;
}

result<std::uint32_t> parse_limit(const query_params& q, std::uint32_t fallback) {
  const auto text = param(q, "limit");
  if (text.empty())
    return fallback;
  auto n = parse_number("limit", text);
  if (!n)
    return n.err();
  if (*n < 1 || *n > 1000)
    return invalid("limit=" + text + " is out of range; give 1 to 1000");
  return static_cast<std::uint32_t>(*n);
}

result<events::time_point> time_param(const query_params& q, const std::string& name,
                                      events::time_point now, events::time_point fallback) {
  const auto text = param(q, name);
  if (text.empty())
    return fallback;
  auto t = cli::parse_time(text, now);
  if (!t)
    return invalid(name + ": " + t.err().message);
  return *t;
}

} // namespace

std::string param(const query_params& q, const std::string& name) {
  auto [lo, hi] = q.equal_range(name);
  std::string v;
  for (auto it = lo; it != hi; ++it)
    v = it->second;
  return v;
}

bool plausible_sandbox_id(std::string_view id) {
  return !id.empty() && id.size() <= 128 && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  });
}

result<list_request> parse_list_request(const query_params& q) {
  list_request r;
  r.filter.limit = 50;
  auto [lo, hi] = q.equal_range("state");
  for (auto it = lo; it != hi; ++it) {
    std::string_view all = it->second;
    while (!all.empty()) {
      const auto comma = all.find(',');
      const std::string s(all.substr(0, comma));
      all = comma == std::string_view::npos ? std::string_view() : all.substr(comma + 1);
      if (s.empty())
        continue;
      if (std::find(std::begin(k_states), std::end(k_states), s) == std::end(k_states))
        return invalid("state=" + s +
                       " is not a sandbox state; use creating, running, pausing, paused, "
                       "resuming, deleting, deleted or failed");
      if (std::find(r.filter.states.begin(), r.filter.states.end(), s) == r.filter.states.end())
        r.filter.states.push_back(s);
    }
  }
  auto [llo, lhi] = q.equal_range("label");
  for (auto it = llo; it != lhi; ++it) {
    if (it->second.empty())
      continue;
    auto kv = cli::parse_pair(it->second, "label");
    if (!kv)
      return kv.err();
    r.filter.labels.push_back({kv->first, kv->second});
  }
  const auto deleted = param(q, "deleted");
  r.filter.include_deleted = deleted == "1" || deleted == "true";
  r.filter.page_token = param(q, "page");
  auto limit = parse_limit(q, 50);
  if (!limit)
    return limit.err();
  r.filter.limit = *limit;
  r.tenant = param(q, "tenant");
  return r;
}

result<bill_request> parse_bill_request(const query_params& q, events::time_point now) {
  // The month so far: from the first of this month (UTC) to the next whole hour.
  const auto days = std::chrono::floor<std::chrono::days>(now);
  const std::chrono::year_month_day ymd{days};
  const events::time_point month_start{std::chrono::sys_days{ymd.year() / ymd.month() / 1}};
  bill_request r;
  r.tenant = param(q, "tenant");
  auto from = time_param(q, "from", now, month_start);
  if (!from)
    return from.err();
  auto to = time_param(q, "to", now, cli::ceil_hour(now));
  if (!to)
    return to.err();
  r.from = cli::floor_hour(*from);
  r.to = cli::ceil_hour(*to);
  if (r.to <= r.from)
    return invalid("to must be after from; give a later to= or an earlier from=");
  return r;
}

result<api::audit_query> parse_audit_request(const query_params& q, events::time_point now) {
  api::audit_query a;
  a.tenant = param(q, "tenant");
  a.sandbox_id = param(q, "sandbox");
  auto from = time_param(q, "from", now, events::time_point{});
  if (!from)
    return from.err();
  auto to = time_param(q, "to", now, events::time_point{});
  if (!to)
    return to.err();
  a.from_ns = from->time_since_epoch().count();
  a.to_ns = to->time_since_epoch().count();
  a.page_token = param(q, "page");
  auto limit = parse_limit(q, 100);
  if (!limit)
    return limit.err();
  a.limit = *limit;
  return a;
}

result<std::uint64_t> parse_sequence(const query_params& q) {
  const auto text = param(q, "seq");
  if (text.empty())
    return invalid("seq is missing; name the event by its sequence number, e.g. seq=3");
  auto n = parse_number("seq", text);
  if (!n)
    return n.err();
  if (*n == 0)
    return invalid("seq=0 names no event; sequence numbers start at 1");
  return *n;
}

} // namespace sandboxd::console
