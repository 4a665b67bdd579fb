// layer_pool — the sandboxes' writable layers, each with a disk limit the kernel
// enforces and a byte count the kernel keeps.
//
// The pool is a btrfs filesystem in an image file, <data>/layers.img (sparse; its size is
// the most all layers together may take from the host's disk), loop-mounted at
// <data>/layers with nosuid and nodev (0700, root). A sandbox's layer is the subvolume
// <data>/layers/<id> with `upper/` (owned by the sandbox's root, see id_map.hpp) and
// `work/` (overlayfs's work directory) inside, and a qgroup limit on its referenced
// bytes: writes past it fail with EDQUOT inside the sandbox while other sandboxes and
// the node (whose own files are outside the image) keep writing. Every host path of a
// layer is on this nosuid,nodev mount, so no file a sandbox makes there is ever setuid
// or a device for the host.
//
// The byte count is the qgroup's referenced bytes (data extents and the layer's metadata,
// as allocated: a sparse file counts what it holds, not its length), read by ioctl after
// a commit, so it cannot be dodged by nesting past PATH_MAX or swapping a directory for a
// symlink: nothing is walked. Subvolumes, qgroup limits, the count and deletion all go
// through ioctls (no btrfs command per call); only the first start of a pool runs
// mkfs.btrfs (btrfs-progs).
#pragma once

#include "runtime/unique_fd.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace sandboxd::runtime {

struct layer_pool_options {
  std::string data_dir;
  // Size of layers.img when it is made; 0: 64 GiB, at most half the free space of the
  // data directory's filesystem.
  std::uint64_t pool_bytes = 0;
  // A layer's limit when the sandbox asks for 0 (0 here too: no limit).
  std::uint64_t default_layer_bytes = 10ull << 30;
};

class layer_pool {
public:
  // Makes (mkfs.btrfs) and mounts the pool as needed, or takes over one that is mounted.
  // Throws std::system_error / std::runtime_error when it cannot.
  explicit layer_pool(layer_pool_options options);
  // Unmounts the pool (the loop device goes with it) unless a sandbox's overlay still uses
  // it (a running, frozen or memory-paused sandbox that outlives this pool): then the pool
  // stays mounted and the next pool on the same data directory takes that mount over.
  ~layer_pool();
  layer_pool(const layer_pool&) = delete;
  layer_pool& operator=(const layer_pool&) = delete;

  // Why pools cannot be made on this machine (no btrfs, no mkfs.btrfs, no loop device).
  static std::optional<std::string> unavailable();

  // Makes the layer of sandbox `id` with a limit of `bytes` (0: the default); `upper/`
  // is owned by `owner:group`. Throws if it exists or the kernel refuses.
  void create(const std::string& id, uid_t owner, gid_t group, std::uint64_t bytes);
  // Deletes the layer (its space is freed by btrfs in the background). Missing is fine.
  void remove(const std::string& id);
  bool exists(const std::string& id) const;
  // The limit in force for `bytes` asked for.
  std::uint64_t limit_for(std::uint64_t bytes) const;

  std::string upper(const std::string& id) const;
  std::string work(const std::string& id) const;
  const std::string& mount_point() const { return dir_; }

  // The layer's bytes as the kernel counts them, after committing what was written so
  // far (a btrfs transaction commit of the pool); without `commit`, as of the last commit.
  std::uint64_t usage(const std::string& id, bool commit = true);
  // Flushes and commits the pool (what usage() does first).
  void commit();

  // Snapshots of layers (docs/snapshots.md): read-only subvolumes .snapshots/<snap> of the
  // pool (the directory is 0700; no sandbox id starts with '.'). snapshot() makes one of
  // layer `id` in one ioctl (BTRFS_IOC_SNAP_CREATE_V2 with BTRFS_SUBVOL_RDONLY; the kernel
  // flushes the layer's dirty data into it first), in constant time whatever the layer's size:
  // it shares every block with the layer until either changes. Throws if `snap` exists.
  void snapshot(const std::string& id, const std::string& snap);
  // Makes layer `id` (as create() does, limit included) as a writable snapshot of snapshot
  // `snap`, whose owners are moved from the snapshot's id range to `owner`'s (the upper
  // directory's owner is the range's root): a walk that changes inodes only, every data block
  // stays shared. Throws if `id` exists or `snap` does not.
  void create_from(const std::string& id, const std::string& snap, uid_t owner,
                   std::uint64_t bytes);
  // Deletes snapshot `snap`; missing is fine.
  void remove_snapshot(const std::string& snap);
  bool snapshot_exists(const std::string& snap) const;
  // The names in .snapshots/, in no order.
  std::vector<std::string> snapshots() const;
  struct qgroup_bytes {
    std::uint64_t referenced = 0; // every block it reaches
    std::uint64_t exclusive = 0;  // the blocks no other subvolume shares: what deleting frees
  };
  // Snapshot `snap`'s qgroup counts after a commit of the pool.
  qgroup_bytes snapshot_usage(const std::string& snap);

  // For the read-only template layers (layer_store.hpp), which use a pool of their own:
  // a plain subvolume `name` (no upper/, work/ or limit), opened for reading; a subvolume
  // made read-only (BTRFS_SUBVOL_RDONLY: nothing can change it, root included, until it is
  // deleted); a subvolume renamed (false when `to` exists); the pool's root directory.
  unique_fd make_subvolume(const std::string& name);
  void make_read_only(const std::string& name);
  bool rename(const std::string& from, const std::string& to);
  int root_fd() const { return dir_fd_.get(); }
  // The destructor leaves the pool mounted (a mount elsewhere still shows its files: the
  // next pool on this directory takes the mount over instead of mounting it twice).
  void keep_mounted() { keep_mounted_ = true; }

private:
  std::uint64_t subvolume_id(const std::string& id) const;
  static std::uint64_t subvolume_id_of(int fd, const std::string& what);
  qgroup_bytes qgroup_of(std::uint64_t qgroup, const std::string& what);
  void set_limit(std::uint64_t qgroup, std::uint64_t bytes, const std::string& what);
  // .snapshots/, made on first use.
  int snapshots_fd();
  unique_fd snapshots_fd_;

  layer_pool_options options_;
  std::string image_, dir_;
  unique_fd dir_fd_; // the mounted pool's root
  bool mounted_here_ = false;
  bool keep_mounted_ = false;
};

} // namespace sandboxd::runtime
