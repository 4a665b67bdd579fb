#include "console/routes.hpp"

namespace sandboxd::console {

const std::vector<route>& routes() {
  static const std::vector<route> table{
    {"page", "GET", R"(/)", "/", false},
    {"asset", "GET", R"(/assets/([A-Za-z0-9_./-]+))", "/assets/app.js", false},
    {"login", "POST", R"(/api/login)", "/api/login", false},
    {"logout", "POST", R"(/api/logout)", "/api/logout", true},
    {"session", "GET", R"(/api/session)", "/api/session", false},
    {"sandboxes", "GET", R"(/api/sandboxes)", "/api/sandboxes?state=running", true},
    {"timeline", "GET", R"(/api/sandboxes/([^/]+)/timeline)",
     "/api/sandboxes/sb-000000000000/timeline", true},
    {"state", "GET", R"(/api/sandboxes/([^/]+)/state)",
     "/api/sandboxes/sb-000000000000/state?seq=1", true},
    {"bill", "GET", R"(/api/bill)", "/api/bill?from=-24h&to=now", true},
    {"bill_csv", "GET", R"(/api/bill\.csv)", "/api/bill.csv?from=-24h&to=now", true},
    {"audit", "GET", R"(/api/audit)", "/api/audit", true},
    {"audit_verify", "GET", R"(/api/audit/verify)", "/api/audit/verify", true},
    {"node", "GET", R"(/api/node)", "/api/node", true},
  };
  return table;
}

} // namespace sandboxd::console
