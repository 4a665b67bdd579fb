// json_util — how sandboxctl's --json documents spell values: nlohmann's ordered_json (fields
// keep the order they are written in), durations as seconds, digests as lowercase hex, and
// bytes that may not be text (exec output, file content) as a string when they are valid
// UTF-8 and as base64 under `<key>_base64` otherwise, so a document always parses.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <string_view>

namespace sandboxd::cli {

using json = nlohmann::ordered_json;

// Seconds as a JSON number: an integer when whole, else a fraction.
json seconds_json(std::chrono::nanoseconds d);

std::string hex(std::string_view bytes);
std::string base64(std::string_view bytes);
bool valid_utf8(std::string_view bytes);

// doc[key] = the bytes as a string, or doc[key + "_base64"] when they are not UTF-8.
void put_bytes(json& doc, const std::string& key, std::string_view bytes);

// One line: the document dumped without spaces or newlines inside, then '\n'; bytes that are
// not UTF-8 in strings become U+FFFD (they never make the dump throw).
std::string dump_line(const json& doc);

} // namespace sandboxd::cli
