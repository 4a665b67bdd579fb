// directory_stats.hpp — what the sandbox directory reports about the actors it keeps
// (control_plane::stats).
#pragma once

#include <cstddef>
#include <cstdint>

namespace sandboxd::actors {

struct directory_stats {
  std::size_t active = 0;            // sandboxes with a live actor
  std::size_t dormant = 0;           // passivated sandboxes (offsets only)
  std::size_t timers = 0;            // entries in the timer queue
  std::uint64_t journal_rounds = 0;  // log appends the journal issued so far
  std::uint64_t journal_records = 0; // records those appends made durable
  bool answered = true;              // false: the directory did not answer in time (the rest is 0)
};

} // namespace sandboxd::actors
