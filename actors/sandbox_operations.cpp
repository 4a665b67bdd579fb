// sandbox_operations.cpp — decide for the operations on a sandbox's processes and files
// (docs/state-machine.md): exec only while running; reads while running or paused (either
// mode); changes while running or filesystem-paused (memory-paused: conflict, its memory
// and files are frozen together). An intent is logged before the driver is called and its
// outcome after; a read is logged once served.
#include "actors/machine_rules.hpp"
#include "base/utf8.hpp"

#include <type_traits>

namespace sandboxd::actors::rules {
namespace {

using events::errc;
using status = sandbox_status;

template <class T>
struct is_file_query : std::false_type {};
template <events::command_kind K>
struct is_file_query<cmd::file_query<K>> : std::true_type {};
template <class T>
struct is_file_change : std::false_type {};
template <events::command_kind K>
struct is_file_change<cmd::file_change<K>> : std::true_type {};

events::file_op_kind op_kind_of(events::command_kind k) {
  switch (k) {
  case events::command_kind::make_dir:
    return events::file_op_kind::make_dir;
  case events::command_kind::remove_path:
    return events::file_op_kind::remove;
  case events::command_kind::rename_path:
    return events::file_op_kind::rename;
  default:
    return events::file_op_kind::write;
  }
}

struct operation_decider {
  const sandbox_state& s;
  const command& c;
  time_point now;

  decision accept(events::payload p) const { return rules::accept(s, c, now, std::move(p)); }

  static bool all_text(const cmd::exec& x) {
    for (const auto& a : x.argv)
      if (!is_text(a))
        return false;
    for (const auto& v : x.env)
      if (!is_text(v.name) || !is_text(v.value))
        return false;
    return is_text(x.working_directory) && is_text(x.user);
  }

  decision operator()(const cmd::exec& x) const {
    if (s.status != status::running)
      return reject(
        conflict(s, "exec", s.status == status::paused ? "resume it before exec" : std::string{}));
    if (x.exec_id.empty() || exec_in_flight(s, x.exec_id))
      return reject(invalid(s, "exec id \"" + x.exec_id +
                                 "\" is empty or already running; use a new unique id"));
    if (x.argv.empty() || x.argv.front().empty())
      return reject(invalid(s, "exec needs a program; give argv[0]"));
    if (x.timeout.count() < 0)
      return reject(invalid(s, "exec timeout is negative; use 0 for none"));
    for (const auto& v : x.env)
      if (v.name.empty() || v.name.find('=') != std::string::npos)
        return reject(invalid(s, "env variable name \"" + text_of(v.name) +
                                   "\" is empty or has '='; give a plain name"));
    if (!all_text(x))
      return reject(invalid(s, "an argument, the working directory, the user or an env variable "
                               "holds a NUL byte or is not UTF-8; OCI runtimes take only UTF-8 "
                               "text"));
    return accept(events::exec_started{x.exec_id, x.argv, x.working_directory, x.timeout,
                                       loggable(x.env), x.stdin_bytes, x.stdin_sha256,
                                       x.max_output_bytes, x.background, x.user});
  }

  decision operator()(const cmd::kill_exec& x) const {
    if (s.status != status::running && s.status != status::paused)
      return reject(conflict(s, "kill an exec"));
    if (!exec_in_flight(s, x.exec_id))
      return reject(events::make_error(errc::not_found, "exec \"" + x.exec_id +
                                                          "\" is not running in sandbox " +
                                                          s.sandbox_id + "; list its execs"));
    if (x.signal <= 0 || x.signal > 64)
      return reject(invalid(s, "signal " + std::to_string(x.signal) + " is not 1..64"));
    return accept(events::exec_kill_requested{x.exec_id, x.signal});
  }

  decision operator()(const cmd::exec_finished& x) const {
    if (!exec_in_flight(s, x.exec_id))
      return reject(events::make_error(errc::not_found, "exec \"" + x.exec_id +
                                                          "\" is not running in sandbox " +
                                                          s.sandbox_id + "; ignore the result"));
    return accept(x);
  }

  template <class Q>
  requires is_file_query<Q>::value decision operator()(const Q& x) const {
    if (x.served) // served while it was allowed: recorded whatever the status is now
      return accept(*x.served);
    if (s.status != status::running && s.status != status::paused)
      return reject(conflict(s, "read its files"));
    if (auto why = check_path(x.path); !why.empty())
      return reject(invalid(s, why));
    return accept_nothing();
  }

  template <class F>
  requires is_file_change<F>::value decision operator()(const F& x) const {
    if (x.finished) {
      if (!file_op_in_flight(s, x.finished->op_id))
        return reject(events::make_error(
          errc::not_found, "file operation \"" + x.finished->op_id + "\" of sandbox " +
                             s.sandbox_id + " is not in flight; ignore its outcome"));
      return accept(*x.finished);
    }
    const bool writable =
      s.status == status::running ||
      (s.status == status::paused && s.pause_mode == events::pause_mode::filesystem);
    if (!writable)
      return reject(conflict(s, "change its files",
                             s.status == status::paused
                               ? "its memory is frozen; resume it, or pause in filesystem mode"
                               : ""));
    const auto& op = x.op;
    if (op.kind != op_kind_of(kind_of(c.body)))
      return reject(invalid(s, "file operation kind " + events::to_string(op.kind) +
                                 " does not match the command"));
    if (op.op_id.empty() || file_op_in_flight(s, op.op_id))
      return reject(invalid(s, "file operation id \"" + op.op_id +
                                 "\" is empty or in flight; use a new unique id"));
    if (auto why = check_path(op.path); !why.empty())
      return reject(invalid(s, why));
    if (op.kind == events::file_op_kind::rename)
      if (auto why = check_path(op.to_path); !why.empty())
        return reject(invalid(s, why));
    return accept(op);
  }

  template <class Other>
  decision operator()(const Other&) const {
    return reject(invalid(s, "not an operation on processes or files"));
  }
};

} // namespace

decision decide_operation(const sandbox_state& s, const command& c, time_point now) {
  return std::visit(operation_decider{s, c, now}, c.body);
}

} // namespace sandboxd::actors::rules
