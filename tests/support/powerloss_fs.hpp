// powerloss_fs — a file system (FUSE, in this process's memory) that loses at a simulated
// power loss exactly what a disk may lose: for tests of what durable means.
//
// The model. Every file has two contents: what processes see (every write, as a page cache
// holds it; it outlives the process that wrote it) and what is on the disk: the content as
// of the file's last fsync or fdatasync. Every directory has two sets of entries: the
// current ones and those as of its last fsync. At crash():
// - a directory goes back to its entries as of its last fsync (files created since are
//   gone, files removed or renamed since are back);
// - a file goes back to its content as of its last fsync, except that of the 4 KiB pages
//   written since, some may have reached the disk anyway (none, all, or a random subset,
//   chosen by the seed: the kernel writes dirty pages back in any order), and its size is
//   either the synced or the current one (pages of the current size that did not reach the
//   disk read as zeros, as ext4's unwritten extents do).
// Nothing that was fsynced is ever lost, and nothing that was not is trusted. After a
// crash the mount is renewed, so no kernel cache remembers what was lost.
//
// Fault injection: fail_next_fsyncs(n) makes the next n fsync/fdatasync calls on files
// return EIO without making anything durable (the written pages stay visible, as Linux
// keeps them in the page cache after a failed writeback). power_off_after_writes(n) cuts
// the power at a chosen point: n more write requests are served, a random prefix of the
// next one is written, and from then on every request that would change anything fails
// with EIO until crash(), so the crash lands inside a write.
//
// The file system is served by a process of its own (forked here, killed when its owner
// dies; a guardian then unmounts it): a test process that dies while one of its threads
// waits on the file system could otherwise never finish dying.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace sandboxd::test {

class powerloss_fs {
public:
  // Mounts an empty file system on `mountpoint` (an existing, empty directory), served by
  // threads of this process; `seed` chooses what each crash keeps. Throws
  // std::runtime_error when it cannot mount (no /dev/fuse, not root).
  powerloss_fs(const std::string& mountpoint, std::uint64_t seed);
  // Unmounts. Every file on it must be closed.
  ~powerloss_fs();
  powerloss_fs(const powerloss_fs&) = delete;
  powerloss_fs& operator=(const powerloss_fs&) = delete;

  const std::string& path() const;

  // A power loss as the header describes, then a fresh mount. No process may have a file
  // on it open (kill the writers and wait for them first).
  void crash();
  // The next `n` fsync/fdatasync calls on files fail with EIO.
  void fail_next_fsyncs(int n);
  // After `n` more write requests the power is off (see the header comment).
  void power_off_after_writes(std::int64_t n);
  bool powered_off() const;
  // How many write requests it has served since it was mounted first.
  std::uint64_t write_requests() const;

  // How many pages written since their file's last fsync the last crash kept (torn writes
  // need some), and how many it dropped.
  std::uint64_t pages_kept_at_last_crash() const;
  std::uint64_t pages_dropped_at_last_crash() const;

  // Why this machine cannot mount it ("" when it can: root and /dev/fuse).
  static std::string unavailable_reason();

  struct state; // the server process's file system

private:
  struct owner;
  std::unique_ptr<owner> owner_;
};

} // namespace sandboxd::test
