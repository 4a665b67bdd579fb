// removal_queue — takes a removed sandbox's directory out of the way at once and
// deals with its files on a background thread. `take(path)` renames the directory into
// the queue's own directory (`<data>/removing/`, same filesystem: one rename) and
// returns; the thread then deletes the tree, or recycles it.
//
// Why: freeing every inode of a layer and of overlayfs's work directory takes
// milliseconds even for an empty sandbox, and making a new sandbox's directories costs
// as much again (ext4 searches for a free inode on every one). So a directory taken
// with `recyclable` is emptied down to a skeleton — the directory itself, an empty
// `work/` and `merged/`, a new empty `upper/` made after the old layer is deleted, and
// the record and bundle files truncated — and kept in
// `<data>/spare/` (at most `max_spares`) for `reuse(path)` to move into place for the
// next sandbox. Nothing of the old sandbox is reused that its processes could write:
// its writable layer (`upper/`) and everything else in it are deleted, and a skeleton
// that is not exactly as described (e.g. `merged/` still a mount point) is deleted.
//
// Nothing is left behind: at construction the thread deletes whatever an earlier
// process left in `removing/` and `spare/` (a crash between a rename and the deletion),
// and the destructor finishes every removal before it returns (spares stay, for the
// next process to delete). `drain()` waits until everything taken so far is done.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
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
  // Throws std::system_error if it cannot be moved (then nothing changed).
  void take(const std::string& path, bool recyclable = false);
  // Moves a spare skeleton to `path` (which must not exist); false if none is ready.
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
  // Empties a taken sandbox directory to its skeleton; false if it is not one.
  bool strip(const std::string& path) const;

  std::string removing_, spare_;
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
