// build_spec — a template spec: what a spec build makes (docs/templates.md "Build from a
// spec"), as both of its formats (spec_toml.hpp, dockerfile.hpp) parse to. Pure: no I/O.
//
// A spec is a FROM template and steps in order. RUN and COPY make layers; ENV, WORKDIR and
// USER change the build's configuration (and the template's defaults). Each step carries its
// canonical text: the same step written in TOML or as a Dockerfile line has the same text,
// which is what its template events show and what its build cache key hashes.
//
// Rules every parsed spec keeps (check_spec):
// - FROM names a template ([a-z0-9_-]{1,64}), never an image reference;
// - a COPY source is a relative path inside the build context: no "..", no absolute path,
//   no wildcard; several sources need a destination ending in "/";
// - an ENV name is [A-Za-z_][A-Za-z0-9_]*;
// - no RUN after a USER other than root (steps run as root: the runtime has no per-step user).
#pragma once

#include "base/result.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sandboxd::templates {

enum class step_kind { run, copy, env, workdir, user };

struct spec_step {
  step_kind kind = step_kind::run;
  unsigned line = 0; // where the step starts in the spec (1 = the first line)
  // run: the argv ({"/bin/sh", "-c", command} for the shell form); copy: the sources, then the
  // destination last; workdir, user: one value. Values of copy, workdir, user and env are as
  // written: $NAME and ${NAME} are expanded when the step is built (expand_variables).
  std::vector<std::string> args;
  bool shell_form = false;                              // run: written as a command line
  std::vector<std::pair<std::string, std::string>> env; // env: in order
  bool operator==(const spec_step&) const = default;
};

struct build_spec {
  std::string from;
  unsigned from_line = 0;
  std::vector<spec_step> steps;
  bool operator==(const build_spec&) const = default;
};

enum class spec_format { toml, dockerfile };

// The spec in `text`, parsed by its format's parser (spec_toml.hpp, dockerfile.hpp).
result<build_spec> parse_spec(spec_format format, std::string_view text);

// The step as one canonical instruction line: "RUN <command>" (shell form) or RUN and COPY
// with a JSON array (exec form, or sources that need quoting), "ENV NAME=VALUE ..." (values
// double-quoted when they need it), "WORKDIR <dir>", "USER <user>".
std::string step_text(const spec_step& s);
// "RUN", "COPY", "ENV", "WORKDIR", "USER".
std::string_view keyword(step_kind k);

// Checks the rules above; invalid_argument naming `what` ("Dockerfile", "spec"), the line and
// the problem.
result<void> check_spec(const build_spec& spec, const std::string& what);

// The components of `path` between its slashes, "" and "." left out ("/a//./b/" is a, b);
// ".." is kept for the caller to judge.
std::vector<std::string> path_components(std::string_view path);

// A COPY source's path components (empty: the whole context), or invalid_argument naming it.
result<std::vector<std::string>> copy_source_parts(const std::string& source);

// `text` with $NAME and ${NAME} replaced by their values in `env` (unset: empty) and \$ by
// a literal $; invalid_argument for ${NAME:-...} forms and an unclosed ${.
result<std::string> expand_variables(const std::string& text,
                                     const std::vector<std::pair<std::string, std::string>>& env);

// `dir` (expanded) as an absolute, normalised path: relative to `from` (the WORKDIR so far,
// "" = "/"); "." and ".." components resolved lexically, never above "/".
std::string resolve_directory(const std::string& from, const std::string& dir);

} // namespace sandboxd::templates
