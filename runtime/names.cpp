#include "runtime/names.hpp"

#include "base/utf8.hpp"

#include <stdexcept>
#include <string>

namespace sandboxd::runtime {
namespace {

bool is_lower_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// The name as shown in a message: printable ASCII only, cut short, so that a hostile
// name cannot forge lines in a log.
std::string shown(std::string_view name) {
  std::string out;
  for (char c : name.substr(0, 80))
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return name.size() > 80 ? out + "..." : out;
}

outcome<void> check(const char* what, std::string_view name) {
  if (is_valid_name(name))
    return {};
  return make_error(errc::invalid_argument, std::string(what) + " '" + shown(name) +
                                              "' is invalid; use 1-64 of [a-z0-9_-], "
                                              "starting with a letter or digit");
}

bool is_env_name(std::string_view n) {
  if (n.empty() || n.size() > 256 || (n[0] >= '0' && n[0] <= '9'))
    return false;
  for (char c : n)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
  return true;
}

} // namespace

bool is_valid_name(std::string_view name) {
  if (name.empty() || name.size() > k_max_name_length || !is_lower_alnum(name[0]))
    return false;
  for (char c : name)
    if (!is_lower_alnum(c) && c != '_' && c != '-')
      return false;
  return true;
}

bool is_plain_component(std::string_view name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of(std::string_view("/\0", 2)) == std::string_view::npos;
}

void require_plain_component(std::string_view name, const char* what) {
  if (!is_plain_component(name))
    throw std::invalid_argument(std::string(what) + " '" + shown(name) +
                                "' is not one plain path component; refused");
}

outcome<void> check_sandbox_id(std::string_view id) {
  return check("sandbox id", id);
}

outcome<void> check_template_name(std::string_view name) {
  return check("template name", name);
}

outcome<void> check_env(const std::vector<std::pair<std::string, std::string>>& env) {
  for (const auto& [k, v] : env) {
    if (!is_env_name(k))
      return make_error(errc::invalid_argument,
                        "environment name '" + shown(k) +
                          "' is invalid; use 1-256 of [A-Za-z0-9_], not starting with a digit");
    if (!is_text(v))
      return make_error(errc::invalid_argument, "the value of environment variable " + k +
                                                  " holds a NUL byte or is not UTF-8; fix it");
  }
  return {};
}

outcome<void> check_snapshot_id(std::string_view id) {
  if (is_snapshot_id(id))
    return {};
  return make_error(errc::invalid_argument,
                    "snapshot id \"" + std::string(id.substr(0, 80)) +
                      "\" is not one sandboxd made (snap- and 16 hex digits); list snapshots");
}

} // namespace sandboxd::runtime
