// runtime_bench — what a sandbox costs on crun and runsc, next to the runtime's own CLI.
//
// For each runtime that can run here:
//   cycle      create, start, exec `echo hi`, delete through oci_driver (p50, p99)
//   raw_cycle  the runtime's CLI doing the same four steps on an equivalent bundle
//              (overlay already mounted), interleaved with the driver's cycles
//   vs_raw     cycle p50 / raw_cycle p50
//   reclaim    (a step line) the background deletion of a removed sandbox's files,
//              waited for after each cycle, outside it
//   fs_pause, resume   filesystem pause and resume with 10 MiB in the writable layer
//   concurrent_running how many idle sandboxes ran at once (all checked with an exec)
//
//   runtime_bench [--json] [--iterations N] [--concurrent N] [--drivers crun,runsc]
// With --json the last line is one JSON object with every figure.
#include "runtime/child_process.hpp"
#include "runtime/oci_driver.hpp"
#include "runtime/oci_spec.hpp"
#include "runtime/overlay_mount.hpp"
#include "runtime/template_store.hpp"
#include "tests/support/temp_dir.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using namespace sandboxd::runtime;
namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

namespace {

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

// Per-step times of the cycles, by "<driver|raw>_<step>".
std::map<std::string, std::vector<double>> g_steps;

// Times the rest of a cycle step by step.
struct stopwatch {
  std::string prefix;
  clock_type::time_point t = clock_type::now();
  void lap(const std::string& step) {
    g_steps[prefix + "_" + step].push_back(ms_since(t));
    t = clock_type::now();
  }
};

double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

double round2(double v) {
  return std::round(v * 100) / 100;
}

void must(bool ok, const std::string& what) {
  if (!ok)
    throw std::runtime_error(what);
}

template <class T>
void must(const outcome<T>& o, const std::string& what) {
  if (!o.ok())
    throw std::runtime_error(what + ": " + o.err().message);
}

// One raw cycle with the runtime's CLI, through the same process runner the driver uses.
double raw_cycle(oci_driver& d, const std::string& bundle, const std::string& id) {
  auto run = [&](std::vector<std::string> args) {
    process_options o;
    o.argv = d.runtime_command();
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    o.hide_cgroup2 = d.hides_cgroup2();
    auto r = run_process(o);
    must(r.exit_code == 0, "raw " + args[0] + " failed: " + r.err);
    return r.out;
  };
  auto t0 = clock_type::now();
  stopwatch w{"raw"};
  run({"create", "--bundle", bundle, id});
  w.lap("create");
  run({"start", id});
  w.lap("start");
  must(run({"exec", id, "echo", "hi"}) == "hi\n", "raw exec output");
  w.lap("exec");
  run({"delete", "--force", id});
  w.lap("delete");
  return ms_since(t0);
}

double driver_cycle(oci_driver& d, const std::string& id) {
  auto t0 = clock_type::now();
  stopwatch w{"driver"};
  create_request req;
  req.id = id;
  must(d.create(req), "create");
  w.lap("create");
  must(d.start(id), "start");
  w.lap("start");
  exec_request e;
  e.argv = {"echo", "hi"};
  auto r = d.exec(id, e);
  must(r, "exec");
  must(r->stdout_data == "hi\n", "exec output");
  w.lap("exec");
  must(d.remove(id), "remove");
  w.lap("delete");
  double cycle = ms_since(t0);
  // remove() leaves the deletion of the sandbox's files to a background thread; it is
  // waited for here, outside the cycle, so that it runs under no timed step (neither
  // the raw cycle nor the next create) and is shown on its own.
  d.drain_removals();
  w.lap("reclaim");
  return cycle;
}

void bench_runtime(oci_runtime kind, int iterations, int concurrent, nlohmann::json& out) {
  std::string name = kind == oci_runtime::crun ? "crun" : "runsc";
  if (auto why = oci_unavailable(kind)) {
    std::cout << name << ": skipped: " << *why << "\n";
    out[name + "_skipped"] = *why;
    return;
  }
  sandboxd::test::temp_dir dir("bench-runtime");
  std::string data = dir.path() + "/data";
  oci_driver d({kind, data, ""});
  // Removes whatever a failed step left, before the directory goes.
  struct remove_all_sandboxes {
    oci_driver& d;
    ~remove_all_sandboxes() {
      if (auto all = d.list())
        for (auto& s : all.value())
          d.remove(s.id);
    }
  } cleanup{d};
  template_store templates(data);
  auto base = templates.rootfs("base");
  must(base, "template base");

  // The raw bundle: its own writable layer and cgroup, the same config as a sandbox.
  std::string raw = dir.path() + "/raw";
  overlay_dirs ov{base.value(), raw + "/upper", raw + "/work", raw + "/merged"};
  for (auto& p : {ov.upper, ov.work, ov.target, raw + "/bundle"})
    fs::create_directories(p);
  std::ofstream(raw + "/bundle/config.json")
    << make_config_json({ov.target, "/sandboxd/bench-raw-" + name, limits{}});

  g_steps.clear();
  std::vector<double> cycles, raws;
  {
    scoped_overlay mounted(ov);
    driver_cycle(d, "warm"); // the first cycle builds nothing, but warms caches
    raw_cycle(d, raw + "/bundle", "raw-warm");
    for (int i = 0; i < iterations; ++i) {
      cycles.push_back(driver_cycle(d, "c" + std::to_string(i)));
      raws.push_back(raw_cycle(d, raw + "/bundle", "raw" + std::to_string(i)));
    }
  }
  for (const char* ctrl :
       {"memory", "pids", "cpu", "cpuacct", "cpuset", "blkio", "devices", "freezer", "systemd"})
    ::rmdir((std::string("/sys/fs/cgroup/") + ctrl + "/sandboxd/bench-raw-" + name).c_str());

  // Filesystem pause and resume with 10 MiB in the writable layer.
  std::vector<double> pauses, resumes;
  {
    create_request req;
    req.id = "pause";
    must(d.create(req), "create pause");
    must(d.start("pause"), "start pause");
    must(d.write_file("pause", "/workspace/ten.bin", std::string(10 << 20, 'x'), 0644),
         "write 10 MiB");
    for (int i = 0; i < std::max(5, iterations / 2); ++i) {
      auto t0 = clock_type::now();
      must(d.pause("pause", pause_mode::filesystem), "pause");
      pauses.push_back(ms_since(t0));
      t0 = clock_type::now();
      must(d.resume("pause"), "resume");
      resumes.push_back(ms_since(t0));
    }
    must(d.usage("pause")->writable_bytes >= (10u << 20), "layer keeps 10 MiB");
    must(d.remove("pause"), "remove pause");
  }

  // Idle sandboxes running at once: all started, then each proven alive by an exec.
  int running = 0;
  std::vector<std::string> ids;
  std::string stop_reason;
  for (int i = 0; i < concurrent && stop_reason.empty(); ++i) {
    std::string id = "idle" + std::to_string(i);
    create_request req;
    req.id = id;
    req.limits.memory_bytes = 256ull << 20;
    auto c = d.create(req);
    if (!c.ok()) {
      stop_reason = "create " + id + ": " + c.err().message;
      break;
    }
    ids.push_back(id);
    if (auto s = d.start(id); !s.ok())
      stop_reason = "start " + id + ": " + s.err().message;
  }
  for (auto& id : ids) {
    exec_request e;
    e.argv = {"true"};
    auto r = d.exec(id, e);
    if (r.ok() && r->exit_code == 0)
      ++running;
    else if (stop_reason.empty())
      stop_reason = "exec in " + id + ": " + (r.ok() ? r->stderr_data : r.err().message);
  }
  if (!stop_reason.empty()) {
    std::cout << name << ": concurrency stopped: " << stop_reason.substr(0, 500) << "\n";
    out[name + "_concurrent_stop_reason"] = stop_reason.substr(0, 500);
  }
  for (auto& id : ids)
    d.remove(id);

  double p50 = percentile(cycles, 0.5), raw50 = percentile(raws, 0.5);
  out[name + "_cycle_p50_ms"] = round2(p50);
  out[name + "_cycle_p99_ms"] = round2(percentile(cycles, 0.99));
  out[name + "_raw_cycle_p50_ms"] = round2(raw50);
  out[name + "_raw_cycle_p99_ms"] = round2(percentile(raws, 0.99));
  out[name + "_vs_raw"] = round2(p50 / raw50);
  out[name + "_fs_pause_p50_ms"] = round2(percentile(pauses, 0.5));
  out[name + "_resume_p50_ms"] = round2(percentile(resumes, 0.5));
  out[name + "_concurrent_running"] = running;
  for (auto& [step, v] : g_steps) {
    out[name + "_" + step + "_p50_ms"] = round2(percentile(v, 0.5));
    std::printf("%s %s p50 %.1f ms\n", name.c_str(), step.c_str(), percentile(v, 0.5));
  }
  std::printf("%s: cycle p50 %.1f ms p99 %.1f ms; raw CLI p50 %.1f ms (x%.2f); "
              "fs pause p50 %.1f ms, resume p50 %.1f ms (10 MiB layer); %d idle running at once\n",
              name.c_str(), p50, percentile(cycles, 0.99), raw50, p50 / raw50,
              percentile(pauses, 0.5), percentile(resumes, 0.5), running);
}

} // namespace

int main(int argc, char** argv) {
  bool json = false;
  int iterations = 40, concurrent = 50;
  std::string drivers = "crun,runsc";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json")
      json = true;
    else if (a == "--iterations" && i + 1 < argc)
      iterations = std::stoi(argv[++i]);
    else if (a == "--concurrent" && i + 1 < argc)
      concurrent = std::stoi(argv[++i]);
    else if (a == "--drivers" && i + 1 < argc)
      drivers = argv[++i];
    else {
      std::cerr << "usage: runtime_bench [--json] [--iterations N] [--concurrent N] "
                   "[--drivers crun,runsc]\n";
      return 2;
    }
  }
  nlohmann::json out = nlohmann::json::object();
  out["iterations"] = iterations;
  try {
    for (auto kind : {oci_runtime::crun, oci_runtime::runsc}) {
      std::string n = kind == oci_runtime::crun ? "crun" : "runsc";
      if (drivers.find(n) != std::string::npos)
        bench_runtime(kind, iterations, concurrent, out);
    }
  } catch (const std::exception& e) {
    std::cerr << "runtime_bench: " << e.what() << "\n";
    return 1;
  }
  if (json)
    std::cout << out.dump() << std::endl;
  return 0;
}
