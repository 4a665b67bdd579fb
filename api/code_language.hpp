// code_language — what `run(language, code)` runs: the interpreter of each language that
// `sandboxctl run` and the Python SDK's `Sandbox.run` take (sdk/python/sandboxd/languages.py
// holds the same table: keep the two in step). The code goes to the
// interpreter's stdin, so it needs no quoting and no file in the sandbox.
//
//   python (python3, py)        python3 -
//   node (javascript, js)       node -
//   bash                        bash -s
//   sh                          /bin/sh -s
//
// The command is a /bin/sh script that first looks the interpreter up: a template without
// it (base has no python) answers exit 127 and a line on stderr naming the template to use,
// rather than the shell's bare "not found".
#pragma once

#include "api/result.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace sandboxd::api {

struct code_language {
  std::string name;              // the canonical name: python, node, bash, sh
  std::string program;           // the interpreter, looked up in the sandbox's PATH
  std::vector<std::string> argv; // what exec runs; the code is its stdin
};

// The language `name` (case-insensitive, aliases included); INVALID_ARGUMENT naming the
// languages there are otherwise.
result<code_language> code_language_of(std::string_view name);

// "python, node, bash, sh": for help texts and errors.
std::string code_language_names();

} // namespace sandboxd::api
