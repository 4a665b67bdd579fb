// egress_decider — what the egress proxy and resolver ask of sandboxd for each attempt a
// sandbox makes: the node answers by the sandbox's actor (actors/sandbox_machine.hpp's
// open_connection and close_connection), so that every verdict is an event logged before
// anything is dialled, and every close an event with its bytes.
#pragma once

#include "events/event.hpp"
#include "network/egress_book.hpp"

#include <string>

namespace sandboxd::network {

class egress_decider {
public:
  virtual ~egress_decider() = default;
  // Decides one attempt and logs it: true when allowed (connection_opened logged; for a DNS
  // question, `connection_id` empty, nothing is logged when allowed). False when denied
  // (connection_denied logged) or when it could not be decided (the sandbox is not
  // running, its tenant's log budget is spent, sandboxd is stopping): never dialled.
  virtual bool open(const link_owner& who, const std::string& connection_id,
                    const events::net_destination& d) = 0;
  // An allowed connection ended.
  virtual void closed(const link_owner& who, const events::connection_closed& c) = 0;
};

} // namespace sandboxd::network
