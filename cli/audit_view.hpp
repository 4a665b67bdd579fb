// audit_view — the audit log as sandboxctl shows it (`audit`, `audit verify`).
//
// A row's JSON: tenant, partition, position, event_id, sandbox_id, time, principal, action,
// outcome, detail, hash (hex). `audit --json`: {"rows": [...], "next_page_token"}.
// `audit verify --json`: ok, checked_rows, problems [{tenant, partition, position,
// event_id, kind, message}]; `first_problem` names the first one in text.
#pragma once

#include "api/records.hpp"
#include "cli/json_util.hpp"

#include <string>
#include <vector>

namespace sandboxd::cli {

json audit_row_json(const api::audit_entry& e);
std::string audit_table(const std::vector<api::audit_entry>& rows);

json audit_check_json(const api::audit_check& c);
// "tenant dev, partition 3, position 7 (event sb-..:4): edited: <message>"
std::string problem_text(const api::audit_problem& p);
// The verdict for people: "the audit chain holds: N rows checked" or the first bad row and
// how many problems there are.
std::string audit_check_text(const api::audit_check& c);

} // namespace sandboxd::cli
