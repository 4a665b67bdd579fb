// result.hpp — the error code, `error` and `result<T>` of the RPC layer: the project's one
// code (base/errc.hpp, docs/errors.md), which the server answers and the C++ client returns.
// The runtime's own codes are converted here, once, by name (its `failed` is `internal`).
#pragma once

#include "base/errc.hpp"
#include "base/result.hpp"
#include "runtime/errc.hpp"

#include <optional>
#include <string_view>

namespace sandboxd::api {

using sandboxd::errc;
using sandboxd::error;
using sandboxd::make_error;
using sandboxd::result;
using sandboxd::to_string;

// The code named `name` ("not_found", ...); empty for a name no code has.
std::optional<errc> parse_errc(std::string_view name);

errc from_runtime(runtime::errc code);

} // namespace sandboxd::api
