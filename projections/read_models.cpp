#include "projections/read_models.hpp"

#include "projections/audit_read_model.hpp"
#include "projections/billing_read_model.hpp"
#include "projections/sandboxes_read_model.hpp"

#include <future>

namespace sandboxd::projections {

std::vector<std::unique_ptr<read_model>> make_read_models() {
  std::vector<std::unique_ptr<read_model>> models;
  models.push_back(std::make_unique<sandboxes_read_model>());
  models.push_back(std::make_unique<billing_read_model>());
  models.push_back(std::make_unique<audit_read_model>());
  return models;
}

read_models::read_models(std::string projection)
    : guard_(std::move(projection)), models_(make_read_models()) {
  for (std::size_t i = 1; i < models_.size(); ++i)
    helpers_.push_back(std::make_unique<worker_pool>(1, "sbd-model"));
}

read_models::~read_models() = default;

std::vector<std::string> read_models::tables() {
  std::vector<std::string> out;
  for (const auto& m : make_read_models())
    for (auto& t : m->tables())
      out.push_back(std::move(t));
  out.push_back(sequence_guard::table());
  return out;
}

void read_models::forget() {
  guard_.forget();
  for (auto& m : models_)
    m->forget();
}

void read_models::bound() {
  if (guard_.remembered() > max_sandboxes)
    forget();
}

batch_outcome read_models::apply(pqxx::transaction_base& tx,
                                 const std::vector<positioned_event>& batch) {
  batch_outcome outcome;
  if (batch.empty())
    return outcome;
  guard_.recall(tx, batch);
  const auto fresh = guard_.admit(batch, outcome.duplicates);
  outcome.applied = fresh.all.size();
  if (fresh.all.empty())
    return outcome;
  for (auto& m : models_)
    m->recall(tx, fresh);

  // The helpers read `fresh` and write their models: they must be done before this returns,
  // whatever throws.
  std::vector<std::future<void>> computing(models_.size());
  struct wait_for_helpers {
    std::vector<std::future<void>>& computing;
    ~wait_for_helpers() {
      for (auto& c : computing)
        if (c.valid())
          c.wait();
    }
  } waiting{computing};
  for (std::size_t i = 1; i < models_.size(); ++i)
    computing[i] = helpers_[i - 1]->submit([&m = *models_[i], &fresh] { m.compute(fresh); });
  guard_.write(tx, fresh);
  models_.front()->compute(fresh);
  models_.front()->write(tx);
  for (std::size_t i = 1; i < models_.size(); ++i) {
    computing[i].get();
    models_[i]->write(tx);
  }
  return outcome;
}

} // namespace sandboxd::projections
