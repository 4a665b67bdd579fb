#include "node/version.hpp"

namespace sandboxd::node {

std::string_view version() {
  return SANDBOXD_VERSION;
}

} // namespace sandboxd::node
