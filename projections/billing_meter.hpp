// billing_meter — what one event does to a sandbox's billing meters, as a pure function.
//
// Compute: memory bytes (limits.memory_mib × 2^20 from `created`) while running: an
// interval opens at `started` or `resumed` and closes at `pause_requested`,
// `delete_requested`, `failed` or `deleted` (idle time while running counts; paused time
// does not). Storage: the writable layer (the template below it is shared and not
// counted), from `created` (a reading of 0 bytes: the layer is made empty) to `deleted`.
// Every event that reads the layer's size — storage_sampled, paused, snapshot_taken, and
// deleted (measured just before the layer is removed) — closes the open interval at its
// time and, but for deleted, opens the next one on its reading. An interval is billed at the
// larger of the readings at its two ends, so a layer that grew or shrank between them is
// never billed below what it held at either end (docs/billing.md, "Meters"); a deleted
// that measured nothing (0) bills its interval at the opening reading. Intervals of zero
// bytes or zero length are not recorded. Each closed interval names the sequence numbers of
// the events that opened and closed it (event ids "<sandbox>:<seq>"), which is what makes a
// bill line traceable. Times are metering milliseconds (billing.hpp).
//
// A warm pool's sandbox (docs/pools.md) is billed to nobody while it waits in its pool: its
// meters stay closed while its tenant is the pool tenant (readings of its layer are kept,
// no interval opens). Its `claim_requested` opens both for the claiming tenant at the claim:
// compute (it runs) and storage on the layer's last reading. So a tenant's bill of a
// claimed sandbox starts at the claim, as a created sandbox's starts at `created`, and every
// interval (and billing hour) of a sandbox is its one tenant's.
//
// A tenant's own template (scope tenant) has a storage meter of its own, keyed by the
// template's id: it opens at the template's `ready` on the bytes its layers take in the store
// (`ready`'s total) and closes at its `deleted`, billed to the tenant the template belongs to.
// Its events are on the template stream, so its intervals name sequence numbers of that stream
// (event ids "@templates:<seq>"). A global template (the operator's, the stock ones) bills
// nobody, and a sandbox's meter never counts the template layers below its writable layer.
#pragma once

#include "events/event.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sandboxd::projections {

struct open_interval {
  std::uint64_t seq = 0; // the event that opened it
  std::int64_t start_ms = 0;
  bool operator==(const open_interval&) const = default;
};

struct meter_state {
  std::string sandbox_id;
  std::string tenant;
  std::int64_t memory_bytes = 0;
  std::optional<open_interval> compute;
  std::int64_t storage_bytes = 0; // the reading the open storage interval opened on
  std::optional<open_interval> storage;
  bool deleted = false;
  bool operator==(const meter_state&) const = default;
};

enum class meter { compute, storage };
const char* to_string(meter m);

struct closed_interval {
  std::string sandbox_id;
  std::string tenant;
  meter kind = meter::compute;
  std::uint64_t start_seq = 0;
  std::uint64_t end_seq = 0;
  std::int64_t start_ms = 0;
  std::int64_t end_ms = 0;
  std::int64_t bytes = 0; // as billed: memory, or the larger of the two layer readings
  bool operator==(const closed_interval&) const = default;
};

// Whose meters `e` moves: its sandbox's (the sandbox id), or for an event of the template
// stream its template's (the template id; "" for a record of a newer version that names none).
std::string meter_key(const events::event& e);

// The event id of the event `seq` of the meter `key`'s stream: "<sandbox>:<seq>", or
// "@templates:<seq>" for a template's meter.
std::string meter_event_id(const std::string& key, std::uint64_t seq);

// Applies `e` to the sandbox's meters (`state` is empty before `created`; events of a
// sandbox never created are ignored; for a template event, `state` is its template's, empty
// before its `ready`) and appends the intervals it closes to `closed`.
void meter_event(std::optional<meter_state>& state, const events::event& e,
                 std::vector<closed_interval>& closed);

} // namespace sandboxd::projections
