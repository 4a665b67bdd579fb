// layer_store — the node's template layers: read-only trees, each named by its digest
// (layer_digest.hpp), stored once however many templates share it.
//
// With btrfs (the usual case: the OCI drivers need it for their writable layers anyway) the
// store is a layer pool of its own (layer_pool.hpp: an image file loop-mounted nosuid,nodev
// at <dir>/layers, 0700, bounded in size); without it (a node that runs only the hollow
// driver, unit tests) the store is the directory <dir>/layers. Either way a layer is a
// directory <dir>/layers/<sha256> that nothing in sandboxd writes after it is named, and
// sandboxes see it only through read-only mounts (oci_driver.hpp). Not a subvolume each:
// btrfs numbers each subvolume's inodes from 256 on one device, so files of two layers
// would share (st_dev, st_ino) in a sandbox's overlay, and gVisor's gofer (which shares one
// inode between such files), tar and cp -a would take one file for another. Layers stored
// as subvolumes by an older sandboxd are still read, measured and removed.
//
// A layer is made in a staging tree (begin(): a directory `.staging-<random>`), filled by the
// caller through its handle, then commit() digests it, syncs it and renames it to its digest in one
// step; when that digest is already stored, the staging tree is deleted and the stored layer is the
// result (`reused`). So a name always stands for a complete layer: a crash leaves at most a staging
// tree, which the next store deletes when it opens.
//
// Sandboxes reach a layer only through open(): an O_PATH handle of <sha256> resolved
// beneath the store with no symlink, which the driver idmaps and stacks (oci_driver.hpp).
// Every member function is safe to call from many threads at once.
#pragma once

#include "runtime/layer_digest.hpp"
#include "runtime/unique_fd.hpp"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace sandboxd::runtime {

class layer_pool;

struct layer_store_options {
  std::string dir;              // the store lives in <dir>/layers (and <dir>/layers.img)
  std::uint64_t pool_bytes = 0; // size of the image when made; 0: as layer_pool decides
  bool plain = false;           // directories even where btrfs is available (tests)
};

// A tree being filled: its name inside the store, a handle (O_RDONLY directory) and the
// contents its filler hashed as it wrote them (layer_digest.hpp: commit() does not read those
// files back).
struct layer_staging {
  std::string name;
  unique_fd fd;
  content_hashes known;
};

struct committed_layer {
  layer_summary summary;   // its digest, entries and file bytes
  std::uint64_t bytes = 0; // what it takes in the store (btrfs referenced bytes)
  bool reused = false;     // the digest was stored already; the staging tree was deleted
};

// True for 64 lowercase hex digits: the only names open() and remove() take.
bool is_layer_name(const std::string& name);

class layer_store {
public:
  // Opens (making and mounting as needed) the store; deletes staging trees a crash left.
  // Throws std::system_error / std::runtime_error when it cannot.
  explicit layer_store(layer_store_options options);
  // Unmounts the pool unless a sandbox's stack still uses one of its layers.
  ~layer_store();
  layer_store(const layer_store&) = delete;
  layer_store& operator=(const layer_store&) = delete;

  const std::string& path() const { return root_; }
  bool on_btrfs() const { return pool_ != nullptr; } // in a pool of its own, bounded in size

  layer_staging begin();
  // Digests `staging` and stores it under its digest (see the header comment). The staging
  // tree is gone afterwards, whatever happens; throws what the digest or the kernel threw.
  committed_layer commit(layer_staging staging);
  // Deletes a staging tree that will not be committed. Never throws.
  void discard(layer_staging& staging) noexcept;

  bool has(const std::string& sha256) const;
  // The layer opened O_PATH beneath the store; invalid (errno set) when it is not stored or
  // `sha256` is not a layer name.
  unique_fd open(const std::string& sha256) const;
  // What the layer takes in the store.
  std::uint64_t bytes(const std::string& sha256) const;
  // Every stored layer's digest, in no particular order.
  std::vector<std::string> list() const;
  // Deletes a stored layer (a sandbox still stacked on it keeps what it has open). A layer
  // that is not stored is no error.
  void remove(const std::string& sha256);

private:
  void remove_tree(const std::string& name);
  bool is_subvolume(const std::string& name) const;

  layer_store_options options_;
  std::string root_;
  std::unique_ptr<layer_pool> pool_; // null: plain directories
  unique_fd root_fd_;                // plain directories: <dir>/layers
  mutable std::mutex mu_;            // commit's rename-or-reuse and remove
};

} // namespace sandboxd::runtime
