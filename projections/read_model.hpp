// read_model — what every read model of a projection is to the runner: tables that a batch
// of fresh events changes inside the runner's transaction.
//
// The runner (read_models.hpp) admits a batch's fresh events (sequence_guard.hpp: duplicates
// dropped, gaps refused), then, for each read model in order: recall() on the step thread,
// compute() — the first model's on the step thread, every other one's on a helper thread of
// its own, so that it runs while PostgreSQL executes the models before it — and write(), in
// model order, once its compute() is done. A read model may remember what it wrote (per
// sandbox, per chain) between batches, to read less back; the runner tells it to forget()
// whenever PostgreSQL may hold something else (another projector committed, a step failed).
// Adding a read model is a class of this interface, its migration, and a line in
// make_read_models().
#pragma once

#include "events/event.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace pqxx {
class transaction_base;
}

namespace sandboxd::projections {

// An event and where it was read from.
struct positioned_event {
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  events::event event;
};

using event_list = std::vector<const positioned_event*>;

// The fresh events of one sandbox in a batch, in log order.
struct sandbox_batch {
  const std::string* id = nullptr;
  bool had_row = false; // a `sandboxes` row existed before the batch
  event_list events;
};

// The fresh events of a batch: all in batch order (log order per partition), and per sandbox
// in sandbox id order (the order of the primary keys the rows are written under).
struct fresh_batch {
  event_list all;
  std::vector<sandbox_batch> sandboxes;
};

class read_model {
public:
  virtual ~read_model() = default;

  // Its tables, in the order its migrations made them (a rebuild compares them).
  virtual std::vector<std::string> tables() const = 0;

  // Reads in `tx` what compute() needs about the batch's sandboxes or chains and the model
  // does not remember. On the step thread, before any model's compute().
  virtual void recall(pqxx::transaction_base& tx, const fresh_batch& batch) = 0;

  // Computes the batch's rows without PostgreSQL and moves what the model remembers to what
  // the batch leaves. May run on a helper thread while other models write: it touches only
  // its own model's state.
  virtual void compute(const fresh_batch& batch) = 0;

  // Writes in `tx` the rows compute() made.
  virtual void write(pqxx::transaction_base& tx) = 0;

  // Drops what it remembers, and rows not written.
  virtual void forget() = 0;
};

} // namespace sandboxd::projections
