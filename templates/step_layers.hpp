// step_layers — the layers a spec build's steps make (docs/templates.md "Build from a spec"),
// each ending in one commit to the layer store (stored once, named by its digest):
// - a RUN step's: the writable layer of its build sandbox (runtime/driver.hpp), owners mapped
//   back from the sandbox's host ids, overlayfs whiteouts and opaque directories kept, and
//   everything else by the archive rules (layer_writer.hpp): the tree is hostile, a build
//   step's processes wrote it;
// - a COPY step's: files of the build context, owned by root with mtime 0 and their mode,
//   under directories that keep the owner and mode the stack below gives them;
// - the build context itself: the tar the client uploads, unpacked by the archive rules into
//   a staging tree of the store that is never committed (discarded with the build).
#pragma once

#include "base/result.hpp"
#include "base/sha256.hpp"
#include "runtime/layer_store.hpp"
#include "templates/archive_reader.hpp"
#include "templates/layer_making.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sandboxd::templates {

// What a build sandbox's writable layer held before its step ran (the entries the runtime
// made: mount points and the like): a path's inode and change time.
using upper_baseline = std::map<std::string, std::pair<std::uint64_t, std::int64_t>>;
result<upper_baseline> baseline_of(int upper);

// The writable layer open as `upper` as the layer above `stack` (hex digests, lowest
// first), leaving out entries unchanged since `before` (directories only where something
// below them changed); its root directory is the stack's. nullopt when nothing is left: the
// step changed nothing.
result<std::optional<made_layer>> layer_of_upper(runtime::layer_store& store, int upper,
                                                 std::uint32_t host_id_base,
                                                 const upper_baseline& before,
                                                 const std::vector<std::string>& stack,
                                                 const import_limits& limits);

// The build context: the uploaded tar unpacked beneath a staging tree (empty when the upload
// was empty). Discarded when destroyed.
class build_context {
public:
  // Reads `source` to its end; errors name the refused entry ("build context: ...").
  static result<std::unique_ptr<build_context>>
  receive(runtime::layer_store& store, chunk_source source, const import_limits& limits);
  ~build_context();
  build_context(const build_context&) = delete;
  build_context& operator=(const build_context&) = delete;

  int root() const { return staging_.fd.get(); }
  bool empty() const { return empty_; }

private:
  build_context(runtime::layer_store& store, runtime::layer_staging staging)
      : store_(store), staging_(std::move(staging)) {}
  runtime::layer_store& store_;
  runtime::layer_staging staging_;
  bool empty_ = true;
};

// A COPY: `sources` (checked paths inside the context, build_spec.hpp copy_source_parts)
// to `destination` (absolute; a directory when it ends in "/" or there are several
// sources), over the layers `stack` (hex digests, lowest first).
struct copy_plan {
  std::vector<std::string> sources;
  std::string destination;
  std::vector<std::string> stack;
};

// The digest of what the COPY would write (paths, types, modes and bytes): the copied
// files' hash in the step's cache key. not_found names a source the context lacks.
result<sha256_digest> copied_files(runtime::layer_store& store, const build_context& context,
                                   const copy_plan& plan, const import_limits& limits);
// The COPY's layer.
result<made_layer> layer_of_copy(runtime::layer_store& store, const build_context& context,
                                 const copy_plan& plan, const import_limits& limits);

} // namespace sandboxd::templates
