// removal_queue — takes a sandbox's directory out of the way at once and deletes it
// on a background thread. `take(path)` renames the directory into the queue's own
// directory (`<data>/removing/`, same filesystem: one rename) and returns; the thread
// then removes the tree. Deleting a sandbox's files means freeing every inode of its
// layer and of overlayfs's work directory, a few milliseconds even for an empty
// sandbox and far more for a large layer; the caller does not wait for it.
//
// Nothing is left behind: the thread also removes whatever a previous process left in
// the queue's directory (a crash between the rename and the deletion), and the
// destructor finishes every removal before it returns. `drain()` waits until
// everything taken so far is gone.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace sandboxd::runtime {

class removal_queue {
public:
  // `dir` is created if missing; it must be on the filesystem of the paths taken.
  explicit removal_queue(std::string dir);
  ~removal_queue();
  removal_queue(const removal_queue&) = delete;
  removal_queue& operator=(const removal_queue&) = delete;

  // Moves `path` (a directory or file) into the queue; it is gone from `path` when this
  // returns. Throws std::system_error if it cannot be moved (then nothing changed).
  void take(const std::string& path);
  // Blocks until every path taken before the call (and every leftover) is removed.
  void drain();

  const std::string& dir() const { return dir_; }

private:
  void run();

  std::string dir_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  std::deque<std::string> pending_; // names inside dir_
  std::uint64_t taken_ = 0, removed_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

} // namespace sandboxd::runtime
