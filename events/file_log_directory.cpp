// file_log's data directory: created durably (each new directory synced into its parent),
// locked (LOCK, one process at a time), described (META, the partition count).
#include "events/file_log_impl.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/file.h>

namespace sandboxd::events {

namespace fmt = file_log_format;
using namespace file_log_parts;

namespace {

std::string read_small_file(const std::string& path) {
  std::string out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return out;
  char buf[4096];
  ssize_t r;
  while ((r = ::read(fd, buf, sizeof buf)) > 0)
    out.append(buf, static_cast<std::size_t>(r));
  ::close(fd);
  return out;
}

void write_file_durably(const std::string& dir, const std::string& name,
                        const std::string& content) {
  const std::string path = dir + "/" + name;
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw log_fault("file log: cannot create " + tmp + ": " + std::strerror(errno));
  bool ok = ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size()) &&
            ::fsync(fd) == 0;
  int err = errno;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0)
    throw log_fault("file log: cannot write " + path + ": " + std::strerror(ok ? errno : err));
  sync_directory(dir);
}

} // namespace

namespace file_log_parts {

// Creates `dir` and its missing parents, each made durable: every directory created is
// fsynced, and so is the parent it was created in.
void create_directory_durably(const std::string& dir) {
  std::vector<std::filesystem::path> missing;
  std::error_code ec;
  for (auto p = std::filesystem::absolute(dir, ec); !ec && !p.empty(); p = p.parent_path()) {
    if (std::filesystem::exists(p, ec))
      break;
    missing.push_back(p);
    if (p == p.parent_path())
      break;
  }
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw log_fault("file log: cannot create " + dir + ": " + ec.message());
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    sync_directory(it->string());
    sync_directory(it->parent_path().string());
  }
}

} // namespace file_log_parts

void file_log::impl::lock_directory() {
  const std::string path = options.dir + "/LOCK";
  lock_fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0)
    throw log_fault("file log: cannot open " + path + ": " + std::strerror(errno));
  // The lock belongs to the open file: a child the holder forked shares it until that
  // child execs (every descriptor here is close-on-exec) or exits. When the holder was
  // killed, such a child may still hold it for a moment: while the pid in LOCK is gone,
  // wait a little for it to let go.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    if (err == EINTR)
      continue;
    std::string holder;
    bool holder_gone = false;
    if (err == EWOULDBLOCK) {
      holder = read_small_file(path);
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' '))
        holder.pop_back();
      char* end = nullptr;
      const long pid = holder.empty() ? 0 : std::strtol(holder.c_str(), &end, 10);
      holder_gone =
        pid > 0 && end && *end == '\0' && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
      if (holder_gone && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
    }
    ::close(lock_fd);
    lock_fd = -1;
    if (err == EWOULDBLOCK && holder_gone)
      throw log_fault("file log " + options.dir + " is locked by a process that pid " + holder +
                      " (no longer running) started; find it with `fuser " + path +
                      "` and stop it");
    if (err == EWOULDBLOCK)
      throw log_fault("file log " + options.dir + " is in use by another process (pid " +
                      (holder.empty() ? std::string("unknown") : holder) + " holds " + path +
                      "); stop it first, or give this one another data "
                      "directory");
    throw log_fault("file log: cannot lock " + path + ": " + std::strerror(err));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(lock_fd, 0) != 0 || ::pwrite(lock_fd, pid.data(), pid.size(), 0) < 0) {
    // Only the holder's pid in error messages is lost; the lock itself holds.
  }
}

void file_log::impl::read_or_create_meta(bool has_segments) {
  const std::string path = options.dir + "/META";
  std::string meta = read_small_file(path);
  if (meta.empty()) {
    if (has_segments)
      throw log_fault("file log: " + path +
                      " is missing but the directory holds segments; "
                      "restore META (it states the partition count) before opening the log");
    partitions = options.partitions;
    write_file_durably(options.dir, "META",
                       std::string(k_meta_first_line) + "\npartitions " +
                         std::to_string(partitions) + "\n");
    return;
  }
  const std::string prefix = std::string(k_meta_first_line) + "\npartitions ";
  if (meta.compare(0, prefix.size(), prefix) != 0)
    throw log_fault("file log: " + path +
                    " is not the META file of a sandboxd file log "
                    "(version 1)");
  partitions = std::atoi(meta.c_str() + prefix.size());
  if (partitions <= 0)
    throw log_fault("file log: " + path + " states no valid partition count");
  if (partitions != options.partitions)
    throw log_fault("file log " + options.dir + " has " + std::to_string(partitions) +
                    " partitions, but was opened with " + std::to_string(options.partitions) +
                    "; the count of an existing log cannot change (keys would move between "
                    "partitions)");
}

} // namespace sandboxd::events
