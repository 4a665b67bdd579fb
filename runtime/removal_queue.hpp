// removal_queue — takes a removed sandbox's directory out of the way at once and
// deals with its files on a background thread. `take(path)` renames the directory into
// the queue's own directory (`<data>/removing/`, same filesystem: one rename) and
// returns; the thread then deletes the tree, or recycles it.
//
// Why: freeing every inode of a sandbox's directory takes milliseconds even for an empty
// sandbox, and making a new sandbox's directories costs as much again (ext4 searches
// for a free inode on every one). So a directory taken with `recyclable` is emptied down
// to a skeleton — the directory itself, empty `lower/` and `merged/` mount points (not
// mounted), and the record and bundle files truncated — and kept in `<data>/spare/` (at
// most `max_spares`) for `reuse(path)` to move into place for the next sandbox. Nothing
// of the old sandbox is reused that its processes could write (its writable layer lives
// in the layer pool and is deleted with it); a skeleton that is not exactly as described
// (e.g. `merged/` still a mount point) is deleted.
//
// Nothing outside the data directory is ever touched: a path given to take() or reuse()
// must be spelled strictly inside it (plain components, no "." or ".."; else
// std::invalid_argument), its directory is opened by handle beneath the data directory
// (no symlink followed, no mount crossed), and every deletion works by handle below
// `removing/` or `spare/` (tree_walk.hpp): it follows no symlink and enters no mount.
//
// Nothing is left behind: at construction the thread deletes whatever an earlier
// process left in `removing/` and `spare/` (a crash between a rename and the deletion),
// and the destructor finishes every removal before it returns (spares stay, for the
// next process to delete). `drain()` waits until everything taken so far is done.
#pragma once

#include "runtime/unique_fd.hpp"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace sandboxd::runtime {

class removal_queue {
public:
  // `data_dir` must be on the filesystem of the paths taken; `removing/` and `spare/`
  // are made there.
  explicit removal_queue(std::string data_dir, std::size_t max_spares = 16);
  ~removal_queue();
  removal_queue(const removal_queue&) = delete;
  removal_queue& operator=(const removal_queue&) = delete;

  // Moves `path` into the queue; it is gone from `path` when this returns. With
  // `recyclable`, `path` is a sandbox directory (see above) and may become a spare.
  // Throws std::system_error if it cannot be moved (then nothing changed), and
  // std::invalid_argument for a path not strictly inside the data directory.
  void take(const std::string& path, bool recyclable = false);
  // Moves a spare skeleton to `path` (which must not exist and must be strictly inside
  // the data directory); false if none is ready.
  bool reuse(const std::string& path);
  // Blocks until every path taken before the call (and every leftover) is dealt with.
  void drain();

  std::size_t spares() const;

private:
  struct job {
    std::string name; // inside removing/
    bool recyclable;
  };
  void run();
  // Empties the taken sandbox directory `name` in removing/ to its skeleton; false if it
  // is not one.
  bool strip(const std::string& name) const;
  // The directory holding `path` (opened beneath the data directory) and its last
  // component.
  std::pair<unique_fd, std::string> parent_of(const std::string& path) const;
  // Deletes `name` inside `dir` by handle; a failure is left for the next sweep.
  static void remove_quietly(int dir, const std::string& name) noexcept;

  std::string data_dir_, removing_, spare_;
  unique_fd data_fd_, removing_fd_, spare_fd_;
  std::size_t max_spares_;
  mutable std::mutex mu_;
  std::condition_variable wake_, done_;
  std::deque<job> pending_;
  std::vector<std::string> spares_; // names inside spare/
  std::uint64_t taken_ = 0, finished_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

} // namespace sandboxd::runtime
