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
//   exec       `true` through the driver on one running sandbox (<runtime>_exec_p50_ms,
//              through its agent), interleaved with its floor host_exec_p50_ms: fork and
//              exec of /bin/true on the host through the same process runner, and with
//              <runtime>_spawn_floor_p50_ms: vfork, exec and wait of `true` by a program
//              inside the sandbox (spawn_probe.c), what the sandbox's kernel alone costs
//   hardening  what each layer of the boundary costs (docs/performance.md): the raw
//              runtime's create and exec on bundles without and with the user namespace
//              (an idmapped template) and the seccomp filter; exec with and without the
//              exec guard; a layer in the btrfs pool (subvolume and qgroup limit) against
//              two plain directories, and its usage() against a walk of the layer
//
//   runtime_bench [--json] [--iterations N] [--concurrent N] [--drivers crun,runsc] [--exec-only]
// --exec-only measures only the exec figures (and their floor).
// With --json the last line is one JSON object with every figure.
#include "runtime/child_process.hpp"
#include "runtime/exec_guard.hpp"
#include "runtime/id_map.hpp"
#include "runtime/layer_pool.hpp"
#include "runtime/oci_driver.hpp"
#include "runtime/oci_spec.hpp"
#include "runtime/overlay_mount.hpp"
#include "runtime/template_store.hpp"
#include "runtime/tree_walk.hpp"
#include "tests/support/temp_dir.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
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

// One raw cycle with the runtime's CLI, through the same process runner the driver uses;
// its steps are recorded as "<prefix>_<step>", the exec runs `exec_argv`.
double raw_cycle(oci_driver& d, const std::string& bundle, const std::string& id,
                 const std::string& prefix = "raw",
                 std::vector<std::string> exec_argv = {"echo", "hi"}) {
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
  stopwatch w{prefix};
  run({"create", "--bundle", bundle, id});
  w.lap("create");
  run({"start", id});
  w.lap("start");
  std::vector<std::string> exec = {"exec", id};
  exec.insert(exec.end(), exec_argv.begin(), exec_argv.end());
  std::string said = run(exec);
  must(said == "hi\n", prefix + " exec said: " + said);
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
  must(r->stdout_data == "hi\n", "exec output: " + r->stdout_data + r->stderr_data);
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

// exec `true` on one running sandbox, interleaved with fork+exec of /bin/true on the host and,
// every tenth exec, ten spawns of `true` inside the sandbox by spawn_probe (vfork, execvp,
// waitpid): what the sandbox's kernel alone costs an exec there.
void bench_exec(oci_driver& d, const std::string& name, int iterations, nlohmann::json& out) {
  std::vector<double> execs, host_execs, inside;
  {
    create_request req;
    req.id = "exec";
    must(d.create(req), "create exec");
    must(d.start("exec"), "start exec");
    std::ifstream probe_file(SPAWN_PROBE_BIN, std::ios::binary);
    std::stringstream probe;
    probe << probe_file.rdbuf();
    must(d.write_file("exec", "/tmp/spawn_probe", probe.str(), 0755), "copy spawn_probe");
    exec_request e;
    e.argv = {"true"};
    exec_request floor;
    floor.argv = {"/tmp/spawn_probe", "10", "true"};
    process_options host;
    host.argv = {"/bin/true"};
    for (int i = 0; i < 10; ++i) // warm
      must(d.exec("exec", e), "exec true");
    for (int i = 0; i < std::max(50, iterations * 5); ++i) {
      auto t0 = clock_type::now();
      auto r = d.exec("exec", e);
      execs.push_back(ms_since(t0));
      must(r, "exec true");
      must(r->exit_code == 0, "exec true exit code " + std::to_string(r->exit_code));
      t0 = clock_type::now();
      auto h = run_process(host);
      host_execs.push_back(ms_since(t0));
      must(h.exit_code == 0, "/bin/true on the host");
      if (i % 10 == 0) {
        auto f = d.exec("exec", floor);
        must(f, "spawn_probe");
        must(f->exit_code == 0, "spawn_probe: " + f->stderr_data);
        std::istringstream lines(f->stdout_data);
        for (double ms; lines >> ms;)
          inside.push_back(ms);
      }
    }
    must(d.remove("exec"), "remove exec");
  }
  out[name + "_exec_p50_ms"] = round2(percentile(execs, 0.5));
  out[name + "_exec_p99_ms"] = round2(percentile(execs, 0.99));
  out["host_exec_p50_ms"] = round2(percentile(host_execs, 0.5));
  out[name + "_spawn_floor_p50_ms"] = round2(percentile(inside, 0.5));
  std::printf("%s exec `true` through the driver: p50 %.2f ms p99 %.2f ms; floor host_exec_p50_ms "
              "%.2f ms (fork+exec of /bin/true on the host, same run); %s_spawn_floor_p50_ms "
              "%.2f ms (vfork+exec+wait of `true` inside the sandbox, same run)\n",
              name.c_str(), percentile(execs, 0.5), percentile(execs, 0.99),
              percentile(host_execs, 0.5), name.c_str(), percentile(inside, 0.5));
}

void bench_runtime(oci_runtime kind, int iterations, int concurrent, bool exec_only,
                   nlohmann::json& out) {
  std::string name = kind == oci_runtime::crun ? "crun" : "runsc";
  if (auto why = oci_unavailable(kind)) {
    std::cout << name << ": skipped: " << *why << "\n";
    out[name + "_skipped"] = *why;
    return;
  }
  sandboxd::test::temp_dir dir("bench-runtime");
  ::chmod(dir.path().c_str(), 0711); // sandboxes reach their root through it
  std::string data = dir.path() + "/data";
  oci_options options;
  options.runtime = kind;
  options.data_dir = data;
  oci_driver d(options);
  std::cout << name << ": " << d.runtime_note() << "\n";
  out[name + "_runtime"] = d.runtime_note();
  // Removes whatever a failed step left, before the directory goes.
  struct remove_all_sandboxes {
    oci_driver& d;
    ~remove_all_sandboxes() {
      if (auto all = d.list())
        for (auto& s : all.value())
          d.remove(s.id);
    }
  } cleanup{d};
  if (exec_only) {
    bench_exec(d, name, iterations, out);
    return;
  }
  template_store templates(data);
  auto base = templates.rootfs("base");
  must(base, "template base");

  // The raw bundles, each with its own writable layer and cgroup: `raw` as a sandbox is
  // (user namespace over an idmapped template, seccomp, the exec guard bound in), and the
  // hardening variants without the user namespace and/or without the seccomp filter.
  std::vector<std::string> raw_mounts; // unmounted at the end, deepest first
  struct unmount_all {
    std::vector<std::string>& m;
    ~unmount_all() {
      for (auto it = m.rbegin(); it != m.rend(); ++it)
        unmount_path(*it);
    }
  } unmount_raw{raw_mounts};
  const std::uint32_t raw_ids = 3u << 30; // a range outside the driver's
  auto make_bundle = [&](const std::string& variant, bool userns, bool seccomp) {
    std::string b = dir.path() + "/" + variant;
    overlay_dirs ov{base.value(), b + "/upper", b + "/work", b + "/merged"};
    for (auto& p : {ov.upper, ov.work, ov.target, b + "/bundle", b + "/lower"})
      fs::create_directories(p);
    if (userns) {
      unique_fd t(::open(base.value().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
      mount_idmapped(t.get(), b + "/lower", {raw_ids});
      raw_mounts.push_back(b + "/lower");
      ov.lower = b + "/lower";
      must(::chown(ov.upper.c_str(), raw_ids, raw_ids) == 0, "chown upper");
      for (auto& p : {b, b + "/bundle"})
        must(::chown(p.c_str(), 0, raw_ids) == 0 && ::chmod(p.c_str(), 0710) == 0, "chown");
    }
    mount_overlay(ov);
    raw_mounts.push_back(ov.target);
    auto config = nlohmann::json::parse(
      make_config_json({ov.target, "/sandboxd/bench-" + variant + "-" + name, limits{},
                        userns ? raw_ids : 0u, d.exec_guard_path()}));
    if (!seccomp)
      config["linux"].erase("seccomp");
    std::ofstream(b + "/bundle/config.json") << config.dump(1);
    return b + "/bundle";
  };
  std::string raw = make_bundle("raw", true, true);
  const std::vector<std::pair<std::string, std::pair<bool, bool>>> variants = {
    {"plain", {false, false}}, {"userns", {true, false}}, {"seccomp", {false, true}}};
  std::map<std::string, std::string> variant_bundles;
  for (const auto& [v, flags] : variants)
    variant_bundles[v] = make_bundle(v, flags.first, flags.second);

  g_steps.clear();
  std::vector<double> cycles, raws;
  {
    driver_cycle(d, "warm"); // the first cycle builds nothing, but warms caches
    raw_cycle(d, raw, "raw-warm");
    for (int i = 0; i < iterations; ++i) {
      cycles.push_back(driver_cycle(d, "c" + std::to_string(i)));
      raws.push_back(raw_cycle(d, raw, "raw" + std::to_string(i)));
    }
    // The hardening variants, fewer rounds, interleaved with the full raw bundle, whose
    // exec also runs under the guard once per round.
    for (int i = 0; i < std::max(5, iterations / 2); ++i) {
      for (const auto& [v, b] : variant_bundles)
        raw_cycle(d, b, v + std::to_string(i), "raw_" + v);
      raw_cycle(d, raw, "guard" + std::to_string(i), "raw_guard",
                {k_exec_guard_in_sandbox, "0", "--", "echo", "hi"});
    }
  }
  for (const char* ctrl :
       {"memory", "pids", "cpu", "cpuacct", "cpuset", "blkio", "devices", "freezer", "systemd"})
    for (const char* v : {"raw", "plain", "userns", "seccomp"})
      ::rmdir(
        (std::string("/sys/fs/cgroup/") + ctrl + "/sandboxd/bench-" + v + "-" + name).c_str());

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

  bench_exec(d, name, iterations, out);

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
  auto step = [&](const std::string& k) { return percentile(g_steps[k], 0.5); };
  for (const char* s : {"create", "exec"}) {
    double plain = step(std::string("raw_plain_") + s);
    std::printf("%s hardening %s p50: plain %.2f ms, +user namespace %+.2f ms, +seccomp %+.2f ms, "
                "both (as sandboxes run) %+.2f ms\n",
                name.c_str(), s, plain, step(std::string("raw_userns_") + s) - plain,
                step(std::string("raw_seccomp_") + s) - plain,
                step(std::string("raw_") + s) - plain);
  }
  std::printf("%s hardening exec under the guard: %+.2f ms (%.2f against %.2f ms)\n", name.c_str(),
              step("raw_guard_exec") - step("raw_exec"), step("raw_guard_exec"), step("raw_exec"));
  std::printf("%s: cycle p50 %.1f ms p99 %.1f ms; raw CLI p50 %.1f ms (x%.2f); "
              "fs pause p50 %.1f ms, resume p50 %.1f ms (10 MiB layer); %d idle running at once\n",
              name.c_str(), p50, percentile(cycles, 0.99), raw50, p50 / raw50,
              percentile(pauses, 0.5), percentile(resumes, 0.5), running);
}

// What a layer in the btrfs pool costs against two plain directories on the data
// directory's filesystem, and usage() (a qgroup read after a commit) against a walk.
void bench_layers(int iterations, nlohmann::json& out) {
  if (::geteuid() != 0 || layer_pool::unavailable()) {
    std::cout << "layers: skipped: " << layer_pool::unavailable().value_or("needs root") << "\n";
    return;
  }
  sandboxd::test::temp_dir dir("bench-layers");
  std::vector<double> pool_create, pool_remove, dirs_create, dirs_remove, usage, walk;
  {
    layer_pool pool({dir.path(), 1ull << 30, 1ull << 30});
    unique_fd plain(::open(dir.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    std::string ten(10 << 20, 'x');
    for (int i = 0; i < iterations; ++i) {
      std::string id = "l" + std::to_string(i);
      auto t0 = clock_type::now();
      pool.create(id, 3u << 30, 3u << 30, 0);
      pool_create.push_back(ms_since(t0));
      // On a failed step the layer goes too, so that the pool can be unmounted.
      struct drop_on_failure {
        layer_pool& pool;
        std::string id;
        bool armed = true;
        ~drop_on_failure() {
          try {
            if (armed)
              pool.remove(id);
          } catch (...) {
            // The temporary directory's removal reports what is left.
          }
        }
      } drop{pool, id};
      std::ofstream(pool.upper(id) + "/ten.bin") << ten;
      t0 = clock_type::now();
      must(pool.usage(id) >= ten.size(), "usage counts the file");
      usage.push_back(ms_since(t0));
      unique_fd layer(::open((dir.path() + "/layers/" + id).c_str(), O_PATH | O_DIRECTORY));
      t0 = clock_type::now();
      must(tree_bytes_at(layer.get(), "upper") >= ten.size(), "walk counts the file");
      walk.push_back(ms_since(t0));
      t0 = clock_type::now();
      drop.armed = false;
      pool.remove(id);
      pool_remove.push_back(ms_since(t0));
      t0 = clock_type::now();
      must(::mkdirat(plain.get(), id.c_str(), 0700) == 0, "mkdir");
      unique_fd d(::openat(plain.get(), id.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
      must(::mkdirat(d.get(), "upper", 0755) == 0 && ::mkdirat(d.get(), "work", 0700) == 0,
           "mkdir");
      dirs_create.push_back(ms_since(t0));
      t0 = clock_type::now();
      remove_tree_at(plain.get(), id);
      dirs_remove.push_back(ms_since(t0));
    }
  }
  auto put = [&](const char* k, const std::vector<double>& v) {
    out[std::string("layer_") + k + "_p50_ms"] = round2(percentile(v, 0.5));
  };
  put("pool_create", pool_create);
  put("pool_remove", pool_remove);
  put("dirs_create", dirs_create);
  put("dirs_remove", dirs_remove);
  put("usage", usage);
  put("walk", walk);
  std::printf("layers: pool create %.2f ms, remove %.2f ms (plain directories %.2f, %.2f ms); "
              "usage with 10 MiB %.2f ms (a walk %.2f ms)\n",
              percentile(pool_create, 0.5), percentile(pool_remove, 0.5),
              percentile(dirs_create, 0.5), percentile(dirs_remove, 0.5), percentile(usage, 0.5),
              percentile(walk, 0.5));
}

} // namespace

int main(int argc, char** argv) {
  bool json = false;
  int iterations = 40, concurrent = 50;
  std::string drivers = "crun,runsc";
  bool exec_only = false;
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
    else if (a == "--exec-only")
      exec_only = true;
    else {
      std::cerr << "usage: runtime_bench [--json] [--iterations N] [--concurrent N] "
                   "[--drivers crun,runsc] [--exec-only]\n";
      return 2;
    }
  }
  nlohmann::json out = nlohmann::json::object();
  out["iterations"] = iterations;
  try {
    if (!exec_only)
      bench_layers(std::max(10, iterations / 2), out);
    for (auto kind : {oci_runtime::crun, oci_runtime::runsc}) {
      std::string n = kind == oci_runtime::crun ? "crun" : "runsc";
      if (drivers.find(n) != std::string::npos)
        bench_runtime(kind, iterations, concurrent, exec_only, out);
    }
  } catch (const std::exception& e) {
    std::cerr << "runtime_bench: " << e.what() << "\n";
    return 1;
  }
  if (json)
    std::cout << out.dump() << std::endl;
  return 0;
}
