// request_args — the query parameters of the console's JSON endpoints, read into the
// requests of the read paths, as pure functions. Every "no" is invalid_argument naming the
// parameter and showing a good form; a parameter not listed here is ignored.
//
//   /api/sandboxes   state=running (repeat, or a comma list) · label=key=value (repeat; all
//                    must match) · deleted=1 (deleted ones too) · page=TOKEN (the last
//                    answer's next_page_token) · limit=N (1-1000, default 50) · tenant=T
//                    (admin scope only: another tenant's list)
//   /api/bill        tenant=T · from=TIME · to=TIME (RFC 3339, a date, now or ±DURATION, as
//                    sandboxctl takes them; widened to whole hours, as `sandboxctl bill` does)
//   /api/audit       tenant=T · sandbox=ID · from=TIME · to=TIME · page=TOKEN · limit=N
//   /api/sandboxes/ID/state   seq=N (the state after that event)
#pragma once

#include "api/records.hpp"
#include "base/result.hpp"
#include "events/event.hpp"

#include <cstdint>
#include <map>
#include <string>

namespace sandboxd::console {

using query_params = std::multimap<std::string, std::string>;

struct list_request {
  api::list_filter filter;
  std::string tenant; // "" = the session's own
};
result<list_request> parse_list_request(const query_params& q);

struct bill_request {
  std::string tenant; // "" = the session's own
  events::time_point from;
  events::time_point to;
};
// The period defaults to the month so far: from the first of `now`'s month to the next hour.
result<bill_request> parse_bill_request(const query_params& q, events::time_point now);

result<api::audit_query> parse_audit_request(const query_params& q, events::time_point now);

result<std::uint64_t> parse_sequence(const query_params& q);

// The value of `name`, "" when absent (the last one when repeated).
std::string param(const query_params& q, const std::string& name);

// A sandbox id as it may appear in a path: the characters sandboxd's ids and a tenant's
// client-chosen names use (letters, digits, '-', '_', '.'), 1-128 of them. Anything else is
// a sandbox that does not exist (never looked up).
bool plausible_sandbox_id(std::string_view id);

} // namespace sandboxd::console
