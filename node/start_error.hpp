// start_error — why a node (or one of its parts) cannot start: a dependency that is
// unusable (PostgreSQL unreachable, a Kafka topic that does not fit, a data directory
// owned by another user, a runtime that cannot run here). The message names the part and
// the thing, and says what to do; the daemon prints it and exits.
#pragma once

#include <stdexcept>

namespace sandboxd::node {

class start_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

} // namespace sandboxd::node
