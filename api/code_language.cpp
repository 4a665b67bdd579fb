#include "api/code_language.hpp"

#include <array>
#include <cctype>

namespace sandboxd::api {
namespace {

struct entry {
  const char* name;
  std::array<const char*, 3> aliases; // nullptr-ended
  const char* program;
  const char* arg;       // the interpreter's "program on stdin" argument
  const char* template_; // the stock template that has it
};

constexpr std::array<entry, 4> k_languages{{
  {"python", {"python3", "py", nullptr}, "python3", "-", "python"},
  {"node", {"javascript", "js", nullptr}, "node", "-", "node"},
  {"bash", {nullptr, nullptr, nullptr}, "bash", "-s", "debian"},
  {"sh", {nullptr, nullptr, nullptr}, "/bin/sh", "-s", "base"},
}};

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

} // namespace

result<code_language> code_language_of(std::string_view name) {
  const std::string key = lower(name);
  for (const auto& e : k_languages) {
    bool match = key == e.name;
    for (const char* a : e.aliases)
      match = match || (a && key == a);
    if (!match)
      continue;
    code_language l;
    l.name = e.name;
    l.program = e.program;
    const std::string p = e.program, arg = e.arg, t = e.template_;
    l.argv = {"/bin/sh", "-c",
              "command -v " + p + " >/dev/null 2>&1 || { echo 'sandboxd: " + p +
                " is not in this sandbox: its template has none (the " + t +
                " template has it)' >&2; exit 127; }; exec " + p + " " + arg};
    return l;
  }
  return make_error(errc::invalid_argument, "unknown language '" + std::string(name) +
                                              "'; the languages are " + code_language_names());
}

std::string code_language_names() {
  std::string out;
  for (const auto& e : k_languages)
    out += (out.empty() ? "" : ", ") + std::string(e.name);
  return out;
}

} // namespace sandboxd::api
