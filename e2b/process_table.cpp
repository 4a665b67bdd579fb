#include "e2b/process_table.hpp"

#include <algorithm>

namespace sandboxd::e2b {

namespace {

std::string key_of(const std::string& sandbox_key, std::uint32_t pid) {
  std::string k = sandbox_key;
  k.push_back('\0');
  k += std::to_string(pid);
  return k;
}

// The daemon's output for one process, handed to the streams attached to it. A write resolves
// once every attached stream has written it (or at once with none): the daemon's flow control
// then holds the process back to the pace of its slowest reader, never the endpoint's memory.
class output_sink final : public rpc::OutputSink::Server {
public:
  explicit output_sink(std::weak_ptr<process_entry> e) : entry_(std::move(e)) {}

  kj::Promise<void> write(WriteContext context) override {
    auto e = entry_.lock();
    if (!e || e->streams.empty())
      return kj::READY_NOW;
    auto p = context.getParams();
    auto data = p.getData();
    auto message =
      data_event(p.getStream() == rpc::OutputStream::STDERR,
                 std::string_view(reinterpret_cast<const char*>(data.begin()), data.size()));
    if (e->streams.size() == 1)
      return e->streams.front()->send(kj::mv(message));
    auto writes = kj::heapArrayBuilder<kj::Promise<void>>(e->streams.size());
    for (auto* s : e->streams)
      writes.add(s->send(message));
    return kj::joinPromises(writes.finish());
  }
  kj::Promise<void> done(DoneContext) override { return kj::READY_NOW; }

private:
  std::weak_ptr<process_entry> entry_;
};

} // namespace

std::uint32_t pid_of(std::string_view exec_id) {
  std::uint32_t h = 2166136261u; // FNV-1a
  for (unsigned char c : exec_id) {
    h ^= c;
    h *= 16777619u;
  }
  return 1 + h % 2147483646u;
}

process_table::process_table() = default;
process_table::~process_table() = default;

std::shared_ptr<process_entry> process_table::prepare(std::string sandbox_key,
                                                      process_config config, bool stdin,
                                                      connect_stream& first) {
  auto e = std::make_shared<process_entry>();
  e->sandbox_key = std::move(sandbox_key);
  e->config = std::move(config);
  e->stdin = stdin;
  e->streams.push_back(&first);
  return e;
}

rpc::OutputSink::Client process_table::sink_of(const std::shared_ptr<process_entry>& e) {
  return kj::heap<output_sink>(e);
}

void process_table::started(const std::shared_ptr<process_entry>& e, rpc::Exec::Client exec,
                            std::string exec_id) {
  e->exec = exec;
  e->exec_id = std::move(exec_id);
  e->pid = pid_of(e->exec_id);
  e->ended =
    exec.waitRequest()
      .send()
      .then([](capnp::Response<rpc::Exec::WaitResults> r) {
        auto x = r.getResult();
        return exec_end{x.getExitCode(), x.getSignal(), x.getTimedOut(), x.getInterrupted()};
      })
      .fork();
  const auto key = key_of(e->sandbox_key, e->pid);
  by_pid_[key] = e;
  std::weak_ptr<process_entry> weak = e;
  tasks_.add(
    e->ended.addBranch().ignoreResult().catch_([](kj::Exception&&) {}).then([this, key, weak] {
      auto it = by_pid_.find(key);
      if (it != by_pid_.end() && it->second == weak.lock())
        by_pid_.erase(it);
    }));
}

std::shared_ptr<process_entry> process_table::find(const std::string& sandbox_key,
                                                   std::uint32_t pid) {
  auto it = by_pid_.find(key_of(sandbox_key, pid));
  return it == by_pid_.end() ? nullptr : it->second;
}

void process_table::attach(process_entry& e, connect_stream& s) {
  if (std::find(e.streams.begin(), e.streams.end(), &s) == e.streams.end())
    e.streams.push_back(&s);
}

void process_table::detach(process_entry& e, connect_stream& s) {
  e.streams.erase(std::remove(e.streams.begin(), e.streams.end(), &s), e.streams.end());
}

} // namespace sandboxd::e2b
