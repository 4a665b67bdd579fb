// machine_rules.cpp — the wording and numbering both halves of decide share.
#include "actors/machine_rules.hpp"

#include <algorithm>

namespace sandboxd::actors::rules {

using events::errc;
using events::error;
using status = sandbox_status;

bool exists(status s) {
  return s != status::absent && s != status::deleted;
}

bool exec_in_flight(const sandbox_state& s, const std::string& exec_id) {
  return std::find(s.execs_in_flight.begin(), s.execs_in_flight.end(), exec_id) !=
         s.execs_in_flight.end();
}

bool file_op_in_flight(const sandbox_state& s, const std::string& op_id) {
  return std::find_if(s.file_ops_in_flight.begin(), s.file_ops_in_flight.end(), [&](const auto& o) {
           return o.op_id == op_id;
         }) != s.file_ops_in_flight.end();
}

// "paused (memory)" and the like: the status as a user would want it described.
std::string describe(const sandbox_state& s) {
  std::string d(to_string(s.status));
  if (s.status == status::paused || s.status == status::pausing)
    d += " (" + events::to_string(s.pause_mode) + ")";
  return d;
}

namespace {

// What to do when the command does not fit the current status.
std::string advice(const sandbox_state& s) {
  switch (s.status) {
  case status::creating:
  case status::claiming:
    return "wait until it is running";
  case status::pausing:
    return "wait until it is paused";
  case status::resuming:
    return "wait until it is running";
  case status::deleting:
    return "it is being deleted";
  case status::paused:
    return "resume it first";
  case status::running:
    return "pause it first";
  case status::failed:
    return "delete it and create a new one";
  default:
    return "create a new sandbox";
  }
}

} // namespace

error conflict(const sandbox_state& s, std::string_view action, std::string what_to_do) {
  return events::make_error(errc::conflict, "sandbox " + s.sandbox_id + " is " + describe(s) +
                                              "; cannot " + std::string(action) + "; " +
                                              (what_to_do.empty() ? advice(s) : what_to_do));
}

error invalid(const sandbox_state& s, std::string what) {
  return events::make_error(errc::invalid_argument,
                            "sandbox " + s.sandbox_id + ": " + std::move(what));
}

// Empty when `path` is absolute, has no ".." component and no NUL byte.
std::string check_path(const std::string& path) {
  if (path.empty() || path.front() != '/')
    return "path \"" + path + "\" is not absolute; give a path starting with /";
  if (path.find('\0') != std::string::npos)
    return "path contains a NUL byte";
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos)
      end = path.size();
    if (path.compare(start, end - start, "..") == 0)
      return "path \"" + path + "\" has a \"..\" component; give a normalized path";
    start = end + 1;
  }
  return {};
}

emitter& emitter::add(events::payload p) {
  events::event e;
  e.sequence = s_.sequence + out_.size() + 1;
  e.sandbox_id = s_.sandbox_id;
  e.event_id = s_.sandbox_id + ":" + std::to_string(e.sequence);
  // A claim hands the sandbox to the claiming tenant: its own events are that tenant's.
  const bool claim = std::holds_alternative<cmd::claim>(c_.body);
  e.tenant = s_.status == status::absent || claim ? c_.tenant : s_.tenant;
  e.principal = c_.principal;
  e.occurred_at = now_;
  e.correlation_id = c_.correlation_id;
  e.causation_id = c_.causation_id;
  e.body = std::move(p);
  out_.push_back(std::move(e));
  return *this;
}

std::vector<events::env_var> loggable(std::vector<events::env_var> env) {
  for (auto& v : env)
    if (v.secret) {
      // Nothing derived from the value: an unsalted hash of a short secret is the secret.
      v.value.clear();
      v.value_sha256.reset();
    }
  return env;
}

} // namespace sandboxd::actors::rules
