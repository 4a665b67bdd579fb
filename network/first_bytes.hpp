// first_bytes — what the egress proxy learns from the first bytes a sandbox sends on a
// connection before anything is dialled: the name the connection is for (tls_hello.hpp,
// http_head.hpp). A reader never consumes: it is handed everything received so far and says
// whether that is enough.
#pragma once

#include <cstddef>

namespace sandboxd::network {

enum class first_bytes_status {
  complete,   // the name (or its absence) is known
  incomplete, // more bytes are needed; the proxy waits for them (up to k_first_bytes_limit)
  other,      // not this protocol: the proxy tries the next reader, or denies
  malformed,  // this protocol, but not a form the proxy accepts: denied
};
const char* to_string(first_bytes_status s);

// The most the proxy holds before it must know the name: a whole TLS record (2^14 bytes and
// its 5-byte header) fits, and so does any HTTP request head it accepts (http_head.hpp).
inline constexpr std::size_t k_first_bytes_limit = 16384 + 5;

} // namespace sandboxd::network
