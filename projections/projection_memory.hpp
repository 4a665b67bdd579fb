// projection_memory — when what a projector's read models remember between its own
// consecutive steps (read_model.hpp, sequence_guard.hpp) may be trusted.
//
// An entry the read models remember is what PostgreSQL holds after the step that wrote it
// committed; a sandbox or chain without an entry is read from PostgreSQL. The memory is only
// valid for the offsets it was vouched at: the projector vouches after its commit with the
// offsets it committed, and before applying the next step compares them with the offsets it
// locked. Any commit by another projector moves some offset forward, and every sandbox and
// chain belongs to one partition (log key: the sandbox id), so equal offsets mean nobody else
// changed these rows. While a step applies, the memory is distrusted; a step that fails (a
// fault, an uncertain commit) leaves it distrusted, and the next step has the read models
// forget and read again.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace sandboxd::projections {

class projection_memory {
public:
  using offsets = std::map<std::int32_t, std::int64_t>;

  // Whether the read models' memory describes PostgreSQL when its locked offsets are `at`.
  bool trusted_at(const offsets& at) const { return vouched_ && *vouched_ == at; }
  void vouch(offsets at) { vouched_ = std::move(at); }
  void distrust() { vouched_.reset(); }

private:
  std::optional<offsets> vouched_;
};

} // namespace sandboxd::projections
