// rpc_error.hpp — the one mapping between `api::error` and a Cap'n Proto exception.
//
// On the wire an error is a kj::Exception whose description is "<code>: <message>"
// (schemas/api.capnp, docs/errors.md). Its type is OVERLOADED for resource_exhausted and
// unavailable (retrying may succeed) and FAILED otherwise. Reading one back: a description
// that starts with a known code gives that code; DISCONNECTED (the peer went away, the
// daemon shuts down) and any exception without a code are `unavailable`, with the
// exception's text as the message.
#pragma once

#include "api/result.hpp"

#include <kj/exception.h>

namespace sandboxd::api {

kj::Exception to_exception(const error& e);
error from_exception(const kj::Exception& e);

// Throws to_exception(e): how a server method answers with an error.
[[noreturn]] void throw_error(const error& e);
[[noreturn]] inline void throw_error(errc code, std::string message) {
  throw_error(error{code, std::move(message)});
}
// Throws the error of a failed check, if it failed.
inline void check_result(const result<void>& r) {
  if (!r)
    throw_error(r.err());
}

} // namespace sandboxd::api
