// proto_json — reading and writing protobuf messages in proto3's JSON mapping, the encoding
// the E2B SDKs use for envd's RPCs (and the JSON of the REST API): what the mapping allows a
// client to send is accepted (a field under its JSON name or its proto name; bytes in base64
// of either alphabet, padded or not; a 32-bit integer as a number or a string; an enum by name
// or number), unknown fields are ignored, and what is written uses the JSON names, bytes in
// standard base64, 64-bit integers as strings and times as RFC 3339 in UTC.
//
// Every reader answers invalid_argument naming the field on a value of the wrong kind. A
// document nested deeper than 32 levels is refused before it is parsed.
#pragma once

#include "base/result.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

// `auto var = expr;` returning its error from the enclosing function when it failed.
#define E2B_TRY(var, expr)                                                                         \
  auto var = (expr);                                                                               \
  if (!var)                                                                                        \
  return var.err()

namespace sandboxd::e2b {

using json = nlohmann::json;

// A JSON object parsed from `text`; `what` names the message in errors.
result<json> parse_object(std::string_view text, std::string_view what);

// The member `json_name` of `object`, else `proto_name` (when given); null when absent (or
// JSON null, which the mapping reads as the default).
const json* member(const json& object, std::string_view json_name,
                   std::string_view proto_name = {});

result<std::string> read_string(const json* v, std::string_view field);
result<bool> read_bool(const json* v, std::string_view field);
result<std::uint32_t> read_uint32(const json* v, std::string_view field);
result<std::int64_t> read_int64(const json* v, std::string_view field);
// Base64 (standard or URL-safe alphabet, padding optional) decoded.
result<std::string> read_bytes(const json* v, std::string_view field);
result<std::string> decode_base64(std::string_view text);

// Text for JSON: bytes that are not UTF-8 become U+FFFD, so a dump never throws.
std::string dump(const json& j);

// RFC 3339 in UTC with nanoseconds trimmed of trailing zeros ("2026-12-01T13:59:27.5Z"),
// as protobuf's Timestamp and the REST API write times.
std::string rfc3339(std::int64_t unix_ns);

} // namespace sandboxd::e2b
