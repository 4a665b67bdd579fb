#include "projections/audit_verifier.hpp"

#include <algorithm>
#include <unordered_map>

namespace sandboxd::projections {

std::string_view to_string(audit_problem p) {
  switch (p) {
  case audit_problem::hash_mismatch:
    return "hash_mismatch";
  case audit_problem::broken_link:
    return "broken_link";
  case audit_problem::out_of_order:
    return "out_of_order";
  case audit_problem::missing_row:
    return "missing_row";
  case audit_problem::truncated_tail:
    return "truncated_tail";
  case audit_problem::beyond_head:
    return "beyond_head";
  case audit_problem::bad_redaction:
    return "bad_redaction";
  }
  return "unknown";
}

namespace {

bool hashes_at(const audit_row& r, std::int64_t position) {
  if (position == r.position)
    return chain_hash(r.prev_hash, r) == r.hash;
  auto moved = r;
  moved.position = position;
  return chain_hash(moved.prev_hash, moved) == moved.hash;
}

// Findings of one chain, with the words that name it and its rows.
class chain_report {
public:
  chain_report(const std::string& tenant, std::int32_t partition)
      : tenant_(tenant), partition_(partition) {}

  std::string chain() const {
    return "audit chain of tenant " + tenant_ + " partition " + std::to_string(partition_);
  }
  std::string row(const audit_row& r) const {
    return "audit row " + std::to_string(r.position) + " of tenant " + tenant_ + " partition " +
           std::to_string(partition_) + " (event " + r.event_id + ")";
  }
  void add(std::int64_t position, std::string event_id, audit_problem problem,
           std::string message) {
    out_.push_back(
      {tenant_, partition_, position, std::move(event_id), problem, std::move(message)});
  }
  void about(const audit_row& r, audit_problem problem, const std::string& what) {
    add(r.position, r.event_id, problem, row(r) + " " + what);
  }
  std::vector<audit_finding> take() {
    std::stable_sort(out_.begin(), out_.end(),
                     [](const auto& a, const auto& b) { return a.position < b.position; });
    return std::move(out_);
  }

private:
  const std::string& tenant_;
  std::int32_t partition_;
  std::vector<audit_finding> out_;
};

std::string range(std::int64_t first, std::int64_t last) {
  return first == last ? "row " + std::to_string(first)
                       : "rows " + std::to_string(first) + " to " + std::to_string(last);
}
std::string were(std::int64_t first, std::int64_t last) {
  return range(first, last) + (first == last ? " was" : " were");
}

// Whether the rows are the chain as written: positions 1, 2, 3, …, each linked to the one
// before and hashing right.
bool plainly_intact(const std::vector<audit_row>& rows) {
  const std::string* prev = &audit_genesis_hash();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    if (r.position != static_cast<std::int64_t>(i) + 1 || r.prev_hash != *prev ||
        chain_hash(r.prev_hash, r) != r.hash)
      return false;
    prev = &r.hash;
  }
  return true;
}

// Follows the links (see the header) and reports what breaks them; `reported[i]` is set for
// every row a finding names.
void follow_links(const std::vector<audit_row>& rows, chain_report& report,
                  std::vector<bool>& reported) {
  const std::size_t n = rows.size();
  std::unordered_map<std::string_view, std::vector<std::size_t>> by_prev; // in stored order
  for (std::size_t i = 0; i < n; ++i)
    by_prev[rows[i].prev_hash].push_back(i);
  auto stored_at = [&](std::int64_t position) -> std::optional<std::size_t> {
    auto it = std::lower_bound(rows.begin(), rows.end(), position,
                               [](const audit_row& r, std::int64_t p) { return r.position < p; });
    if (it == rows.end() || it->position != position)
      return std::nullopt;
    return static_cast<std::size_t>(it - rows.begin());
  };
  std::vector<bool> reached(n, false);
  std::size_t first_unreached = 0;
  std::string_view current = audit_genesis_hash();
  std::int64_t k = 1; // the position the next row of the walk belongs at
  for (;;) {
    std::optional<std::size_t> next;
    if (auto it = by_prev.find(current); it != by_prev.end())
      for (auto i : it->second)
        if (!reached[i]) {
          next = i;
          break;
        }
    if (!next) {
      while (first_unreached < n && reached[first_unreached])
        ++first_unreached;
      if (first_unreached == n)
        return;
      const auto j = first_unreached;
      const auto& r = rows[j];
      // Why the walk did not reach r: positions absent right before it, or the row before it
      // is not the one r was chained to.
      std::int64_t absent_from = r.position;
      while (absent_from > 1 && !stored_at(absent_from - 1))
        --absent_from;
      if (absent_from < r.position) {
        report.add(absent_from, "", audit_problem::missing_row,
                   report.chain() + " lacks " + range(absent_from, r.position - 1) +
                     " before row " + std::to_string(r.position) + " (deleted)");
      } else if (hashes_at(r, r.position)) {
        if (r.position == 1) {
          report.about(r, audit_problem::broken_link,
                       "is not chained to the start of the chain (the genesis hash)");
          reported[j] = true;
        } else if (auto before = stored_at(r.position - 1); before && !reported[*before]) {
          report.about(rows[*before], audit_problem::broken_link,
                       "is not the row that row " + std::to_string(r.position) +
                         " was chained to: it was replaced and its hash recomputed");
          reported[*before] = true;
        }
      } // else r's own contents changed: reported as it is reached, next
      current = r.prev_hash;
      k = r.position;
      continue;
    }
    const auto i = *next;
    const auto& r = rows[i];
    reached[i] = true;
    if (!hashes_at(r, k)) {
      if (!reported[i])
        report.about(r, audit_problem::hash_mismatch,
                     r.position == k ? "was edited: its contents do not match its hash"
                                     : "was edited: its contents do not match its hash at row " +
                                         std::to_string(k) + ", where its link places it");
      reported[i] = true;
    } else if (r.position != k) {
      report.about(r, audit_problem::out_of_order,
                   "belongs at row " + std::to_string(k) +
                     " (its link and hash say so): rows were swapped or moved");
      reported[i] = true;
    }
    current = r.hash;
    ++k;
  }
}

// Every redacted row must be explained by an accepted `redacted` row of its sandbox after it.
void check_redactions(const std::vector<audit_row>& rows, chain_report& report) {
  std::unordered_map<std::string_view, std::int64_t> redacted_at; // sandbox -> last redaction
  for (const auto& r : rows)
    if (r.action == "redacted" && r.outcome == "accepted")
      redacted_at[r.sandbox_id] = std::max(redacted_at[r.sandbox_id], r.position);
  for (const auto& r : rows) {
    if (!r.redacted)
      continue;
    std::string why;
    auto it = redacted_at.find(r.sandbox_id);
    if (it == redacted_at.end() || it->second < r.position)
      why = "is marked redacted but sandbox " + r.sandbox_id +
            " has no redaction after it: its detail was removed outside a redaction";
    else if (!has_private_detail(r.action))
      why = "is marked redacted but its action (" + r.action + ") has no private detail";
    else if (!r.detail.empty())
      why = "is marked redacted but still has a detail";
    else if (r.hash_version == 1)
      why = "was redacted but was written before detail digests (hash version 1), so its hash"
            " cannot be checked; run `sandboxctl projections rebuild read_models` to rewrite the"
            " audit log from the event log";
    if (!why.empty())
      report.about(r, audit_problem::bad_redaction, why);
  }
}

} // namespace

std::vector<audit_finding> verify_chain(const std::string& tenant, std::int32_t partition,
                                        const std::vector<audit_row>& rows,
                                        const std::optional<recorded_head>& head) {
  chain_report report(tenant, partition);
  std::vector<bool> reported(rows.size(), false);
  if (!plainly_intact(rows))
    follow_links(rows, report, reported);
  check_redactions(rows, report);
  if (rows.empty()) {
    if (head)
      report.add(1, "", audit_problem::truncated_tail,
                 report.chain() + " has no rows but its head is row " +
                   std::to_string(head->position) + ": " + were(1, head->position) + " deleted");
    return report.take();
  }
  const auto& last = rows.back();
  if (!head) {
    report.add(rows.front().position, rows.front().event_id, audit_problem::beyond_head,
               report.chain() + " has rows up to row " + std::to_string(last.position) +
                 " but no head: the head was deleted, or the rows were written outside the"
                 " projection");
  } else if (last.position < head->position) {
    report.add(last.position + 1, "", audit_problem::truncated_tail,
               report.chain() + " ends at row " + std::to_string(last.position) +
                 " but its head is row " + std::to_string(head->position) + ": " +
                 were(last.position + 1, head->position) + " deleted from its end");
  } else if (last.position > head->position) {
    auto first = std::find_if(rows.begin(), rows.end(),
                              [&](const audit_row& r) { return r.position > head->position; });
    report.add(first->position, first->event_id, audit_problem::beyond_head,
               report.chain() + " goes on past its head (row " + std::to_string(head->position) +
                 "): " + range(first->position, last.position) +
                 " were written outside the projection");
  } else if (last.hash != head->hash && !reported.back()) {
    report.about(last, audit_problem::broken_link,
                 "is not the row the chain head recorded: it was replaced and its hash"
                 " recomputed");
  }
  return report.take();
}

} // namespace sandboxd::projections
