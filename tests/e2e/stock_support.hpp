// What the e2e tests that use the stock Debian templates need: the tarballs cached under
// ~/.cache/sandboxd/templates, or mmdebstrap and a Debian archive that answers.
#pragma once

#include "node/node.hpp"
#include "runtime/child_process.hpp"
#include "templates/stock_templates.hpp"
#include "tests/e2e/e2e_support.hpp"

#include <unistd.h>

namespace sandboxd::test {

// Whether the stock tarballs of debian and python are cached where sandboxd looks.
inline bool stock_tarballs_cached() {
  sandboxd::templates::stock_options o;
  o.cache_dir = sandboxd::node::template_cache_dir("");
  for (const char* name : {"debian", "python"}) {
    const auto* d = sandboxd::templates::find_stock(name);
    const auto file = o.cache_dir + "/" + d->name + "-" + o.suite + "-" +
                      sandboxd::templates::stock_key(*d, o).substr(0, 16) + ".tar.zst";
    if (::access(file.c_str(), R_OK) != 0)
      return false;
  }
  return true;
}

// Why the stock Debian templates cannot be built here, or "" when they can (cached, or
// mmdebstrap and an archive that answers: apt's own helper fetches the suite's Release file
// from the first source, through apt's proxies).
inline std::string why_no_stock_build() {
  if (stock_tarballs_cached())
    return "";
  if (sandboxd::runtime::find_program("mmdebstrap").empty())
    return "the stock tarballs are not cached and mmdebstrap is missing (scripts/setup)";
  auto uri = run_process("/bin/sh", {"-c", "apt-get indextargets --format '$(URI)' "
                                           "'Created-By: Packages' | head -n 1"});
  std::string first = uri.out.substr(0, uri.out.find('\n'));
  const auto dists = first.find("/dists/");
  if (uri.exit_code != 0 || dists == std::string::npos)
    return "the stock tarballs are not cached and apt knows no Debian archive (apt-get update)";
  const std::string release = first.substr(0, dists) + "/dists/bookworm/Release";
  auto r =
    run_process("/usr/bin/timeout", {"20", "/usr/lib/apt/apt-helper", "download-file", release,
                                     "/tmp/sandboxd-release-probe-" + std::to_string(::getpid())});
  ::unlink(("/tmp/sandboxd-release-probe-" + std::to_string(::getpid())).c_str());
  if (r.exit_code != 0)
    return "the stock tarballs are not cached and the Debian archive does not answer (" + release +
           ": " + r.err.substr(0, 300) + ")";
  return "";
}

} // namespace sandboxd::test
