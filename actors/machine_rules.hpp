// machine_rules.hpp — what the two halves of decide (sandbox_machine.cpp: lifecycle,
// sandbox_operations.cpp: processes and files) share: how an accepted command's events are
// numbered, and how a rejection is worded. Internal to actors/.
#pragma once

#include "actors/sandbox_machine.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace sandboxd::actors::rules {

bool exists(sandbox_status s);
bool exec_in_flight(const sandbox_state& s, const std::string& exec_id);
bool file_op_in_flight(const sandbox_state& s, const std::string& op_id);

// "paused (memory)" and the like: the status as a user would want it described.
std::string describe(const sandbox_state& s);
// "sandbox <id> is <status>; cannot <action>; <what to do, or the status's advice>".
events::error conflict(const sandbox_state& s, std::string_view action,
                       std::string what_to_do = {});
events::error invalid(const sandbox_state& s, std::string what);
// Empty when `path` is absolute, has no ".." component and no NUL byte.
std::string check_path(const std::string& path);
// The env as it may be logged: a secret's value dropped, nothing derived from it kept.
std::vector<events::env_var> loggable(std::vector<events::env_var> env);

// Builds the events of one accepted command, numbering them densely.
class emitter {
public:
  emitter(const sandbox_state& s, const command& c, time_point now) : s_(s), c_(c), now_(now) {}
  emitter& add(events::payload p);
  decision done() { return decision{std::move(out_)}; }

private:
  const sandbox_state& s_;
  const command& c_;
  time_point now_;
  std::vector<events::event> out_;
};

inline decision reject(events::error e) {
  return decision{std::move(e)};
}
inline decision accept(const sandbox_state& s, const command& c, time_point now,
                       events::payload p) {
  return emitter(s, c, now).add(std::move(p)).done();
}
inline decision accept_nothing() {
  return decision{std::vector<events::event>{}};
}

// The decisions for exec, kill_exec, exec_finished and the file operations.
decision decide_operation(const sandbox_state& s, const command& c, time_point now);

} // namespace sandboxd::actors::rules
