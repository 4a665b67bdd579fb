// snapshot_bench — snapshots and forks through oci_driver (docs/snapshots.md, docs/performance.md):
//   snapshot   snapshot() of a running sandbox (freeze, btrfs snapshot, thaw, qgroup counts) and
//              remove_snapshot(), with a 10 MiB and a 1 GiB writable layer: snapshot_p50_ms
//              for each (constant time: the 1 GiB one within 2x of the 10 MiB one)
//   fork       create from a snapshot of the 10 MiB layer + start + exec `echo hi`
//              (<runtime>_fork_to_first_output_p50_ms) beside create + start + exec `echo hi`
//              of a fresh sandbox (<runtime>_create_to_first_output_p50_ms), interleaved
//
//   snapshot_bench [--json] [--iterations N] [--drivers crun,runsc]
//
// Through the driver, not the daemon: no event-log append or RPC is counted (a snapshot through
// sandboxd adds its two appends). With --json the last line is one JSON object.
#include "runtime/oci_driver.hpp"
#include "tests/support/temp_dir.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using namespace sandboxd::runtime;
using clock_type = std::chrono::steady_clock;

namespace {

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

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

template <class T>
T must(outcome<T> o, const std::string& what) {
  if (!o.ok())
    throw std::runtime_error(what + ": " + o.err().message);
  if constexpr (!std::is_void_v<T>)
    return std::move(o).value();
}

std::string echo_hi(oci_driver& d, const std::string& id) {
  exec_request e;
  e.argv = {"echo", "hi"};
  return must(d.exec(id, e), "exec in " + id).stdout_data;
}

void fill(oci_driver& d, const std::string& id, int mib) {
  exec_request e;
  e.argv = {"sh", "-c",
            "dd if=/dev/urandom of=/data.bin bs=1M count=" + std::to_string(mib) + " 2>/dev/null"};
  auto r = must(d.exec(id, e), "fill " + id);
  if (r.exit_code != 0)
    throw std::runtime_error("dd in " + id + " exited " + std::to_string(r.exit_code));
}

void bench(oci_runtime kind, int iterations, nlohmann::json& out) {
  const std::string name = kind == oci_runtime::crun ? "crun" : "runsc";
  if (auto why = oci_unavailable(kind)) {
    std::cout << name << ": skipped: " << *why << "\n";
    out[name + "_skipped"] = *why;
    return;
  }
  sandboxd::test::temp_dir dir("bench-snapshot");
  ::chmod(dir.path().c_str(), 0711);
  oci_options options;
  options.runtime = kind;
  options.data_dir = dir.path() + "/data";
  oci_driver d(options);
  struct cleanup {
    oci_driver& d;
    ~cleanup() {
      if (auto all = d.list())
        for (auto& s : all.value())
          d.remove(s.id);
      if (auto all = d.list_snapshots())
        for (auto& s : all.value())
          d.remove_snapshot(s);
    }
  } c{d};
  int serial = 0;
  auto snap_id = [&] {
    char b[32];
    std::snprintf(b, sizeof b, "snap-%016x", ++serial);
    return std::string(b);
  };
  auto make = [&](const std::string& id, const std::string& from) {
    create_request r;
    r.id = id;
    r.limits.memory_bytes = 256ull << 20;
    r.limits.disk_bytes = 4ull << 30;
    r.from_snapshot = from;
    must(d.create(r), "create " + id);
    must(d.start(id), "start " + id);
  };

  double p50_small = 0;
  for (int mib : {10, 1024}) {
    const std::string id = "bench-" + std::to_string(mib);
    make(id, "");
    fill(d, id, mib);
    std::vector<double> t;
    for (int i = 0; i < iterations; ++i) {
      const auto s = snap_id();
      auto t0 = clock_type::now();
      must(d.snapshot(id, s), "snapshot " + id);
      t.push_back(ms_since(t0));
      must(d.remove_snapshot(s), "remove " + s);
    }
    const double p50 = percentile(t, 0.5);
    const std::string key = mib == 10 ? "10mib" : "1gib";
    out[name + "_snapshot_" + key + "_p50_ms"] = round2(p50);
    out[name + "_snapshot_" + key + "_p99_ms"] = round2(percentile(t, 0.99));
    std::printf("%s snapshot of a running sandbox with a %d MiB layer: p50 %.2f ms p99 %.2f ms\n",
                name.c_str(), mib, p50, percentile(t, 0.99));
    if (mib == 10)
      p50_small = p50;
    else
      out[name + "_snapshot_1gib_vs_10mib"] = round2(p50 / p50_small);
    if (mib == 1024)
      must(d.remove(id), "remove " + id);
  }

  // Forks of a snapshot of the 10 MiB sandbox, interleaved with fresh creates.
  const auto src = snap_id();
  must(d.snapshot("bench-10", src), "snapshot bench-10");
  std::vector<double> forks, creates;
  for (int i = 0; i < iterations; ++i) {
    for (bool fork : {true, false}) {
      const std::string id = (fork ? "fork-" : "fresh-") + std::to_string(i);
      auto t0 = clock_type::now();
      make(id, fork ? src : "");
      if (echo_hi(d, id) != "hi\n")
        throw std::runtime_error("echo in " + id + " printed something else");
      (fork ? forks : creates).push_back(ms_since(t0));
      must(d.remove(id), "remove " + id);
    }
  }
  out[name + "_fork_to_first_output_p50_ms"] = round2(percentile(forks, 0.5));
  out[name + "_create_to_first_output_p50_ms"] = round2(percentile(creates, 0.5));
  std::printf("%s fork (10 MiB snapshot) to first output p50 %.1f ms; a fresh create to first "
              "output p50 %.1f ms (same run)\n",
              name.c_str(), percentile(forks, 0.5), percentile(creates, 0.5));
}

} // namespace

int main(int argc, char** argv) {
  bool json = false;
  int iterations = 11;
  std::string drivers = "crun,runsc";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json")
      json = true;
    else if (a == "--iterations" && i + 1 < argc)
      iterations = std::stoi(argv[++i]);
    else if (a == "--drivers" && i + 1 < argc)
      drivers = argv[++i];
    else {
      std::cerr << "usage: snapshot_bench [--json] [--iterations N] [--drivers crun,runsc]\n";
      return 2;
    }
  }
  nlohmann::json out = nlohmann::json::object();
  out["iterations"] = iterations;
  try {
    for (auto kind : {oci_runtime::crun, oci_runtime::runsc})
      if (drivers.find(kind == oci_runtime::crun ? "crun" : "runsc") != std::string::npos)
        bench(kind, iterations, out);
  } catch (const std::exception& e) {
    std::cerr << "snapshot_bench: " << e.what() << "\n";
    return 1;
  }
  if (json)
    std::cout << out.dump() << std::endl;
  return 0;
}
