// version — sandboxd's version, from the project's CMake version.
#pragma once

#include <string_view>

namespace sandboxd::node {

std::string_view version();

} // namespace sandboxd::node
