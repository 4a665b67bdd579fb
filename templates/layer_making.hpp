// layer_making — the ways a layer gets into the layer store, each ending in one commit
// (layer_store.hpp: digested, read-only, named by its digest, stored once): from a tar
// archive, from a whole root filesystem stacked on a lower layer (layer_diff.hpp), the
// `base` tree, and the sandboxd layer on top of every template.
#pragma once

#include "base/result.hpp"
#include "runtime/layer_store.hpp"
#include "templates/archive_reader.hpp"
#include "templates/layer_diff.hpp"

#include <functional>
#include <string>

namespace sandboxd::templates {

struct made_layer {
  runtime::committed_layer layer;
  write_report report;
};

// Wraps a layer's commit: calls `commit` (which names the layer in the store) and returns what
// it returned. A caller that collects unheld layers (template_registry) holds its collection
// lock across the commit and holds the layer before it lets go, so a collection never sees the
// layer named and unheld, while the filling before (an upload at the client's pace) takes no
// lock. Empty: the commit alone.
using commit_guard =
  std::function<runtime::committed_layer(const std::function<runtime::committed_layer()>& commit)>;

// A layer filled by `fill` (the staging tree's handle is staging.fd) and committed through
// `guard`; the staging tree is discarded when `fill` fails or throws (errc::internal naming
// the fault).
result<made_layer>
make_layer(runtime::layer_store& store,
           const std::function<result<void>(runtime::layer_staging&, write_report&)>& fill,
           const commit_guard& guard = {});

// The archive as one layer (whiteouts: literal for a root filesystem, overlay for an image
// layer). The staging tree is discarded on any error.
result<made_layer> layer_from_tar(runtime::layer_store& store, chunk_source source,
                                  const import_limits& limits, whiteouts mode,
                                  const commit_guard& guard = {});

// The whole tree in the archive as the layer above the stored layer `lower` (hex digest).
result<made_layer> layer_above(runtime::layer_store& store, chunk_source source,
                               const std::string& lower, const import_limits& limits,
                               const commit_guard& guard = {});

// `base`: runtime/template_store.hpp's tree (the host's busybox) with every mtime 0, so the
// same busybox gives the same layer on every node.
result<made_layer> base_layer(runtime::layer_store& store, const commit_guard& guard = {});

// The layer sandboxd puts on top of every template but base: /workspace (0755) and /tmp
// (01777) with a placeholder file (an empty /tmp becomes a tmpfs inside gVisor, and writes to
// it would not reach the writable layer), all owned by root with mtime 0: the same layer for
// every template, stored once.
result<made_layer> sandboxd_layer(runtime::layer_store& store, const commit_guard& guard = {});

} // namespace sandboxd::templates
