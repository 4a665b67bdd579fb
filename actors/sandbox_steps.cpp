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
  if (st.ctx->driver_never_blocks) {
    // The step's result is handled as if it had come back from the pool at once.
    runtime_result r{step, run_step(*st.ctx->driver, st.s, *step)};
    on_result(st, r);
    return;
  }
  st.ctx->pool->post([ctx = st.ctx, mail = st.mail, snapshot = st.s, step = *step] {
    mail->result({step, run_step(*ctx->driver, snapshot, step)});
  });
}

void start_exec(sandbox_actor_state& st, const events::exec_started& e) {
  ++st.execs_running;
  st.ctx->pool->post([ctx = st.ctx, mail = st.mail, id = st.id, e] {
    runtime::exec_request r;
    r.argv = e.argv;
    if (!e.working_directory.empty())
      r.cwd = e.working_directory;
    if (e.timeout.count() > 0)
      r.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(e.timeout);
    const auto began = std::chrono::steady_clock::now();
    auto res = ctx->driver->exec(id, r);
    cmd::exec_finished f;
    f.exec_id = e.exec_id;
    f.duration = std::chrono::steady_clock::now() - began;
    if (res) {
      f.exit_code = res->exit_code;
      f.signal = res->signal;
      f.timed_out = res->timed_out;
      f.stdout_bytes = res->stdout_data.size();
      f.stderr_bytes = res->stderr_data.size();
    } else {
      f.exit_code = -1;
    }
    mail->result({std::nullopt, f});
  });
}

void start_sample(sandbox_actor_state& st) {
  if (st.sampling)
    return;
  st.sampling = true;
  if (st.ctx->driver_never_blocks) {
    auto r = take_sample(*st.ctx->driver, st.id);
    on_result(st, r);
    return;
  }
  st.ctx->pool->post(
    [ctx = st.ctx, mail = st.mail, id = st.id] { mail->result(take_sample(*ctx->driver, id)); });
}

void on_result(sandbox_actor_state& st, runtime_result& r) {
  if (r.step) {
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
  } else if (std::holds_alternative<cmd::exec_finished>(r.body)) {
    --st.execs_running;
    st.queue.push_front(system_request(st.s, std::move(r.body)));
  } else {
    st.sampling = false;
    st.sample_due = st.ctx->clock() + st.ctx->sample_interval;
    if (std::holds_alternative<cmd::storage_sampled>(r.body))
      st.queue.push_front(system_request(st.s, std::move(r.body)));
  }
  pump(st);
}
} // namespace sandboxd::actors
