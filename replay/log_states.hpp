// log_states.hpp — the state of every sandbox of a log: each record decoded and applied with
// the state machine (actors::apply, the in-place evolve), from each sandbox's initial state.
// This is what the sandboxes' actors hold once they applied the same records, and what
// `sandboxctl check determinism` compares them with.
//
// Guarantees of fold_log:
// - The state of sandbox `id` is the fold of every record keyed `id`, in its partition's
//   offset order; a duplicate leaves the state as it was, as evolve does. The template
//   stream's records (events::template_stream_key) are no sandbox's and are skipped.
// - A record that does not decode, or a gap in a sandbox's sequence, is a fault:
//   std::runtime_error / std::invalid_argument naming the log position.
// - From a file_log_reader the records are read in the order they lie in the segments
//   (visit_all) and decoded in place; from any other log, partition by partition up to the
//   end offsets as of the call.
//
// Speed: one sandbox's events are spread over the log among everyone else's, so each record
// finds its state cold in memory. The fold looks each record's sandbox up a few records
// before it decodes it (prefetching the table slot, then the state), which hides that wait
// behind the decoding of the records in between; the order of applies is the log's.
#pragma once

#include "actors/sandbox_machine.hpp"
#include "events/event_log.hpp"

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sandboxd::replay {

struct id_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Sandbox states by id: open addressing over (hash, index) slots, the states in a deque (their
// addresses never change as the table grows).
class sandbox_states {
public:
  static std::uint64_t hash(std::string_view id);

  // The state of `id` (hash `h`), made with actors::initial_state when absent.
  actors::sandbox_state& at(std::string_view id, std::uint64_t h);
  actors::sandbox_state& at(std::string_view id) { return at(id, hash(id)); }
  // Null when absent.
  actors::sandbox_state* find(std::string_view id, std::uint64_t h);
  const actors::sandbox_state* find(std::string_view id) const;
  // Asks the CPU to bring the slot of hash `h` into cache.
  void prefetch_slot(std::uint64_t h) const;
  // The state in the first slot holding hash `h`, without comparing ids (so without reading
  // the state): a guess for prefetching, to be checked against the id before use.
  actors::sandbox_state* guess(std::uint64_t h);

  std::size_t size() const { return states_.size(); }
  auto begin() const { return states_.begin(); }
  auto end() const { return states_.end(); }

private:
  struct slot {
    std::uint64_t hash = 0;
    std::uint32_t index = 0; // into states_, plus one; 0: empty
  };
  std::size_t probe(std::string_view id, std::uint64_t h) const; // the slot of id, or empty
  void grow();

  std::vector<slot> slots_ = std::vector<slot>(1024); // a power of two, at most 1/2 full
  std::deque<actors::sandbox_state> states_;
};

// The highest sequence to fold per sandbox: events of a listed sandbox past it are left
// out; unlisted sandboxes are folded whole.
using sequence_bounds = std::unordered_map<std::string, std::uint64_t, id_hash, std::equal_to<>>;

// Every sandbox's state after every record of `log` (within `until` when given).
sandbox_states fold_log(events::event_log& log, const sequence_bounds* until = nullptr);

} // namespace sandboxd::replay
