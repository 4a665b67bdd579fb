// result.hpp — the error code, `error` and `result<T>` of the RPC layer: the project's one
// code (base/errc.hpp, docs/errors.md), which the server answers and the C++ client returns.
#pragma once

#include "base/errc.hpp"
#include "base/result.hpp"

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

} // namespace sandboxd::api
