// sandbox_unknown_append.cpp — how a sandbox actor resolves an append whose fate is unknown
// from the log (docs/actors.md, "An append whose fate is unknown"): read its partition back,
// append the missing events again, identical, until the log holds them all.
#include "actors/sandbox_actor_state.hpp"

#include <iostream>

namespace sandboxd::actors {

namespace {

// What a caller whose command is in an append of unknown fate is told when the log could
// not settle it at once.
events::error outcome_unknown(const sandbox_actor_state& st, const std::string& cause) {
  return events::make_error(
    events::errc::unavailable,
    "the outcome of the command on sandbox " + st.id +
      " is unknown: the log did not confirm its events (" + cause +
      "); sandboxd keeps appending them until the log takes them — get the sandbox to see "
      "whether the command took effect before you repeat it");
}

// Reads the partition back for the unresolved append's events, on the pool.
void read_back(sandbox_actor_state& st) {
  auto& u = *st.unresolved;
  u.reading = true;
  st.ctx->pool->post([log = st.ctx->log, mail = st.mail, partition = st.partition, from = u.from,
                      id = st.id, applied = st.s.sequence, evs = u.events] {
    landed_result out;
    try {
      out.landed = find_landed(*log, partition, from, id, applied, evs);
    } catch (const std::exception& e) {
      out.fault = e.what();
    }
    mail->landed(std::move(out));
  });
}

// One attempt to settle the unresolved append failed (the log is still down): its callers
// learn that the outcome is unknown; the next attempt comes after a backoff.
void attempt_failed(sandbox_actor_state& st, const std::string& cause) {
  auto& u = *st.unresolved;
  u.redriven = false;
  if (!u.answered) {
    const auto err = outcome_unknown(st, cause);
    for (auto& r : u.replies)
      reply(st, r.req, err);
    u.replies.clear();
    u.answered = true;
    fail_settling(st, not_settled(st, cause));
  }
  schedule_retry(st);
  pump(st);
}

} // namespace

void go_broken(sandbox_actor_state& st, const std::string& why) {
  st.broken = events::make_error(events::errc::unavailable, why + "; check the log and restart");
  std::cerr << "sandboxd: " << st.broken->message << "\n";
  if (st.unresolved && !st.unresolved->answered)
    for (auto& r : st.unresolved->replies)
      reply(st, r.req, st.broken);
  st.unresolved.reset();
  st.retry.clear();
  fail_settling(st, *st.broken);
  st.pending = st.s;
}

void on_landed(sandbox_actor_state& st, landed_result& r) {
  if (!st.unresolved)
    return;
  auto& u = *st.unresolved;
  u.reading = false;
  if (r.fault) {
    go_broken(st, *r.fault);
    pump(st);
    return;
  }
  if (r.landed.failure) {
    attempt_failed(st, r.landed.failure->message);
    return;
  }
  const auto& found = r.landed.offsets;
  if (found.size() == u.events.size()) {
    auto settled = std::move(u);
    st.unresolved.reset();
    apply_durable(st, settled.events, settled.replies, found);
    pump(st);
    return;
  }
  if (u.redriven) {
    go_broken(st, "the events " + std::to_string(st.s.sequence + found.size() + 1) + " to " +
                    std::to_string(st.s.sequence + u.events.size()) + " of sandbox " + st.id +
                    " were acknowledged by " + st.ctx->log->describe() +
                    " but cannot be read back from partition " + std::to_string(st.partition));
    pump(st);
    return;
  }
  // Append what is missing again, identical: a copy that lands after the first one is a
  // duplicate that every reader drops by its sequence number.
  std::vector<events::log_record> records;
  for (std::size_t i = found.size(); i < u.events.size(); ++i)
    records.push_back({st.id, events::encode(u.events[i])});
  u.redriving = true;
  append_records(st, std::move(records));
}
void begin_unresolved(sandbox_actor_state& st, std::vector<events::event> evs,
                      std::vector<reply_to> replies) {
  unresolved_append u;
  u.events = std::move(evs);
  u.replies = std::move(replies);
  u.from = st.batch_from;
  st.unresolved = std::move(u);
  read_back(st);
}

void on_redriven(sandbox_actor_state& st, events::append_result& result) {
  auto& u = *st.unresolved;
  u.redriving = false;
  if (!result.ok()) {
    attempt_failed(st, result.failure->message);
    return;
  }
  u.redriven = true;
  read_back(st); // for the first copy of each event, and to be sure nothing else is there
}

void retry_unresolved(sandbox_actor_state& st) {
  if (st.unresolved && !st.unresolved->reading && !st.unresolved->redriving)
    read_back(st);
}

} // namespace sandboxd::actors
