#include "projections/sequence_guard.hpp"

#include "projections/pg_array.hpp"

#include <pqxx/pqxx>

#include <algorithm>

namespace sandboxd::projections {

namespace {

std::string gap_message(const std::string& projection, const positioned_event& at,
                        std::uint64_t last_applied) {
  const auto first = last_applied + 1;
  const auto last = at.event.sequence - 1;
  return "projection " + projection + ": sandbox " + at.event.sandbox_id + " is missing " +
         (first == last
            ? "event sequence " + std::to_string(first)
            : "event sequences " + std::to_string(first) + " to " + std::to_string(last)) +
         ": partition " + std::to_string(at.partition) + " offset " + std::to_string(at.offset) +
         " holds sequence " + std::to_string(at.event.sequence) + " (event " + at.event.event_id +
         ") after sequence " + std::to_string(last_applied) +
         "; the log lost events, and the projection stops here until the log is repaired";
}

bool creates(const sandbox_batch& sb) {
  return std::any_of(sb.events.begin(), sb.events.end(), [](const positioned_event* pe) {
    return std::holds_alternative<events::created>(pe->event.body);
  });
}

} // namespace

sequence_gap::sequence_gap(const std::string& projection, const positioned_event& at,
                           std::uint64_t last_applied)
    : std::runtime_error(gap_message(projection, at, last_applied)),
      sandbox_id(at.event.sandbox_id), first_missing(last_applied + 1), found(at.event.sequence),
      partition(at.partition), offset(at.offset) {}

const std::string& sequence_guard::table() {
  static const std::string name = "projection_sandbox_seq";
  return name;
}

void sequence_guard::recall(pqxx::transaction_base& tx,
                            const std::vector<positioned_event>& batch) {
  pg_array ids;
  for (const auto& pe : batch)
    if (sandboxes_.try_emplace(pe.event.sandbox_id).second)
      ids.add(pe.event.sandbox_id);
  if (ids.size() == 0)
    return;
  for (const auto& f : tx.exec_params("SELECT u.id, s.last_seq, g.last_seq"
                                      " FROM unnest($2::text[]) AS u(id)"
                                      " LEFT JOIN sandboxes s ON s.id = u.id"
                                      " LEFT JOIN projection_sandbox_seq g"
                                      "  ON g.projection = $1 AND g.sandbox_id = u.id",
                                      projection_, ids.str())) {
    auto& g = sandboxes_[f[0].as<std::string>()];
    if (!f[1].is_null()) {
      g.has_row = true;
      g.last_seq = f[1].as<std::uint64_t>();
    }
    if (!f[2].is_null()) {
      g.has_guard_row = true;
      g.last_seq = std::max(g.last_seq, f[2].as<std::uint64_t>());
    }
  }
}

fresh_batch sequence_guard::admit(const std::vector<positioned_event>& batch,
                                  std::size_t& duplicates) {
  fresh_batch out;
  std::unordered_map<const entry*, std::size_t> slot;
  for (const auto& pe : batch) {
    auto it = sandboxes_.find(pe.event.sandbox_id);
    auto& g = it->second;
    if (pe.event.sequence <= g.last_seq) {
      ++duplicates;
      continue;
    }
    if (pe.event.sequence != g.last_seq + 1)
      throw sequence_gap(projection_, pe, g.last_seq);
    g.last_seq = pe.event.sequence;
    out.all.push_back(&pe);
    auto [s, inserted] = slot.emplace(&g, out.sandboxes.size());
    if (inserted)
      out.sandboxes.push_back({&it->first, g.has_row, {}});
    out.sandboxes[s->second].events.push_back(&pe);
  }
  std::sort(out.sandboxes.begin(), out.sandboxes.end(),
            [](const auto& a, const auto& b) { return *a.id < *b.id; });
  return out;
}

void sequence_guard::write(pqxx::transaction_base& tx, const fresh_batch& batch) {
  pg_array g_id, g_seq, g_drop;
  for (const auto& sb : batch.sandboxes) {
    auto& g = sandboxes_.at(*sb.id);
    const bool created = creates(sb);
    if (sb.had_row == created) {
      // No row, and the batch makes none; or a second `created`, which the row ignores.
      g_id.add(*sb.id);
      g_seq.add(g.last_seq);
      g.has_guard_row = true;
    } else if (g.has_guard_row) {
      g_drop.add(*sb.id); // the sandbox row carries the guard from now on
      g.has_guard_row = false;
    }
    g.has_row = sb.had_row || created;
  }
  if (g_id.size() > 0)
    tx.exec_params(
      "INSERT INTO projection_sandbox_seq (projection, sandbox_id, last_seq)"
      " SELECT $1, s, q FROM unnest($2::text[], $3::bigint[]) AS u(s, q)"
      " ON CONFLICT (projection, sandbox_id) DO UPDATE SET last_seq = EXCLUDED.last_seq",
      projection_, g_id.str(), g_seq.str());
  if (g_drop.size() > 0)
    tx.exec_params("DELETE FROM projection_sandbox_seq"
                   " WHERE projection = $1 AND sandbox_id = ANY($2::text[])",
                   projection_, g_drop.str());
}

} // namespace sandboxd::projections
