// read_models — a projection's read models (make_read_models: sandboxes, billing meters, audit
// log) and the runner that applies a batch of events to all of them inside the caller's
// transaction.
//
// The caller (projector, rebuild) owns the transaction and the offsets; this only writes rows.
// With the transaction it guarantees: every event of the batch whose sequence number is above
// the highest one this projection applied for its sandbox changes the read models exactly
// once; the others (duplicates) change nothing; a sequence gap throws sequence_gap before
// anything is written (sequence_guard.hpp). Events must come in log order per partition. The
// statements are set-based (unnest arrays, COPY), a handful per model and batch.
//
// Between batches the guard and the models remember what they wrote (read_model.hpp), which
// holds only while this runner's batches are the only writes to the rows: the caller says
// when it may not be (forget(): after another projector committed, or a batch threw).
// Every model but the first computes its rows on a thread of its own, started once with the
// runner, while PostgreSQL executes the statements of the models before it.
#pragma once

#include "base/worker_pool.hpp"
#include "projections/read_model.hpp"
#include "projections/sequence_guard.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace sandboxd::projections {

struct batch_outcome {
  std::size_t applied = 0;
  std::size_t duplicates = 0;
};

// The read models, in the order they write; the one list a new read model is added to.
std::vector<std::unique_ptr<read_model>> make_read_models();

class read_models {
public:
  // Past this many sandboxes remembered, bound() forgets rather than grows (some 70 MB).
  static constexpr std::size_t max_sandboxes = 250'000;

  explicit read_models(std::string projection);
  ~read_models();
  read_models(const read_models&) = delete;
  read_models& operator=(const read_models&) = delete;

  // Applies `batch` in `tx` (above). If it throws, what the models remember is not current:
  // forget() before the next batch.
  batch_outcome apply(pqxx::transaction_base& tx, const std::vector<positioned_event>& batch);

  // Drops what the guard and the models remember; the next batch reads what it needs.
  void forget();
  // forget() when more than max_sandboxes sandboxes are remembered.
  void bound();

  // Every table the read models and the guard write, in the order of make_read_models() and
  // the guard's last: what a rebuild compares.
  static std::vector<std::string> tables();

private:
  sequence_guard guard_;
  std::vector<std::unique_ptr<read_model>> models_;
  std::vector<std::unique_ptr<worker_pool>> helpers_; // models_[i] computes on helpers_[i - 1]
};

} // namespace sandboxd::projections
