// dockerfile — the Dockerfile subset a template can be built from (docs/templates.md
// "Dockerfile subset"): FROM (once, first), RUN, COPY, ENV, WORKDIR and USER. Pure: text in,
// a build_spec (build_spec.hpp) or an error out.
//
// Read as Docker reads it: instructions case-insensitive; `#` comment lines (also inside a
// continued line); a backslash at the end of a line continues it; RUN and COPY in shell form
// or exec form (a JSON array); ENV as NAME=VALUE pairs (double quotes, single quotes and
// backslash escapes as in a shell) or the old `ENV NAME value`. Anything else is refused
// with the line and the problem: another instruction (ADD, CMD, ARG, ...), options (RUN
// --mount, COPY --from, FROM --platform), multi-stage builds (FROM ... AS), an escape
// directive, a continued line at the end of the file.
#pragma once

#include "templates/build_spec.hpp"

#include <string_view>

namespace sandboxd::templates {

result<build_spec> parse_dockerfile(std::string_view text);

} // namespace sandboxd::templates
