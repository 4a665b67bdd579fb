// image_spool — the files of an image archive (an OCI image layout or a docker save tar),
// kept while the image is imported: an image archive may hold its index or manifest after
// its layers, so the layers are applied only once the whole archive has arrived.
//
// Each regular file of the archive is written to <dir>/<n> (names of the spool's choosing,
// never the archive's) with the SHA-256 of its bytes; symlinks and hard links between the
// archive's files (docker save links layers it shares) are followed inside the archive's own
// names only, at most 8 deep. Limits: `limits.max_bytes` for all files together,
// `limits.max_entries` entries, every path checked as layer_writer checks entry paths.
#pragma once

#include "base/result.hpp"
#include "runtime/unique_fd.hpp"
#include "templates/archive_reader.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace sandboxd::templates {

class image_spool {
public:
  // Reads the whole archive from `source` into `dir` (made here, mode 0700; it must not
  // exist). invalid_argument / too_large (resource_exhausted) naming the entry.
  static result<std::unique_ptr<image_spool>> read(chunk_source source, const std::string& dir,
                                                   const import_limits& limits);
  ~image_spool(); // deletes the directory and its files
  image_spool(const image_spool&) = delete;
  image_spool& operator=(const image_spool&) = delete;

  // A file of at most 4 MiB (JSON), or nullopt when the archive has none at `path`.
  std::optional<std::string> small_file(const std::string& path) const;
  // The file at `path` opened for reading, once its bytes are known to hash to `sha256`
  // (hex); invalid_argument when it is missing or its bytes differ.
  result<runtime::unique_fd> open_checked(const std::string& path, const std::string& sha256) const;
  std::uint64_t bytes() const { return bytes_; }

private:
  struct file {
    std::string name; // in dir_
    std::uint64_t size = 0;
    std::string sha256;
  };
  explicit image_spool(std::string dir) : dir_(std::move(dir)) {}
  const file* find(const std::string& path) const;

  std::string dir_;
  std::map<std::string, file> files_;          // by the archive's path (normalised)
  std::map<std::string, std::string> aliases_; // symlinks and hard links: path -> path
  std::uint64_t bytes_ = 0;
};

} // namespace sandboxd::templates
