// errc — the runtime's words for the project's one error vocabulary (base/errc.hpp,
// base/result.hpp): `outcome<T>` is `result<T>`, the value every driver call returns —
// either a T or an `error` (a code and a message that names the thing and says what to
// do). Exceptions are reserved for faults of the host itself and are caught at the driver
// boundary and reported as `errc::internal` (guard_faults below).
#pragma once

#include "base/result.hpp"

#include <exception>
#include <string>

namespace sandboxd::runtime {

using sandboxd::errc;
using sandboxd::error;
using sandboxd::make_error;
using sandboxd::to_string;

template <class T>
using outcome = sandboxd::result<T>;

// Runs `f` (returning an outcome) and turns an exception, a fault of the host, into
// errc::internal naming `what`: the driver boundary never throws.
template <class F>
auto guard_faults(const std::string& what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    return make_error(errc::internal, what + ": " + e.what());
  }
}

} // namespace sandboxd::runtime
