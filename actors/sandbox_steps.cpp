// sandbox_steps.cpp — how a sandbox actor acts on the runtime: a lifecycle step once the event
// that asks for it is durable, execs, storage samples, all on the blocking pool (or, for a
// driver that never blocks, at once); their results come back as system commands.
#include "actors/sandbox_actor_state.hpp"

#include "actors/runtime_steps.hpp"

namespace sandboxd::actors {

namespace {

// A storage sample of sandbox `id` (a runtime_failed marker when it could not be taken).
runtime_result take_sample(runtime::driver& d, const std::string& id) {
  auto u = d.usage(id);
  if (!u)
    return {std::nullopt, cmd::runtime_failed{}}; // marker: dropped by on_result
  return {std::nullopt, cmd::storage_sampled{u->writable_bytes}};
}

} // namespace

void start_step(sandbox_actor_state& st) {
  auto step = step_in_flight(st.s);
  if (!step || st.call_in_flight || st.issued_for == st.entered)
    return;
  st.issued_for = st.entered;
  st.call_in_flight = step;
  auto* d = driver_of(st);
  if (!d) {
    runtime_result r{step, cmd::runtime_failed{"runtime " + events::to_string(st.s.spec.runtime) +
                                               " is not on this node"}};
    on_result(st, r);
    return;
  }
  if (st.ctx->driver_never_blocks) {
    // The step's result is handled as if it had come back from the pool at once.
    runtime_result r{step, run_step(*d, st.s, *step, st.secrets)};
    on_result(st, r);
    return;
  }
  st.ctx->pool->post([d, mail = st.mail, snapshot = st.s, step = *step, secrets = st.secrets] {
    mail->result({step, run_step(*d, snapshot, step, secrets)});
  });
}

runtime::driver* driver_of(const sandbox_actor_state& st) {
  return st.ctx->driver_for(st.s.spec.runtime);
}

void launch_op(sandbox_actor_state& st, const std::shared_ptr<request>& req) {
  auto op = req->op;
  if (op->started)
    op->started(std::nullopt, req->own_sequence);
  ++(op->is_exec ? st.execs_running : st.ops_running);
  op->correlation_id = req->cmd.correlation_id;
  op->causation_id = req->own_sequence > 0 ? st.id + ":" + std::to_string(req->own_sequence) : "";
  auto* pool = op->is_exec && st.ctx->exec_pool ? st.ctx->exec_pool : st.ctx->pool;
  pool->post([d = driver_of(st), mail = st.mail, id = st.id, op] {
    runtime_result r;
    r.op = op;
    if (!d) {
      r.op_failure = events::make_error(events::errc::unavailable,
                                        "sandbox " + id + ": its runtime is not on this node");
    } else {
      auto step = op->run(*d, id);
      r.op_record = std::move(step.record);
      r.op_failure = std::move(step.failure);
    }
    mail->result(std::move(r));
  });
}

void start_exec(sandbox_actor_state& st, const events::exec_started& e) {
  auto req = std::make_shared<request>();
  runtime::exec_request r;
  r.exec_id = e.exec_id;
  r.argv = e.argv;
  for (const auto& v : e.env)
    r.env.emplace_back(v.name, v.value);
  r.cwd = e.working_directory.empty() ? "/" : e.working_directory;
  r.user = e.user;
  r.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(e.timeout);
  r.max_output_bytes = e.max_output_bytes;
  req->op = exec_operation(std::move(r));
  req->cmd.correlation_id = "";
  launch_op(st, req);
}

void start_sample(sandbox_actor_state& st) {
  if (st.sampling)
    return;
  st.sampling = true;
  auto* d = driver_of(st);
  if (!d)
    return;
  if (st.ctx->driver_never_blocks) {
    auto r = take_sample(*d, st.id);
    on_result(st, r);
    return;
  }
  st.ctx->pool->post([d, mail = st.mail, id = st.id] { mail->result(take_sample(*d, id)); });
}

void on_result(sandbox_actor_state& st, runtime_result& r) {
  if (r.op) {
    --(r.op->is_exec ? st.execs_running : st.ops_running);
    if (r.op_record) {
      r.op->outcome = *r.op_record;
      auto req = system_request(st.s, std::move(*r.op_record));
      req->cmd.correlation_id = r.op->correlation_id;
      req->cmd.causation_id = r.op->causation_id;
      req->op = std::move(r.op);
      req->outcome = true;
      st.queue.push_front(std::move(req));
    } else {
      r.op->answer(std::move(r.op_failure), 0);
    }
  } else if (r.step) {
    st.call_in_flight.reset();
    if (step_in_flight(st.s) != r.step) {
      return; // stale: the sandbox moved on (e.g. a delete overtook a pause)
    }
    if (auto* p = std::get_if<cmd::runtime_paused>(&r.body))
      st.queue.push_front(system_request(st.s, cmd::storage_sampled{p->writable_layer_bytes}));
    auto req = system_request(st.s, std::move(r.body));
    req->step = r.step;
    req->entered = st.entered;
    st.queue.push_front(std::move(req));
  } else {
    st.sampling = false;
    st.sample_due = st.ctx->clock() + st.ctx->sample_interval;
    if (std::holds_alternative<cmd::storage_sampled>(r.body))
      st.queue.push_front(system_request(st.s, std::move(r.body)));
  }
  pump(st);
}
} // namespace sandboxd::actors
