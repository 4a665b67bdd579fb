// session_table — the web console's signed-in sessions: a random session id (what the
// cookie carries) for each login, bound to the identity its token was authenticated as.
//
// Guarantees:
// - A session id is 32 bytes from the OS's CSPRNG (RAND_bytes), as 64 hex digits. The table
//   keeps only the SHA-256 of each id, so what the daemon holds in memory cannot be replayed
//   as a cookie.
// - A session ends after `idle` without a request, after `lifetime` from its login whatever
//   happens, at logout, or when the daemon stops (the table is memory only: a restart signs
//   everyone out). find() of an ended session answers nothing, exactly like an unknown id.
// - At most `per_principal` sessions per tenant and principal (a new login ends that
//   principal's oldest), and at most `capacity` in all: past it a login is refused with
//   resource_exhausted rather than ending anyone else's session.
// - Thread-safe; time comes from the caller (`now`), so the rules are tested without waiting.
#pragma once

#include "api/authenticator.hpp"
#include "base/result.hpp"

#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace sandboxd::console {

using clock = std::chrono::steady_clock;

struct session_limits {
  std::chrono::seconds idle{std::chrono::minutes(30)};
  std::chrono::seconds lifetime{std::chrono::hours(12)};
  std::size_t per_principal = 16;
  std::size_t capacity = 10000;
};

class session_table {
public:
  explicit session_table(session_limits limits = {}) : limits_(limits) {}

  // A new session for `who`: its id (the cookie's value).
  result<std::string> open(api::identity who, clock::time_point now);
  // The identity of a live session (and its idle time restarts), or nothing.
  std::optional<api::identity> find(std::string_view id, clock::time_point now);
  // Ends the session; nothing when it is not one.
  void close(std::string_view id);

  std::size_t size(clock::time_point now);
  const session_limits& limits() const { return limits_; }

private:
  struct entry {
    api::identity who;
    clock::time_point opened;
    clock::time_point last_used;
  };
  bool live(const entry& e, clock::time_point now) const;
  void sweep(clock::time_point now); // drops ended sessions

  session_limits limits_;
  std::mutex mu_;
  std::unordered_map<std::string, entry> by_digest_; // SHA-256 (hex) of the id -> session
};

// Whether `id` has the form open() makes (64 lowercase hex digits): anything else is not
// looked up at all.
bool well_formed_session_id(std::string_view id);

} // namespace sandboxd::console
