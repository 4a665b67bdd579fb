// console_reads — what the console's pages read, and who may read it: every JSON document of
// the console's endpoints, built over the read paths sandboxctl uses and nothing else:
//   sandboxes list       the `sandboxes` read model (api::read_store::list)
//   timeline, state      the sandbox's events read from the log itself
//                        (replay::read_history) and folded with the state machine's evolve
//                        (replay::fold_history), as `sandboxctl replay` does
//   bill, CSV            the billing read model (api::read_store::bill)
//   audit rows, verify   the audit log and its chain verification (api::read_store)
//   node                 the node's Prometheus figures (node_probe), the projections' status
//                        (api::read_store::projection_status), the runtimes it holds
// The documents are sandboxctl's --json documents where sandboxctl has one (docs/cli.md).
//
// Who reads what — the RPC API's rules for the same tokens (docs/api.md):
// - any session: its tenant's sandboxes, and the timeline and states of any sandbox of its
//   tenant, deleted ones included. A sandbox of another tenant answers exactly what a
//   missing one answers (not_found, the same message), and takes the same work to answer
//   (its partition is read either way).
// - admin scope: another tenant's list (tenant=), any sandbox's timeline, bills, the audit
//   log and its verification, the node page. Without it those answer permission_denied.
//
// Every call blocks on PostgreSQL or the log: the HTTP server runs them on its worker
// threads. Thread-safe.
#pragma once

#include "api/authenticator.hpp"
#include "base/result.hpp"
#include "cli/json_util.hpp"
#include "console/request_args.hpp"

#include <memory>
#include <string>

namespace sandboxd::node {
class node;
}
namespace sandboxd::api {
class read_store;
}

namespace sandboxd::console {

class console_reads {
public:
  explicit console_reads(node::node& n);
  ~console_reads();
  console_reads(const console_reads&) = delete;
  console_reads& operator=(const console_reads&) = delete;

  result<cli::json> sandboxes(const api::identity& who, const list_request& q);
  result<cli::json> timeline(const api::identity& who, const std::string& sandbox_id);
  result<cli::json> state(const api::identity& who, const std::string& sandbox_id,
                          std::uint64_t sequence);
  result<cli::json> bill(const api::identity& who, const bill_request& q);
  result<std::string> bill_csv(const api::identity& who, const bill_request& q);
  result<cli::json> audit(const api::identity& who, const api::audit_query& q);
  // The chain's verification, and the rows around the first bad one ("first_bad").
  result<cli::json> audit_verify(const api::identity& who, const std::string& tenant);
  result<cli::json> node_figures(const api::identity& who);

private:
  result<void> need_admin(const api::identity& who, const char* page) const;

  node::node& node_;
  std::unique_ptr<api::read_store> store_;
  cli::json runtimes_; // what this machine can run, found once
};

// A sandbox that does not exist, or is another tenant's: one answer for both.
error sandbox_not_found(const std::string& sandbox_id);

} // namespace sandboxd::console
