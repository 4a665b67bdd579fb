// json_shapes — what each sandboxctl command prints with --json, field by field. docs/cli.md's
// "JSON output" section is generated from these tables, and the end-to-end tests check every
// document a command prints against them (shape_problems), so the reference names exactly
// the fields a script gets: no field missing, none undocumented, each of its documented type.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace sandboxd::cli {

// One field of a shape. `type` is one of: string, integer, number, boolean, time (an RFC 3339
// string), object (free-form: labels, payloads), [string], <shape> (an object of that shape),
// [<shape>] (an array of them); "|null" may follow any of them.
struct json_field {
  std::string name;
  std::string type;
  bool optional = false; // may be absent (one of two spellings: `content` or `content_base64`)
  std::string what;
};

struct json_shape {
  std::string name; // "sandbox"
  std::string what; // one line
  std::vector<json_field> fields;
};

// What a command prints with --json: one document of a shape, or JSON lines (one document
// per line) of a shape. Every command prints `error` instead when it fails.
struct json_output {
  std::string command; // "audit verify"
  std::string shape;
  bool lines = false;
};

const std::vector<json_shape>& json_shapes();
const std::vector<json_output>& json_outputs();

// The shape a command prints (nullptr when the command prints no JSON of its own).
const json_output* json_output_of(const std::string& command);

// Every way `doc` differs from shape `shape` (recursively): a field missing, a field the shape
// does not document, a value of another type. Empty when it matches.
std::vector<std::string> shape_problems(const nlohmann::json& doc, const std::string& shape);

// The "JSON output" section of docs/cli.md.
std::string json_shapes_markdown();

} // namespace sandboxd::cli
