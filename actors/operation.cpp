#include "actors/operation.hpp"

#include "base/sha256.hpp"

#include <chrono>

namespace sandboxd::actors {

std::shared_ptr<operation> exec_operation(runtime::exec_request request) {
  auto op = std::make_shared<operation>();
  op->is_exec = true;
  op->run = [exec_id = request.exec_id,
             request = std::move(request)](runtime::driver& d, const std::string& id) -> op_step {
    // Output is counted and hashed as it is handed on, never kept.
    sha256 out_hash, err_hash;
    std::uint64_t out_bytes = 0, err_bytes = 0;
    auto r = request;
    r.on_output = [&, sink = request.on_output](runtime::output_stream s, std::string_view data) {
      if (s == runtime::output_stream::out) {
        out_hash.add(data);
        out_bytes += data.size();
      } else {
        err_hash.add(data);
        err_bytes += data.size();
      }
      if (sink)
        sink(s, data);
    };
    const auto began = std::chrono::steady_clock::now();
    auto res = d.exec(id, r);
    events::exec_finished f;
    f.exec_id = exec_id;
    f.duration = std::chrono::steady_clock::now() - began;
    if (!res) {
      f.exit_code = -1;
      f.outcome = events::op_outcome::failed;
      f.failure = res.err();
      return {cmd::exec_finished{f}, std::nullopt};
    }
    f.exit_code = res->exit_code;
    f.signal = res->signal;
    f.timed_out = res->timed_out;
    f.oom_killed = res->oom_killed;
    f.output_truncated = res->output_truncated;
    f.stdout_bytes = out_bytes;
    f.stderr_bytes = err_bytes;
    f.stdout_sha256 = out_hash.finish();
    f.stderr_sha256 = err_hash.finish();
    return {cmd::exec_finished{f}, std::nullopt};
  };
  op->answer = [](std::optional<events::error>, std::uint64_t) {};
  return op;
}

} // namespace sandboxd::actors
