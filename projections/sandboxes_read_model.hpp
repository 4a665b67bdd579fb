// sandboxes_read_model — the `sandboxes` table (docs/projections.md): one row per sandbox
// whose `created` was applied, its state and metadata as its events leave them.
//
// A batch writes each sandbox's row once: its events fold into one patch (sandbox_row.hpp);
// a sandbox without a row before the batch whose batch has `created` gets its row inserted,
// one with a row gets it updated (a second `created` changes nothing of it), one without a
// row and without `created` gets none. Whether the row exists comes from the sequence guard
// (sandbox_batch::had_row), which keeps its last_seq, so this model remembers nothing itself.
#pragma once

#include "projections/pg_array.hpp"
#include "projections/read_model.hpp"

namespace sandboxd::projections {

class sandboxes_read_model : public read_model {
public:
  std::vector<std::string> tables() const override { return {"sandboxes"}; }
  void recall(pqxx::transaction_base&, const fresh_batch&) override {}
  void compute(const fresh_batch& batch) override;
  void write(pqxx::transaction_base& tx) override;
  void forget() override { rows_ = {}; }

private:
  // New rows, and changes to existing ones, as unnest arrays.
  struct new_rows {
    pg_array id, tenant, state, template_name, runtime, limits, labels, pause_mode, bytes, created,
      updated, seq;
  };
  struct row_changes {
    pg_array id, state, pause_mode, bytes, redacted, updated, seq;
    pg_array tenant, labels, created; // a claim's (docs/pools.md); NULL without one
  };
  struct batch_rows {
    new_rows inserts;
    row_changes updates;
  };
  batch_rows rows_;
};

} // namespace sandboxd::projections
