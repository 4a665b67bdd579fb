#include "node/node_config.hpp"

namespace sandboxd::node {

std::string to_string(log_kind k) {
  return k == log_kind::kafka ? "kafka" : "file";
}

} // namespace sandboxd::node
