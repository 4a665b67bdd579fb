#include "projections/projection_memory.hpp"

namespace sandboxd::projections {

void projection_memory::forget() {
  sandboxes.clear();
  heads.clear();
  vouched_.reset();
}

void projection_memory::check(const offsets& at) {
  if (!trusted_at(at) || sandboxes.size() > max_sandboxes)
    forget();
}

} // namespace sandboxd::projections
