#include "templates/stock_templates.hpp"

#include "base/sha256.hpp"
#include "runtime/child_process.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace sandboxd::templates {
namespace {

// Changes whenever what a stock suite is made of changes (options, hooks), so old cached
// tarballs are not taken for new ones.
constexpr const char* k_stock_version = "sandboxd stock v2";
constexpr const char* k_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

std::string random_suffix() {
  std::random_device rd;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08x%08x", rd(), rd());
  return buf;
}

std::string join(const std::vector<std::string>& v, char sep) {
  std::string out;
  for (const auto& s : v)
    out += (out.empty() ? "" : std::string(1, sep)) + s;
  return out;
}

// How far mmdebstrap is, from its "I: ..." lines.
double fraction_of(std::string_view line) {
  static const std::pair<std::string_view, double> marks[] = {{"running apt-get update", 0.05},
                                                              {"downloading packages", 0.15},
                                                              {"extracting archives", 0.45},
                                                              {"installing essential", 0.55},
                                                              {"installing remaining", 0.7},
                                                              {"running --customize-hook", 0.85},
                                                              {"cleaning package lists", 0.88},
                                                              {"creating tarball", 0.9},
                                                              {"success", 1.0}};
  for (const auto& [text, f] : marks)
    if (line.find(text) != std::string_view::npos)
      return f;
  return -1;
}

} // namespace

const std::vector<stock_definition>& stock_definitions() {
  static const std::vector<stock_definition> defs = {
    {"base", "", {}, {{"PATH", k_path}}, {"/bin/sh"}, "the host's static busybox"},
    {"debian",
     "",
     {"ca-certificates"},
     {{"PATH", k_path}, {"LANG", "C.UTF-8"}},
     {"/bin/bash"},
     "Debian minbase with ca-certificates"},
    {"python",
     "debian",
     {"ca-certificates", "python3", "python3-pip", "python3-venv", "python3-pytest", "git", "curl"},
     {{"PATH", k_path}, {"LANG", "C.UTF-8"}, {"PYTHONUNBUFFERED", "1"}},
     {"python3"},
     "Debian with python3, pip, venv, pytest, git and curl"},
    {"node",
     "debian",
     {"ca-certificates", "nodejs", "npm", "git"},
     {{"PATH", k_path}, {"LANG", "C.UTF-8"}},
     {"node"},
     "Debian with nodejs, npm and git"},
  };
  return defs;
}

const stock_definition* find_stock(const std::string& name) {
  for (const auto& d : stock_definitions())
    if (d.name == name)
      return &d;
  return nullptr;
}

std::string stock_key(const stock_definition& d, const stock_options& o) {
  auto packages = d.packages;
  std::sort(packages.begin(), packages.end());
  return sha256_hex(std::string(k_stock_version) + "\nsuite " + o.suite +
                    "\nvariant minbase\npackages " + join(packages, ',') + "\n");
}

result<std::string> stock_tarball(const stock_definition& d, const stock_options& o,
                                  const progress_fn& progress, bool& cached) {
  cached = false;
  const std::string key = stock_key(d, o);
  const std::string file = d.name + "-" + o.suite + "-" + key.substr(0, 16) + ".tar.zst";
  if (!o.cache_dir.empty()) {
    const std::string hit = o.cache_dir + "/" + file;
    if (::access(hit.c_str(), R_OK) == 0) {
      cached = true;
      return hit;
    }
  }
  std::string tool = o.mmdebstrap.empty() ? runtime::find_program("mmdebstrap") : o.mmdebstrap;
  if (tool.empty())
    return make_error(errc::unavailable,
                      "building template " + d.name +
                        " needs mmdebstrap (Debian 12's package); apt-get install mmdebstrap");
  const std::string work = o.work_dir.empty() ? o.cache_dir : o.work_dir;
  fs::create_directories(work);
  const std::string out = work + "/." + file + "." + random_suffix() + ".partial.tar.zst";
  const std::string debs = o.cache_dir.empty() ? "" : o.cache_dir + "/debs";
  std::vector<std::string> argv = {"/usr/bin/env",
                                   "TMPDIR=" + work,
                                   tool,
                                   "--mode=unshare",
                                   "--variant=minbase",
                                   "--format=tar",
                                   "--include=" + join(d.packages, ',')};
  // A login shell starts no program (E2B's SDKs run every command through `bash -l`): root's
  // PATH from bash's own EUID where it has one (dash still asks `id -u`), and `mesg n` only on
  // a terminal (where it does anything). What the shell ends up with is unchanged.
  argv.insert(
    argv.end(),
    {"--customize-hook=sed -i 's/\"$(id -u)\"/\"${EUID:-$(id -u)}\"/' \"$1\"/etc/profile",
     "--customize-hook=sed -i 's/^mesg n 2> \\/dev\\/null || true$/[ -t 0 ] \\&\\& mesg n 2> "
     "\\/dev\\/null || true/' \"$1\"/root/.profile"});
  if (!debs.empty()) {
    // The packages downloaded for one suite are kept for the next (mmdebstrap(1), "sync-in").
    fs::create_directories(debs);
    argv.insert(argv.end(), {"--skip=download/empty", "--skip=essential/unlink",
                             "--setup-hook=mkdir -p \"$1\"/var/cache/apt/archives/",
                             "--setup-hook=sync-in " + debs + " /var/cache/apt/archives/",
                             "--customize-hook=sync-out /var/cache/apt/archives " + debs});
  }
  argv.push_back(o.suite);
  argv.push_back(out);
  if (progress)
    progress("running mmdebstrap for " + o.suite + " (" + join(d.packages, ' ') + ")", 0, "");
  runtime::process_options p;
  p.argv = argv;
  p.max_output_bytes = 4 << 20;
  p.timeout = std::chrono::minutes(60);
  std::string pending;
  p.on_output = [&](runtime::output_stream, std::string_view chunk) {
    if (!progress)
      return;
    pending.append(chunk);
    for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
      std::string line = pending.substr(0, nl + 1);
      pending.erase(0, nl + 1);
      progress("building " + d.name, fraction_of(line), line);
    }
  };
  auto r = runtime::run_process(p);
  if (r.exit_code != 0) {
    ::unlink(out.c_str());
    std::string tail = r.err.size() > 2000 ? r.err.substr(r.err.size() - 2000) : r.err;
    return make_error(errc::unavailable, "mmdebstrap could not build template " + d.name +
                                           (r.timed_out ? " in 60 minutes" : "") + ": " + tail +
                                           " (it needs the host's apt sources to be reachable "
                                           "and unprivileged user namespaces)");
  }
  if (o.cache_dir.empty())
    return out;
  const std::string final_path = o.cache_dir + "/" + file;
  if (::rename(out.c_str(), final_path.c_str()) != 0) {
    int e = errno;
    ::unlink(out.c_str());
    return make_error(errc::internal, "cannot keep " + final_path + ": " + std::strerror(e));
  }
  return final_path;
}

} // namespace sandboxd::templates
