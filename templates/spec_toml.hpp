// spec_toml — the TOML form of a template spec (docs/templates.md "TOML spec"). Pure: text
// in, a build_spec (build_spec.hpp) or an error out.
//
//   from = "python"                     # required: the template to build on
//   [[steps]]
//   run = "pip install requests"        # a command line for /bin/sh -c, or an argv array
//   [[steps]]
//   copy = ["app", "requirements.txt"]  # sources in the build context (a string for one)
//   to = "/srv/"                        # required with copy
//   [[steps]]
//   env = { APP_ENV = "prod" }          # variables, set in name order
//   [[steps]]
//   workdir = "/srv/app"
//   [[steps]]
//   user = "app"
//
// Each step is one table with exactly one of run, copy, env, workdir, user (and `to` with
// copy). A key the format does not have, a value of the wrong type and TOML that does not
// parse are refused naming the line and the problem. A step means exactly what the same
// Dockerfile instruction means, and has the same canonical text (build_spec.hpp).
#pragma once

#include "templates/build_spec.hpp"

#include <string_view>

namespace sandboxd::templates {

result<build_spec> parse_spec_toml(std::string_view text);

} // namespace sandboxd::templates
