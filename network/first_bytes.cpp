#include "network/first_bytes.hpp"

namespace sandboxd::network {

const char* to_string(first_bytes_status s) {
  switch (s) {
  case first_bytes_status::complete:
    return "complete";
  case first_bytes_status::incomplete:
    return "incomplete";
  case first_bytes_status::other:
    return "other";
  case first_bytes_status::malformed:
    return "malformed";
  }
  return "unknown";
}

} // namespace sandboxd::network
