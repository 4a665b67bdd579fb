// cpp_create_exec — the C++ side of bench/python_sdk_bench.py: over sandboxd's RPC API with
// the generated Cap'n Proto classes (schemas/api.capnp, EzRpcClient), N times: create a
// sandbox, run `echo hi` in it and note when its first output chunk reaches the client's
// OutputSink, then delete it. Prints one JSON line: each iteration's create, first-output and
// total milliseconds, so the Python benchmark compares the SDK with C++ on the same daemon in
// the same run.
// Usage: cpp_create_exec --addr unix:PATH --token-file FILE [--runtime crun] [--iterations N]
#include "schemas/api.capnp.h"

#include <capnp/ez-rpc.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

using steady = std::chrono::steady_clock;
namespace rpc = sandboxd::rpc;

double ms_between(steady::time_point a, steady::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Notes when the first chunk arrives.
class first_output final : public rpc::OutputSink::Server {
public:
  explicit first_output(std::optional<steady::time_point>& at) : at_(at) {}
  kj::Promise<void> write(WriteContext) override {
    if (!at_)
      at_ = steady::now();
    return kj::READY_NOW;
  }
  kj::Promise<void> done(DoneContext) override { return kj::READY_NOW; }

private:
  std::optional<steady::time_point>& at_;
};

std::string json_list(const std::vector<double>& v) {
  std::ostringstream s;
  s << "[";
  for (std::size_t i = 0; i < v.size(); ++i)
    s << (i ? "," : "") << v[i];
  s << "]";
  return s.str();
}

} // namespace

int main(int argc, char** argv) {
  std::string addr, token_file, runtime = "crun";
  int iterations = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--addr")
      addr = argv[i + 1];
    else if (a == "--token-file")
      token_file = argv[i + 1];
    else if (a == "--runtime")
      runtime = argv[i + 1];
    else if (a == "--iterations")
      iterations = std::stoi(argv[i + 1]);
  }
  if (addr.empty() || token_file.empty()) {
    std::fprintf(stderr, "usage: cpp_create_exec --addr unix:PATH --token-file FILE "
                         "[--runtime crun] [--iterations N]\n");
    return 2;
  }
  std::ifstream in(token_file);
  std::string token;
  std::getline(in, token);
  try {
    capnp::EzRpcClient client(addr);
    auto& ws = client.getWaitScope();
    auto auth = client.getMain<rpc::Gateway>().authenticateRequest();
    auth.setToken(token);
    auto session = auth.send().wait(ws).getSession();
    std::vector<double> create_ms, first_output_ms, total_ms;
    for (int i = 0; i < iterations; ++i) {
      const auto t0 = steady::now();
      auto create = session.createRequest();
      create.initRequest().setRuntime(runtime);
      auto created = create.send().wait(ws);
      const auto t1 = steady::now();
      auto sandbox = created.getSandbox();
      std::optional<steady::time_point> first;
      auto exec = sandbox.execRequest();
      auto argv_list = exec.initRequest().initArgv(2);
      argv_list.set(0, "echo");
      argv_list.set(1, "hi");
      exec.setOutput(kj::heap<first_output>(first));
      auto result = exec.send().wait(ws).getResult();
      const auto t2 = steady::now();
      if (!first || result.getExitCode() != 0) {
        std::fprintf(stderr, "cpp_create_exec: echo hi gave exit %d and %s output\n",
                     result.getExitCode(), first ? "some" : "no");
        return 1;
      }
      create_ms.push_back(ms_between(t0, t1));
      first_output_ms.push_back(ms_between(t0, *first));
      total_ms.push_back(ms_between(t0, t2));
      sandbox.deleteRequest().send().wait(ws);
    }
    std::printf("{\"create_ms\":%s,\"create_to_first_output_ms\":%s,\"create_to_result_ms\":%s}\n",
                json_list(create_ms).c_str(), json_list(first_output_ms).c_str(),
                json_list(total_ms).c_str());
  } catch (const kj::Exception& e) {
    std::fprintf(stderr, "cpp_create_exec: %s\n", e.getDescription().cStr());
    return 1;
  }
  return 0;
}
