// pool_bench — how fast a warm pool hands out a sandbox (issue 31, docs/pools.md), against a
// sandboxd process of its own (crun and runsc where they run, the embedded file log and
// PostgreSQL, a unix socket) whose config file keeps a pool of each of `base` and `python`
// on each runtime. Figures, through the RPC API with the C++ client, in one run:
//   claim_to_first_output_{p50,p99}_ms_<runtime>[_<template>]
//                       create (served from the pool) through the API, then `exec echo hi`
//                       until its first output chunk reaches the client; the pool refills
//                       between iterations (a served create: fromPool);
//   cold_create_to_first_output_p50_ms_<runtime>   the same with noPool (the runtime's create
//                       and start in the path), the reference;
//   resume_p50_ms_<runtime>   a frozen (memory-paused) sandbox resumed by the driver alone,
//                       in-process, on a data directory of its own: the floor a frozen pool
//                       would add to every claim;
//   refill_per_s_<runtime>    sandboxes a pool of 24 (rate 100/s) made running per second,
//                       from empty to full (the node's create and start, its log and actors).
// And where the first exec's time goes (p50s, ms, call to first output of `echo hi`):
//   claim_first_exec_*   the first exec in a claimed sandbox (the refill the claim started
//                        runs beside it); claim_second_exec_* the same exec again at once;
//                        claim_settled_exec_* again once the pool is refilled and the node
//                        idle; cold_first_exec_*, cold_settled_exec_* the same for a cold one;
//   driver_first_exec_p50_ms_<runtime>, driver_second_exec_...  the driver alone (no node,
//                        log or refill): a started sandbox left to settle, its first exec and
//                        its second.
// The last line (--json) is one JSON object with these keys; the keys without the template
// (claim_to_first_output_p50_ms_crun, ...) are `base`'s, and the keys without a runtime
// (claim_to_first_output_p50_ms, resume_p50_ms, refill_per_s, ...) the worst runtime's.
// Usage: pool_bench [--json] [--driver-only] [--iterations N] [--runtimes crun,runsc]
//                   [--templates base,python]   (--driver-only: the driver-alone figures only)
#include "api/client.hpp"
#include "runtime/oci_driver.hpp"
#include "tests/support/guardian.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using steady = std::chrono::steady_clock;
using namespace sandboxd;
using namespace std::chrono_literals;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

double ms_between(steady::time_point a, steady::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return -1;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5)];
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string x; std::getline(in, x, ',');)
    if (!x.empty())
      out.push_back(x);
  return out;
}

// sandboxd with `config` on a private data directory until destroyed (SIGTERM); a guardian
// kills it and removes the directory if this process dies first.
class daemon_process {
public:
  daemon_process(const std::string& config, const std::string& runtimes) : dir_("pool-bench") {
    ::chmod(dir_.path().c_str(), 0711); // the embedded PostgreSQL's user traverses it
    data_ = dir_.path() + "/data";
    const std::string config_file = dir_.path() + "/sandboxd.toml";
    std::ofstream(config_file) << config;
    pid_ = ::fork();
    if (pid_ == 0) {
      const int log = ::open((dir_.path() + "/sandboxd.log").c_str(), O_WRONLY | O_CREAT, 0644);
      ::dup2(log, 1);
      ::dup2(log, 2);
      ::execl(SANDBOXD_BIN, SANDBOXD_BIN, "--data-dir", data_.c_str(), "--runtime",
              runtimes.c_str(), "--config", config_file.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    guardian_ = std::make_unique<test::guardian>(
      "kill -9 " + std::to_string(pid_) + " 2>/dev/null; rm -rf " + test::shell_quote(dir_.path()));
    const auto until = steady::now() + 15min; // a first run builds the python template
    while (read_text(dir_.path() + "/sandboxd.log").find("sandboxd ready") == std::string::npos) {
      if (steady::now() > until || ::waitpid(pid_, nullptr, WNOHANG) == pid_)
        throw std::runtime_error("sandboxd did not start:\n" +
                                 read_text(dir_.path() + "/sandboxd.log"));
      std::this_thread::sleep_for(50ms);
    }
    token_ = read_text(data_ + "/dev-token");
    while (!token_.empty() && token_.back() == '\n')
      token_.pop_back();
  }
  ~daemon_process() {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
    guardian_.reset();
  }

  std::string address() const { return "unix:" + data_ + "/sandboxd.sock"; }
  const std::string& token() const { return token_; }
  std::string log() const { return read_text(dir_.path() + "/sandboxd.log"); }

private:
  test::temp_dir dir_;
  std::string data_, token_;
  pid_t pid_ = -1;
  std::unique_ptr<test::guardian> guardian_;
};

template <class T>
T must(result<T> r, const char* what) {
  if (!r.ok())
    throw std::runtime_error(std::string(what) + ": " + r.err().message);
  return std::move(r).value();
}
void must(result<void> r, const char* what) {
  if (!r.ok())
    throw std::runtime_error(std::string(what) + ": " + r.err().message);
}

std::optional<api::pool_info> pool_of(api::client& c, const std::string& key_prefix) {
  for (auto& p : must(c.pools(), "pool list"))
    if (p.key.rfind(key_prefix, 0) == 0)
      return p;
  return std::nullopt;
}

// Waits until the pool whose key starts with `prefix` has `n` ready (false after `limit`).
bool wait_ready(api::client& c, const std::string& prefix, std::uint32_t n,
                std::chrono::seconds limit) {
  const auto until = steady::now() + limit;
  while (steady::now() < until) {
    auto p = pool_of(c, prefix);
    if (p && p->ready >= n)
      return true;
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

// `exec echo hi` in `id`: ms from the call to its first output chunk; nullopt when it failed.
std::optional<double> exec_to_first_output(api::client& c, const std::string& id) {
  std::optional<steady::time_point> first;
  api::exec_options e;
  e.argv = {"echo", "hi"};
  const auto t0 = steady::now();
  auto r = must(c.exec(id, e,
                       [&](api::output_stream, std::string_view) {
                         if (!first)
                           first = steady::now();
                       }),
                "exec echo hi");
  if (r.exit_code != 0 || !first)
    return std::nullopt;
  return ms_between(t0, *first);
}

// One create -> first output of `echo hi`, its parts, and later execs in the same sandbox, in
// ms: where the first exec's time goes (its own first-exec cost, or what runs beside it).
struct timed_create {
  double total = 0;        // create sent -> first output
  double create = 0;       // create sent -> answered
  double first_exec = 0;   // the first exec's call -> its first output
  double second_exec = 0;  // the same exec again at once (the refill still running, if any)
  double settled_exec = 0; // the same once the pool is refilled and the node idle
};

// create -> first output of `echo hi`; nullopt when the create was not what was asked for
// (served from the pool, or cold). `prefix`: the pool's key, to wait for its refill.
std::optional<timed_create> create_to_first_output(api::client& c, const std::string& tmpl,
                                                   const std::string& runtime, bool pooled,
                                                   const std::string& prefix);

// The driver alone: a memory-paused sandbox resumed, `n` times.
std::vector<double> resume_ms(runtime::oci_runtime kind, int n) {
  test::temp_dir dir("pool-bench-resume");
  runtime::oci_options oo;
  oo.runtime = kind;
  oo.data_dir = dir / "runtime";
  runtime::oci_driver d(oo);
  runtime::create_request r;
  r.id = "resume-1";
  if (!d.create(r) || !d.start(r.id))
    throw std::runtime_error("the driver could not make a sandbox to pause");
  std::vector<double> out;
  for (int i = 0; i < n; ++i) {
    if (!d.pause(r.id, runtime::pause_mode::memory))
      throw std::runtime_error("memory pause failed");
    const auto t0 = steady::now();
    if (!d.resume(r.id))
      throw std::runtime_error("resume failed");
    out.push_back(ms_between(t0, steady::now()));
  }
  d.remove(r.id);
  d.drain_removals();
  return out;
}

// The driver alone, `n` sandboxes: each created and started, left to settle (its agent
// connected, as a pool sandbox waits), then `echo hi` twice: ms from the call to the first
// output of its first exec and of its second. What a first exec costs beyond a later one in
// the driver and the agent, without the node, its log or a refill beside it.
std::pair<std::vector<double>, std::vector<double>> driver_first_exec_ms(runtime::oci_runtime kind,
                                                                         int n) {
  test::temp_dir dir("pool-bench-first-exec");
  runtime::oci_options oo;
  oo.runtime = kind;
  oo.data_dir = dir / "runtime";
  runtime::oci_driver d(oo);
  std::vector<double> first, second;
  for (int i = 0; i < n; ++i) {
    runtime::create_request r;
    r.id = "first-exec-" + std::to_string(i);
    if (!d.create(r) || !d.start(r.id))
      throw std::runtime_error("the driver could not make a sandbox to exec in");
    std::this_thread::sleep_for(300ms);
    for (auto* out : {&first, &second}) {
      runtime::exec_request e;
      e.argv = {"echo", "hi"};
      std::optional<steady::time_point> got;
      e.on_output = [&](runtime::output_stream, std::string_view) {
        if (!got)
          got = steady::now();
      };
      const auto t0 = steady::now();
      auto res = d.exec(r.id, e);
      if (!res || res->exit_code != 0 || !got)
        throw std::runtime_error("echo hi failed in the driver's sandbox");
      out->push_back(ms_between(t0, *got));
    }
    d.remove(r.id);
  }
  d.drain_removals();
  return {first, second};
}

// A pool of 24 at 100/s, from empty: sandboxes made running per second.
double refill_per_second(api::client& c, const std::string& runtime) {
  api::pool_options p;
  p.template_name = "base";
  p.runtime = runtime;
  p.limits.memory_mib = 256; // a key of its own, apart from the measured pools
  p.size = 24;
  p.maximum = 24;
  p.refill_per_second = 100;
  const auto t0 = steady::now();
  must(c.set_pool(p), "pool set");
  const std::string prefix = "base/" + runtime + "/m256/";
  if (!wait_ready(c, prefix, 24, 300s))
    throw std::runtime_error("the refill pool of " + runtime + " did not fill in 5 minutes");
  const double s = std::chrono::duration<double>(steady::now() - t0).count();
  must(c.remove_pool(p), "pool rm");
  return 24 / s;
}

std::optional<timed_create> create_to_first_output(api::client& c, const std::string& tmpl,
                                                   const std::string& runtime, bool pooled,
                                                   const std::string& prefix) {
  api::create_options o;
  o.template_name = tmpl;
  o.runtime = runtime;
  o.no_pool = !pooled;
  const auto t0 = steady::now();
  auto sb = must(c.create(o), "create");
  const auto created = steady::now();
  auto first = exec_to_first_output(c, sb.id);
  std::optional<timed_create> out;
  if (first && sb.from_pool == pooled) {
    out = timed_create{ms_between(t0, created) + *first, ms_between(t0, created), *first, 0, 0};
    out->second_exec = exec_to_first_output(c, sb.id).value_or(0);
    wait_ready(c, prefix, 2, 120s);
    std::this_thread::sleep_for(50ms);
    out->settled_exec = exec_to_first_output(c, sb.id).value_or(0);
  }
  must(c.remove(sb.id), "delete");
  return out;
}

// The figures through a daemon of its own (all but the driver-alone ones).
void daemon_figures(const std::string& config, const std::string& runtime_flag,
                    const std::vector<std::string>& runtimes,
                    const std::vector<std::string>& templates, int iterations, bool json,
                    std::map<std::string, double>& figures) {
  daemon_process d(config, runtime_flag);
  auto c = must(api::client::connect({d.address(), d.token()}), "connect");
  for (const auto& rt : runtimes) {
    for (const auto& t : templates) {
      const std::string prefix = t + "/" + rt + "/";
      // The stock python template's first build happens here (minutes, once per machine).
      if (!wait_ready(c, prefix, 2, 900s))
        throw std::runtime_error("pool " + prefix + " did not fill: " +
                                 pool_of(c, prefix).value_or(api::pool_info{}).last_error);
      std::vector<double> warm, warm_create, cold, first_exec, second_exec, settled_exec;
      std::vector<double> cold_first_exec, cold_settled_exec;
      create_to_first_output(c, t, rt, true, prefix); // warms the daemon's paths (not counted)
      for (int i = 0; i < iterations; ++i) {
        wait_ready(c, prefix, 2, 120s);
        std::this_thread::sleep_for(50ms); // the refill's own work out of the way
        if (auto ms = create_to_first_output(c, t, rt, true, prefix)) {
          warm.push_back(ms->total);
          warm_create.push_back(ms->create);
          first_exec.push_back(ms->first_exec);
          second_exec.push_back(ms->second_exec);
          settled_exec.push_back(ms->settled_exec);
        }
        if (i < std::max(5, iterations / 3))
          if (auto ms = create_to_first_output(c, t, rt, false, prefix)) {
            cold.push_back(ms->total);
            cold_first_exec.push_back(ms->first_exec);
            cold_settled_exec.push_back(ms->settled_exec);
          }
      }
      const std::string suffix = "_" + rt + "_" + t;
      figures["claim_to_first_output_p50_ms" + suffix] = percentile(warm, 0.5);
      figures["claim_to_first_output_p99_ms" + suffix] = percentile(warm, 0.99);
      figures["cold_create_to_first_output_p50_ms" + suffix] = percentile(cold, 0.5);
      figures["claim_create_p50_ms" + suffix] = percentile(warm_create, 0.5);
      figures["claim_first_exec_p50_ms" + suffix] = percentile(first_exec, 0.5);
      figures["claim_second_exec_p50_ms" + suffix] = percentile(second_exec, 0.5);
      figures["claim_settled_exec_p50_ms" + suffix] = percentile(settled_exec, 0.5);
      figures["cold_first_exec_p50_ms" + suffix] = percentile(cold_first_exec, 0.5);
      figures["cold_settled_exec_p50_ms" + suffix] = percentile(cold_settled_exec, 0.5);
      if (t == "base") {
        figures["claim_to_first_output_p50_ms_" + rt] = percentile(warm, 0.5);
        figures["claim_to_first_output_p99_ms_" + rt] = percentile(warm, 0.99);
        figures["cold_create_to_first_output_p50_ms_" + rt] = percentile(cold, 0.5);
      }
      if (!json)
        std::printf("%-6s %-7s claim->first output p50 %.1f ms p99 %.1f ms (%zu; the create "
                    "%.1f ms of it); cold p50 %.1f ms (%zu)\n",
                    rt.c_str(), t.c_str(), percentile(warm, 0.5), percentile(warm, 0.99),
                    warm.size(), percentile(warm_create, 0.5), percentile(cold, 0.5), cold.size());
      if (!json)
        std::printf("%-6s %-7s   exec->first output p50: first %.1f, again at once %.1f, "
                    "once refilled %.1f ms; cold: first %.1f, once settled %.1f ms\n",
                    rt.c_str(), t.c_str(), percentile(first_exec, 0.5),
                    percentile(second_exec, 0.5), percentile(settled_exec, 0.5),
                    percentile(cold_first_exec, 0.5), percentile(cold_settled_exec, 0.5));
    }
    figures["refill_per_s_" + rt] = refill_per_second(c, rt);
    if (!json)
      std::printf("%-6s refill %.1f sandboxes/s\n", rt.c_str(), figures["refill_per_s_" + rt]);
  }
}

} // namespace

int main(int argc, char** argv) {
  bool json = false, driver_only = false;
  int iterations = 30;
  std::vector<std::string> runtimes, templates{"base", "python"};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json")
      json = true;
    else if (a == "--driver-only")
      driver_only = true;
    else if (a == "--iterations" && i + 1 < argc)
      iterations = std::max(5, std::atoi(argv[++i]));
    else if (a == "--runtimes" && i + 1 < argc)
      runtimes = split(argv[++i]);
    else if (a == "--templates" && i + 1 < argc)
      templates = split(argv[++i]);
    else {
      std::fprintf(stderr, "usage: pool_bench [--json] [--driver-only] [--iterations N] "
                           "[--runtimes crun,runsc] [--templates base,python]\n");
      return 2;
    }
  }
  if (runtimes.empty())
    for (auto kind : {runtime::oci_runtime::crun, runtime::oci_runtime::runsc})
      if (!runtime::oci_unavailable(kind))
        runtimes.push_back(kind == runtime::oci_runtime::crun ? "crun" : "runsc");
  std::string config, runtime_flag;
  for (const auto& rt : runtimes) {
    runtime_flag += (runtime_flag.empty() ? "" : ",") + rt;
    for (const auto& t : templates)
      config += "[[pools]]\ntemplate = \"" + t + "\"\nruntime = \"" + rt +
                "\"\nsize = 2\nmaximum = 4\nrefill_per_second = 20\n\n";
  }
  std::map<std::string, double> figures;
  try {
    if (!driver_only)
      daemon_figures(config, runtime_flag, runtimes, templates, iterations, json, figures);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pool_bench: %s\n", e.what());
    return 1;
  }
  for (const auto& rt : runtimes) {
    auto r = resume_ms(rt == "crun" ? runtime::oci_runtime::crun : runtime::oci_runtime::runsc,
                       std::max(10, iterations / 2));
    figures["resume_p50_ms_" + rt] = percentile(r, 0.5);
    auto [first, second] =
      driver_first_exec_ms(rt == "crun" ? runtime::oci_runtime::crun : runtime::oci_runtime::runsc,
                           std::max(10, iterations / 2));
    figures["driver_first_exec_p50_ms_" + rt] = percentile(first, 0.5);
    figures["driver_second_exec_p50_ms_" + rt] = percentile(second, 0.5);
    if (!json)
      std::printf("%-6s driver alone, exec->first output p50: first exec %.1f ms, second %.1f ms\n",
                  rt.c_str(), percentile(first, 0.5), percentile(second, 0.5));
    if (!json)
      std::printf("%-6s driver resume of a frozen sandbox p50 %.1f ms\n", rt.c_str(),
                  percentile(r, 0.5));
  }
  // The worst runtime's figure under the plain key.
  for (const char* key : {"claim_to_first_output_p50_ms", "claim_to_first_output_p99_ms",
                          "cold_create_to_first_output_p50_ms", "resume_p50_ms", "refill_per_s"})
    for (const auto& rt : runtimes) {
      auto it = figures.find(std::string(key) + "_" + rt);
      if (it == figures.end())
        continue;
      const bool rate = std::string(key) == "refill_per_s";
      auto [at, fresh] = figures.emplace(key, it->second);
      if (!fresh)
        at->second = rate ? std::min(at->second, it->second) : std::max(at->second, it->second);
    }
  if (json) {
    std::string out = "{";
    for (const auto& [k, v] : figures) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.2f", v);
      out += (out.size() > 1 ? "," : "") + std::string("\"") + k + "\":" + buf;
    }
    std::printf("%s}\n", out.c_str());
  }
  return 0;
}
