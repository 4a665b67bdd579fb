// small_text — reads a small file whole (a cgroup counter, a pid file, a /proc entry):
// read_small_file as it is, read_small_text with its trailing newlines and spaces removed.
// Both are empty when the file cannot be read, also when a read fails midway (a /proc entry
// of a process that ends while it is read answers ESRCH): they never throw.
#pragma once

#include <string>

namespace sandboxd::runtime {

std::string read_small_file(const std::string& path);
std::string read_small_text(const std::string& path);

} // namespace sandboxd::runtime
