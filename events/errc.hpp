// errc.hpp — the project's error code as the events layer names it: `events::errc`,
// `events::error` and `events::make_error` are base/errc.hpp's, under the names the event
// code has always used.
#pragma once

#include "base/errc.hpp"

namespace sandboxd::events {

using sandboxd::errc;
using sandboxd::error;
using sandboxd::make_error;
using sandboxd::to_string;

} // namespace sandboxd::events
