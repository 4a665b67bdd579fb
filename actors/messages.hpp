// messages.hpp — the protocol between the control plane, the sandbox directory and the
// sandbox actors, as typed CAF actor interfaces: a message that is not in an actor's
// interface does not compile. Internal to actors/ (it pulls in CAF); only control_plane.cpp,
// sandbox_directory.cpp and sandbox_actor.cpp include it.
//
//   directory <- (cmd_atom, request_ptr)                  a command from control_plane
//   directory <- (timer_atom, id, kind, deadline_ns)      from the timer queue
//   directory <- (passive_atom, id, received, offsets)    an idle actor offers to passivate
//   directory <- (stats_atom, stats_ptr)                  control_plane::stats
//   directory <- (idle_atom, id)                          a passivation check is due
//   directory <- (retry_atom, id)                         a retry's backoff is over
//   directory <- (forget_atom, key, id)                   a claim was refused: its client
//                                                         request id no longer names `id`
//   directory <- (stop_atom)                              the control plane stops
//   actor     <- (cmd_atom, request_ptr) | (timer_atom, kind, deadline_ns)  via directory
//   actor     <- (idle_atom) | (retry_atom)               via directory: passivate if idle;
//                                                         retry now
//   actor     <- (appended_atom, append_ptr)              the journal completed its append
//   actor     <- (result_atom, result_ptr)                the pool finished a runtime call
//   actor     <- (landed_atom, landed_ptr)                the pool read back an append whose
//                                                         fate is unknown
//   actor     <- (stop_atom)                              the directory accepted passivation
//
// Every payload is local: the unsafe types never leave the process and are never persisted.
#pragma once

#include "actors/append_resolution.hpp"
#include "actors/directory_stats.hpp"
#include "actors/request.hpp"
#include "actors/runtime_steps.hpp"
#include "events/event_log.hpp"

#include <caf/all.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace sandboxd::actors {

using cmd_atom = caf::atom_constant<caf::atom("sbcmd")>;
using timer_atom = caf::atom_constant<caf::atom("sbtimer")>;
using passive_atom = caf::atom_constant<caf::atom("sbpassive")>;
using stats_atom = caf::atom_constant<caf::atom("sbstats")>;
using appended_atom = caf::atom_constant<caf::atom("sbappended")>;
using result_atom = caf::atom_constant<caf::atom("sbresult")>;
using idle_atom = caf::atom_constant<caf::atom("sbidle")>;
using stop_atom = caf::atom_constant<caf::atom("sbstop")>;
using landed_atom = caf::atom_constant<caf::atom("sblanded")>;
using retry_atom = caf::atom_constant<caf::atom("sbretry")>;
using forget_atom = caf::atom_constant<caf::atom("sbforget")>;

// Payloads travel by shared pointer: one allocation, no copy per hop.
struct request_ptr {
  std::shared_ptr<request> value;
};
struct append_ptr {
  std::shared_ptr<events::append_result> value;
};
struct result_ptr {
  std::shared_ptr<runtime_result> value;
};
struct landed_ptr {
  std::shared_ptr<landed_result> value;
};
struct offsets_ptr {
  std::shared_ptr<std::vector<std::int64_t>> value;
};
struct stats_ptr {
  std::shared_ptr<std::function<void(directory_stats)>> value;
};

using sandbox_actor_handle = caf::typed_actor<
  caf::reacts_to<cmd_atom, request_ptr>, caf::reacts_to<timer_atom, std::uint8_t, std::int64_t>,
  caf::reacts_to<appended_atom, append_ptr>, caf::reacts_to<result_atom, result_ptr>,
  caf::reacts_to<landed_atom, landed_ptr>, caf::reacts_to<idle_atom>, caf::reacts_to<retry_atom>,
  caf::reacts_to<stop_atom>>;

using directory_handle =
  caf::typed_actor<caf::reacts_to<cmd_atom, request_ptr>,
                   caf::reacts_to<timer_atom, std::string, std::uint8_t, std::int64_t>,
                   caf::reacts_to<passive_atom, std::string, std::uint64_t, offsets_ptr>,
                   caf::reacts_to<stats_atom, stats_ptr>, caf::reacts_to<idle_atom, std::string>,
                   caf::reacts_to<retry_atom, std::string>,
                   caf::reacts_to<forget_atom, std::string, std::string>,
                   caf::reacts_to<stop_atom>>;

} // namespace sandboxd::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sandboxd::actors::request_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sandboxd::actors::append_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sandboxd::actors::result_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sandboxd::actors::landed_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sandboxd::actors::offsets_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sandboxd::actors::stats_ptr)
