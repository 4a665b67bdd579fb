// control_plane_ops.cpp — the control plane's operations on processes and files: each becomes
// a command (the intent, or a read's admission) with an operation riding on it (operation.hpp)
// that does the driver call on the pool and records the outcome.
#include "actors/control_plane.hpp"

#include "actors/request.hpp"
#include "base/sha256.hpp"

#include <atomic>
#include <chrono>
#include <random>

namespace sandboxd::actors {
namespace {

std::string fresh_id(const char* prefix) {
  static std::atomic<std::uint64_t> counter{0};
  static const std::uint64_t salt =
    std::random_device{}() | (std::uint64_t{std::random_device{}()} << 32);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%s-%016llx", prefix,
                static_cast<unsigned long long>(salt ^ (++counter * 0x9e3779b97f4a7c15ull)));
  return buf;
}

std::shared_ptr<request> op_request(std::string sandbox_id, const caller& who, command_body body,
                                    std::shared_ptr<operation> op) {
  auto r = std::make_shared<request>();
  r->sandbox_id = std::move(sandbox_id);
  r->cmd.tenant = who.tenant;
  r->cmd.principal = who.principal.empty() ? "user" : who.principal;
  r->cmd.correlation_id = who.correlation_id;
  r->cmd.body = std::move(body);
  r->when = reply_when::durable;
  r->op = std::move(op);
  return r;
}

// What a driver call answered, kept for the caller until its outcome is durable.
template <class T>
struct answer_slot {
  std::optional<events::error> failure;
  T value{};
};

// A read: admitted by the state machine, served by `call`, recorded as file_read, answered.
template <class Cmd, class T, class Call, class Describe>
std::shared_ptr<operation> read_operation(std::string path, events::file_read_kind kind, Call call,
                                          Describe describe, op_done<T> done) {
  auto slot = std::make_shared<answer_slot<T>>();
  auto op = std::make_shared<operation>();
  op->run = [slot, path, kind, call, describe](runtime::driver& d,
                                               const std::string& id) -> op_step {
    auto r = call(d, id, path);
    events::file_read served;
    served.path = path;
    served.kind = kind;
    if (r) {
      slot->value = std::move(r.value());
      describe(slot->value, served);
    } else {
      slot->failure = r.err();
      served.failure = r.err();
    }
    return {Cmd{path, served}, std::nullopt};
  };
  op->answer = [slot, done](std::optional<events::error> failure, std::uint64_t seq) {
    op_result<T> r;
    r.failure = failure ? std::move(failure) : slot->failure;
    if (!r.failure)
      r.value = std::move(slot->value);
    r.own_sequence = seq;
    done(std::move(r));
  };
  return op;
}

// A change: its intent `op` logged, done by `call`, its outcome recorded, answered.
template <class Cmd, class Call>
std::shared_ptr<operation> change_operation(events::file_op_requested intent, Call call,
                                            op_done<events::file_op_finished> done) {
  auto op = std::make_shared<operation>();
  auto* self = op.get(); // `answer` is owned by the operation it reads
  op->run = [intent, call](runtime::driver& d, const std::string& id) -> op_step {
    auto r = call(d, id);
    events::file_op_finished f;
    f.op_id = intent.op_id;
    f.kind = intent.kind;
    if (r) {
      f.bytes = intent.bytes;
      f.sha256 = intent.sha256;
    } else {
      f.outcome = events::op_outcome::failed;
      f.failure = r.err();
    }
    return {Cmd{{}, f}, std::nullopt};
  };
  op->answer = [self, done](std::optional<events::error> failure, std::uint64_t seq) {
    op_result<events::file_op_finished> r;
    r.failure = std::move(failure);
    if (!r.failure && self->outcome) {
      r.value = *std::get<Cmd>(*self->outcome).finished;
      r.failure = r.value.failure;
    }
    r.own_sequence = seq;
    done(std::move(r));
  };
  return op;
}

events::file_op_requested intent_of(events::file_op_kind kind, std::string path) {
  events::file_op_requested i;
  i.op_id = fresh_id("op");
  i.kind = kind;
  i.path = std::move(path);
  return i;
}

// The command and the driver's request of an exec.
std::pair<cmd::exec, runtime::exec_request> exec_parts(exec_request r, output_sink sink) {
  cmd::exec c;
  c.exec_id = r.exec_id.empty() ? fresh_id("exec") : r.exec_id;
  c.argv = r.argv;
  c.working_directory = r.cwd;
  c.user = r.user;
  c.timeout = r.timeout;
  c.env = r.env; // decide logs secrets by name only
  if (r.stdin_data) {
    c.stdin_bytes = r.stdin_data->size();
    c.stdin_sha256 = sha256_of(*r.stdin_data);
  }
  c.max_output_bytes = r.max_output_bytes;
  runtime::exec_request d;
  d.exec_id = c.exec_id;
  d.argv = std::move(r.argv);
  for (auto& v : r.env)
    d.env.emplace_back(std::move(v.name), std::move(v.value));
  d.cwd = r.cwd.empty() ? "/" : std::move(r.cwd);
  d.user = std::move(r.user);
  d.stdin_data = std::move(r.stdin_data);
  d.stdin_source = std::move(r.stdin_source);
  d.timeout = r.timeout;
  d.max_output_bytes = r.max_output_bytes;
  d.on_output = std::move(sink);
  return {std::move(c), std::move(d)};
}

} // namespace

void control_plane::exec(std::string sandbox_id, caller who, exec_request r, output_sink sink,
                         op_done<events::exec_finished> done) {
  auto [c, d] = exec_parts(std::move(r), std::move(sink));
  auto op = exec_operation(std::move(d));
  op->answer = [self = op.get(), done](std::optional<events::error> failure, std::uint64_t seq) {
    op_result<events::exec_finished> res;
    res.failure = std::move(failure);
    if (!res.failure && self->outcome) {
      res.value = std::get<cmd::exec_finished>(*self->outcome);
      res.failure = res.value.failure;
    }
    res.own_sequence = seq;
    done(std::move(res));
  };
  send(op_request(std::move(sandbox_id), who, std::move(c), std::move(op)));
}

void control_plane::start_exec(std::string sandbox_id, caller who, exec_request r, output_sink sink,
                               op_done<std::string> done) {
  auto [c, d] = exec_parts(std::move(r), std::move(sink));
  c.background = true;
  auto op = exec_operation(std::move(d));
  auto answered = std::make_shared<std::atomic<bool>>(false);
  auto once = [answered, done, exec_id = c.exec_id](std::optional<events::error> failure,
                                                    std::uint64_t seq) {
    if (answered->exchange(true))
      return; // started already: the outcome is for wait_exec
    done(op_result<std::string>{std::move(failure), exec_id, seq});
  };
  op->started = once;
  op->answer = once;
  send(op_request(std::move(sandbox_id), who, std::move(c), std::move(op)));
}

void control_plane::list_execs(std::string sandbox_id, std::string tenant,
                               op_done<std::vector<events::exec_started>> done) {
  auto op = std::make_shared<operation>();
  op->inspect = [done](exec_table& t) {
    done(op_result<std::vector<events::exec_started>>{std::nullopt, t.in_flight(), 0});
  };
  op->answer = [done](std::optional<events::error> failure, std::uint64_t) {
    done({std::move(failure), {}, 0});
  };
  auto req = op_request(std::move(sandbox_id), caller{std::move(tenant), {}, {}}, {}, op);
  req->query = true;
  send(std::move(req));
}

void control_plane::wait_exec(std::string sandbox_id, std::string tenant, std::string exec_id,
                              op_done<events::exec_finished> done) {
  auto op = std::make_shared<operation>();
  op->inspect = [done, sandbox_id, exec_id](exec_table& t) { t.wait(sandbox_id, exec_id, done); };
  op->answer = [done](std::optional<events::error> failure, std::uint64_t) {
    done({std::move(failure), {}, 0});
  };
  auto req = op_request(std::move(sandbox_id), caller{std::move(tenant), {}, {}}, {}, op);
  req->query = true;
  send(std::move(req));
}

void control_plane::kill_exec(std::string sandbox_id, caller who, std::string exec_id, int signal,
                              op_done<events::exec_kill_requested> done) {
  auto op = std::make_shared<operation>();
  op->run = [exec_id, signal](runtime::driver& d, const std::string& id) -> op_step {
    auto r = d.signal_exec(id, exec_id, signal);
    return {std::nullopt, r ? std::nullopt : std::optional<events::error>(r.err())};
  };
  op->answer = [done, exec_id, signal](std::optional<events::error> failure, std::uint64_t seq) {
    done({std::move(failure), events::exec_kill_requested{exec_id, signal}, seq});
  };
  send(op_request(std::move(sandbox_id), who, cmd::kill_exec{exec_id, signal}, std::move(op)));
}

void control_plane::read_file(std::string sandbox_id, caller who, std::string path,
                              op_done<std::string> done) {
  auto op = read_operation<cmd::read_file, std::string>(
    path, events::file_read_kind::read,
    [](runtime::driver& d, const std::string& id, const std::string& p) {
      return d.read_file(id, p);
    },
    [](const std::string& content, events::file_read& served) {
      served.bytes = content.size();
      served.sha256 = sha256_of(content);
    },
    std::move(done));
  send(op_request(std::move(sandbox_id), who, cmd::read_file{path, std::nullopt}, std::move(op)));
}

void control_plane::read_file_with_digest(std::string sandbox_id, caller who, std::string path,
                                          op_done<file_content> done) {
  auto op = read_operation<cmd::read_file, file_content>(
    path, events::file_read_kind::read,
    [](runtime::driver& d, const std::string& id,
       const std::string& p) -> runtime::outcome<file_content> {
      auto r = d.read_file(id, p);
      if (!r)
        return r.err();
      return file_content{std::move(r).value(), {}};
    },
    [](file_content& content, events::file_read& served) {
      content.sha256 = sha256_of(content.bytes);
      served.bytes = content.bytes.size();
      served.sha256 = content.sha256;
    },
    std::move(done));
  send(op_request(std::move(sandbox_id), who, cmd::read_file{path, std::nullopt}, std::move(op)));
}

void control_plane::list_dir(std::string sandbox_id, caller who, std::string path,
                             op_done<runtime::dir_listing> done) {
  auto op = read_operation<cmd::list_dir, runtime::dir_listing>(
    path, events::file_read_kind::list,
    [](runtime::driver& d, const std::string& id, const std::string& p) {
      return d.list_dir(id, p);
    },
    [](const runtime::dir_listing& l, events::file_read& served) {
      served.entries = l.entries.size();
    },
    std::move(done));
  send(op_request(std::move(sandbox_id), who, cmd::list_dir{path, std::nullopt}, std::move(op)));
}

void control_plane::stat(std::string sandbox_id, caller who, std::string path,
                         op_done<runtime::file_info> done) {
  auto op = read_operation<cmd::stat_path, runtime::file_info>(
    path, events::file_read_kind::stat,
    [](runtime::driver& d, const std::string& id, const std::string& p) { return d.stat(id, p); },
    [](const runtime::file_info& i, events::file_read& served) { served.bytes = i.size; },
    std::move(done));
  send(op_request(std::move(sandbox_id), who, cmd::stat_path{path, std::nullopt}, std::move(op)));
}

void control_plane::write_file(std::string sandbox_id, caller who, std::string path,
                               std::string content, std::uint32_t mode,
                               op_done<events::file_op_finished> done) {
  auto intent = intent_of(events::file_op_kind::write, path);
  intent.mode = mode;
  intent.bytes = content.size();
  intent.sha256 = sha256_of(content);
  auto op = change_operation<cmd::write_file>(
    intent,
    [path, content = std::move(content), mode](runtime::driver& d, const std::string& id) {
      return d.write_file(id, path, content, mode);
    },
    std::move(done));
  send(
    op_request(std::move(sandbox_id), who, cmd::write_file{intent, std::nullopt}, std::move(op)));
}

void control_plane::make_dir(std::string sandbox_id, caller who, std::string path, bool parents,
                             std::uint32_t mode, op_done<events::file_op_finished> done) {
  auto intent = intent_of(events::file_op_kind::make_dir, path);
  intent.recursive = parents;
  intent.mode = mode;
  auto op = change_operation<cmd::make_dir>(
    intent,
    [path, parents, mode](runtime::driver& d, const std::string& id) {
      return d.make_dir(id, path, parents, mode);
    },
    std::move(done));
  send(op_request(std::move(sandbox_id), who, cmd::make_dir{intent, std::nullopt}, std::move(op)));
}

void control_plane::remove_path(std::string sandbox_id, caller who, std::string path,
                                bool recursive, op_done<events::file_op_finished> done) {
  auto intent = intent_of(events::file_op_kind::remove, path);
  intent.recursive = recursive;
  auto op = change_operation<cmd::remove_path>(
    intent,
    [path, recursive](runtime::driver& d, const std::string& id) {
      return d.remove_path(id, path, recursive);
    },
    std::move(done));
  send(
    op_request(std::move(sandbox_id), who, cmd::remove_path{intent, std::nullopt}, std::move(op)));
}

void control_plane::rename_path(std::string sandbox_id, caller who, std::string from,
                                std::string to, op_done<events::file_op_finished> done) {
  auto intent = intent_of(events::file_op_kind::rename, from);
  intent.to_path = to;
  auto op = change_operation<cmd::rename_path>(
    intent,
    [from, to](runtime::driver& d, const std::string& id) { return d.rename_path(id, from, to); },
    std::move(done));
  send(
    op_request(std::move(sandbox_id), who, cmd::rename_path{intent, std::nullopt}, std::move(op)));
}

void control_plane::snapshot(std::string sandbox_id, caller who, std::string snapshot_id,
                             std::string name, op_done<events::snapshot_taken> done) {
  // The op id names the snapshot, so that recovery can remove one a crash interrupted.
  const std::string op_id = "op-" + snapshot_id;
  auto op = std::make_shared<operation>();
  auto* self = op.get();
  op->run = [op_id, snapshot_id, name](runtime::driver& d, const std::string& id) -> op_step {
    auto r = d.snapshot(id, snapshot_id);
    events::snapshot_taken t;
    t.snapshot_id = snapshot_id;
    t.op_id = op_id;
    t.name = name;
    if (r) {
      t.writable_layer_bytes = r->layer_bytes;
      t.referenced_bytes = r->referenced_bytes;
      t.exclusive_bytes = r->exclusive_bytes;
    } else {
      t.outcome = events::op_outcome::failed;
      t.failure = r.err();
    }
    return {cmd::snapshot{{}, {}, {}, t}, std::nullopt};
  };
  op->answer = [self, done](std::optional<events::error> failure, std::uint64_t seq) {
    op_result<events::snapshot_taken> r;
    r.failure = std::move(failure);
    if (!r.failure && self->outcome) {
      r.value = *std::get<cmd::snapshot>(*self->outcome).finished;
      r.failure = r.value.failure;
    }
    r.own_sequence = seq;
    done(std::move(r));
  };
  send(op_request(std::move(sandbox_id), who,
                  cmd::snapshot{snapshot_id, op_id, std::move(name), std::nullopt}, std::move(op)));
}

void control_plane::delete_snapshot(std::string sandbox_id, caller who, std::string snapshot_id,
                                    op_done<events::snapshot_deleted> done) {
  auto op = std::make_shared<operation>();
  op->run = [snapshot_id](runtime::driver& d, const std::string&) -> op_step {
    auto r = d.remove_snapshot(snapshot_id);
    return {std::nullopt, r ? std::nullopt : std::optional<events::error>(r.err())};
  };
  op->answer = [done, snapshot_id](std::optional<events::error> failure, std::uint64_t seq) {
    done({std::move(failure), events::snapshot_deleted{snapshot_id}, seq});
  };
  send(op_request(std::move(sandbox_id), who, cmd::delete_snapshot{snapshot_id}, std::move(op)));
}

} // namespace sandboxd::actors
