// process_table — the processes started through the endpoint's envd Start, by sandbox and
// pid: their Exec capability (so that SendInput, CloseStdin, SendSignal and Connect reach
// them without asking the daemon, and a process's streamed stdin stays open while it runs,
// as envd keeps it), the Connect streams their output goes to, and their end.
//
// A process's pid is derived from its sandboxd exec id (pid_of), so a process the endpoint
// did not start (another client's exec, or one from before a restart) is found by listing
// the sandbox's execs; only its output is then out of reach. An entry lives from the start
// until the exec's result arrives. On the endpoint's event-loop thread only.
#pragma once

#include "e2b/http_exchange.hpp"
#include "e2b/process_messages.hpp"
#include "schemas/api.capnp.h"

#include <kj/async.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace sandboxd::e2b {

// A pid for the exec `exec_id`: 1 to 2^31-1, the same for the same id.
std::uint32_t pid_of(std::string_view exec_id);

struct exec_end {
  int exit_code = 0;
  int signal = 0;
  bool timed_out = false;
  bool interrupted = false; // the daemon restarted while it ran
};

struct process_entry {
  std::string sandbox_key; // tenant/sandbox id
  std::string exec_id;
  std::uint32_t pid = 0;
  process_config config;
  bool stdin = false;
  rpc::Exec::Client exec = nullptr;
  std::vector<connect_stream*> streams; // where its output goes now
  kj::ForkedPromise<exec_end> ended = nullptr;
};

class process_table {
public:
  process_table();
  ~process_table();

  // A process about to start in `sandbox_key`, with the sink its output goes to (pass it to
  // Sandbox.start). `first` (the Start call's stream) receives its output from the start.
  std::shared_ptr<process_entry> prepare(std::string sandbox_key, process_config config, bool stdin,
                                         connect_stream& first);
  rpc::OutputSink::Client sink_of(const std::shared_ptr<process_entry>& e);
  // It started: `exec` is its handle. Its end is awaited from now on; it is found by pid.
  void started(const std::shared_ptr<process_entry>& e, rpc::Exec::Client exec,
               std::string exec_id);

  std::shared_ptr<process_entry> find(const std::string& sandbox_key, std::uint32_t pid);

  // Sends the process's output to `s` until detach (or the end).
  static void attach(process_entry& e, connect_stream& s);
  static void detach(process_entry& e, connect_stream& s);

  std::size_t size() const { return by_pid_.size(); }

private:
  std::map<std::string, std::shared_ptr<process_entry>> by_pid_; // sandbox_key \0 pid
  struct error_handler final : kj::TaskSet::ErrorHandler {
    void taskFailed(kj::Exception&&) override {}
  } ignore_;
  kj::TaskSet tasks_{ignore_};
};

} // namespace sandboxd::e2b
