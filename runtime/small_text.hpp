// small_text — reads a small text file whole (a cgroup counter, a pid file, a /proc
// entry) with its trailing newlines and spaces removed; empty when it cannot be read.
#pragma once

#include <string>

namespace sandboxd::runtime {

std::string read_small_text(const std::string& path);

} // namespace sandboxd::runtime
