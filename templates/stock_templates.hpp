// stock_templates — the templates every node has one call away: `base` (the host's static
// busybox), and `debian`, `python` and `node`, Debian suites built with mmdebstrap from the
// host's own apt sources (docs/templates.md "Stock templates").
//
// A Debian suite is built as a root filesystem tarball by
//   mmdebstrap --mode=unshare --variant=minbase --include=<packages> <suite> <tarball>
// (unshare mode: package scripts run as an unprivileged user in a user namespace, never as
// host root). Tarballs are cached in `cache_dir`, named by the SHA-256 of what they are made
// of (suite, variant, packages, sandboxd's stock version), so a fresh data directory imports
// the cached tarball instead of running mmdebstrap again; the packages mmdebstrap fetched
// are cached beside them (debs/) for the next suite. `debian` is one layer; `python` and
// `node` are the debian layer plus a layer of what their packages add (layer_diff.hpp), so
// the debian layer is stored once for all three.
#pragma once

#include "base/result.hpp"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace sandboxd::templates {

struct stock_definition {
  std::string name;
  std::string parent;                // the stock template it is a layer above ("" for none)
  std::vector<std::string> packages; // mmdebstrap --include (empty for base)
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::string> command; // the default command
  std::string description;
};

// base, debian, python, node.
const std::vector<stock_definition>& stock_definitions();
const stock_definition* find_stock(const std::string& name);

struct stock_options {
  std::string suite = "bookworm";
  std::string cache_dir;  // where tarballs are kept; "" keeps none
  std::string work_dir;   // temporary tarballs while mmdebstrap runs (same filesystem as
                          // cache_dir, so a finished one is renamed into the cache)
  std::string mmdebstrap; // its path; "" looks it up in PATH
};

// Progress of a long step: what it is doing, how far it is (0..1, or -1 when unknown), and
// output of the tool it runs (may be empty).
using progress_fn =
  std::function<void(std::string_view phase, double fraction, std::string_view output)>;

// The key of `d`'s tarball: SHA-256 (hex) of suite, variant, packages and the stock version.
std::string stock_key(const stock_definition& d, const stock_options& o);

// The path of the root filesystem tarball of `d` (a Debian suite): the cached one, or one
// mmdebstrap makes now (into the cache when there is one, else into work_dir: the caller
// deletes it). unavailable when mmdebstrap is missing or cannot run here, naming why.
result<std::string> stock_tarball(const stock_definition& d, const stock_options& o,
                                  const progress_fn& progress, bool& cached);

} // namespace sandboxd::templates
