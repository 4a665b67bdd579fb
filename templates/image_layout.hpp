// image_layout — what an image archive says it is made of: an OCI image layout (index.json,
// blobs/sha256/<hex>; what `skopeo copy ... oci-archive:` and `umoci` write) or a `docker
// save` archive (manifest.json, <id>/layer.tar or blobs/sha256/<hex>). The pure part of an
// image import: it reads the archive's small JSON files through a function and answers the
// layers to apply (lowest first), the digest each must have, and the image's defaults.
//
// Everything in the archive is hostile: a digest is 64 lowercase hex digits of sha256 or it
// is refused (so a blob path is always blobs/sha256/<hex>, never a path of the archive's
// choosing); a layer's media type must be a tar (plain, gzip or zstd); a docker archive's
// layer paths are checked like every entry path. An index of several images takes
// linux/amd64 (or the only one). The caller checks each blob against its digest before it
// uses it: an OCI blob is named by the SHA-256 of its bytes, a docker layer by its diff id
// (the SHA-256 of its uncompressed tar, which is what docker save writes).
#pragma once

#include "base/result.hpp"

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sandboxd::templates {

struct image_blob {
  std::string path;   // inside the archive
  std::string sha256; // hex: what the blob's bytes must hash to
};

struct image_plan {
  std::string kind;                // "oci" | "docker"
  std::vector<image_blob> layers;  // lowest first
  std::vector<image_blob> checked; // index, manifests and config as read (to verify too)
  std::vector<std::pair<std::string, std::string>> env;
  std::string working_directory;
  std::string user;
  std::vector<std::string> command; // Entrypoint then Cmd
};

// The bytes of a small file of the archive (at most a few MiB), or nullopt when the archive
// has no such file.
using archive_file = std::function<std::optional<std::string>(const std::string& path)>;

// invalid_argument naming what is wrong (no index.json or manifest.json, a bad digest, a
// media type that is not a layer tar, JSON that is not what the formats say).
result<image_plan> plan_image(const archive_file& read);

} // namespace sandboxd::templates
