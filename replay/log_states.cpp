// The fold of a whole log into a table of sandbox states, one in-place apply per record, with
// the lookups of the next records prefetched while the current one is decoded.
#include "replay/log_states.hpp"

#include "events/file_log_reader.hpp"

#include <array>
#include <functional>
#include <stdexcept>
#include <string>

namespace sandboxd::replay {

std::uint64_t sandbox_states::hash(std::string_view id) {
  return std::hash<std::string_view>{}(id);
}

std::size_t sandbox_states::probe(std::string_view id, std::uint64_t h) const {
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = h & mask;; i = (i + 1) & mask) {
    const auto& s = slots_[i];
    if (s.index == 0 || (s.hash == h && states_[s.index - 1].sandbox_id == id))
      return i;
  }
}

void sandbox_states::grow() {
  std::vector<slot> bigger(slots_.size() * 2);
  const std::size_t mask = bigger.size() - 1;
  for (const auto& s : slots_) {
    if (s.index == 0)
      continue;
    std::size_t i = s.hash & mask;
    while (bigger[i].index != 0)
      i = (i + 1) & mask;
    bigger[i] = s;
  }
  slots_.swap(bigger);
}

actors::sandbox_state& sandbox_states::at(std::string_view id, std::uint64_t h) {
  auto i = probe(id, h);
  if (slots_[i].index != 0)
    return states_[slots_[i].index - 1];
  if ((states_.size() + 1) * 2 > slots_.size()) {
    grow();
    i = probe(id, h);
  }
  states_.push_back(actors::initial_state(std::string(id)));
  slots_[i] = {h, static_cast<std::uint32_t>(states_.size())};
  return states_.back();
}

actors::sandbox_state* sandbox_states::find(std::string_view id, std::uint64_t h) {
  const auto i = probe(id, h);
  return slots_[i].index == 0 ? nullptr : &states_[slots_[i].index - 1];
}

const actors::sandbox_state* sandbox_states::find(std::string_view id) const {
  const auto i = probe(id, hash(id));
  return slots_[i].index == 0 ? nullptr : &states_[slots_[i].index - 1];
}

actors::sandbox_state* sandbox_states::guess(std::uint64_t h) {
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = h & mask; slots_[i].index != 0; i = (i + 1) & mask)
    if (slots_[i].hash == h)
      return &states_[slots_[i].index - 1];
  return nullptr;
}

void sandbox_states::prefetch_slot(std::uint64_t h) const {
  __builtin_prefetch(&slots_[h & (slots_.size() - 1)]);
}

namespace {

constexpr std::size_t k_read_chunk = 4096;

[[noreturn]] void unreadable(const events::event_log& log, std::int32_t partition,
                             const events::error& e) {
  throw std::runtime_error(log.describe() + ": partition " + std::to_string(partition) +
                           " cannot be read: " + e.message);
}

// Records on their way through the fold: a record's slot is prefetched when it enters, its
// state looked up and prefetched k_lag / 2 records later, and it is decoded and applied
// k_lag records later. Records leave in the order they entered.
class fold_pipeline {
public:
  fold_pipeline(sandbox_states& states, const events::event_log& log, const sequence_bounds* until)
      : states_(states), log_(log), until_(until) {}

  void push(std::int32_t partition, std::int64_t offset, std::string_view key,
            std::string_view value) {
    if (key == events::template_stream_key)
      return; // the template registry's stream: no sandbox's
    if (count_ == k_lag)
      apply(ring_[head_ % k_lag]); // the oldest, leaving its place to this one
    else
      ++count_;
    auto& r = ring_[head_ % k_lag];
    r = {partition, offset, key, value, sandbox_states::hash(key), nullptr};
    states_.prefetch_slot(r.hash);
    ++head_;
    if (count_ > k_lag / 2) {
      auto& mid = ring_[(head_ - 1 - k_lag / 2) % k_lag];
      mid.state = states_.guess(mid.hash);
      if (mid.state != nullptr)
        for (std::size_t line = 0; line < sizeof(actors::sandbox_state); line += 64)
          __builtin_prefetch(reinterpret_cast<const char*>(mid.state) + line);
    }
  }

  void finish() {
    for (std::size_t i = head_ - count_; i < head_; ++i)
      apply(ring_[i % k_lag]);
    count_ = 0;
  }

private:
  static constexpr std::size_t k_lag = 16;
  struct pending {
    std::int32_t partition = 0;
    std::int64_t offset = 0;
    std::string_view key, value;
    std::uint64_t hash = 0;
    actors::sandbox_state* state = nullptr; // guessed at the middle stage; null: look it up
  };

  void apply(const pending& r) {
    auto d = events::decode(r.value);
    if (!d.ok())
      throw std::runtime_error(log_.describe() + ": the record at partition " +
                               std::to_string(r.partition) + " offset " + std::to_string(r.offset) +
                               " is not an event (" + d.failure().message + ")");
    // The guess is checked here; a sandbox first seen within the window was not in the table
    // at the middle stage.
    auto& s =
      r.state != nullptr && r.state->sandbox_id == r.key ? *r.state : states_.at(r.key, r.hash);
    if (until_ != nullptr) {
      auto bound = until_->find(r.key);
      if (bound != until_->end() && d.get().sequence > bound->second)
        return;
    }
    actors::apply(s, d.get());
  }

  sandbox_states& states_;
  const events::event_log& log_;
  const sequence_bounds* until_;
  std::array<pending, k_lag> ring_{};
  std::size_t head_ = 0;  // records pushed
  std::size_t count_ = 0; // of them not applied yet
};

} // namespace

sandbox_states fold_log(events::event_log& log, const sequence_bounds* until) {
  sandbox_states states;
  fold_pipeline pipeline(states, log, until);
  if (auto* file = dynamic_cast<events::file_log_reader*>(&log)) {
    file->visit_all([&](std::int32_t partition, std::int64_t offset, std::string_view key,
                        std::string_view value) {
      pipeline.push(partition, offset, key, value);
      return true;
    });
    pipeline.finish();
    return states;
  }
  for (std::int32_t partition = 0; partition < log.partitions(); ++partition) {
    const auto end = log.end_offset(partition);
    if (!end.ok())
      unreadable(log, partition, *end.failure);
    for (std::int64_t from = 0; from < end.offset;) {
      auto chunk = log.read(partition, from, k_read_chunk);
      if (!chunk.ok())
        unreadable(log, partition, *chunk.failure);
      if (chunk.records.empty())
        break;
      for (const auto& r : chunk.records)
        if (r.offset < end.offset)
          pipeline.push(partition, r.offset, r.key, r.value);
      pipeline.finish(); // the chunk's records are about to go
      from = chunk.records.back().offset + 1;
    }
  }
  return states;
}

} // namespace sandboxd::replay
