#include "node/data_directory.hpp"

#include "node/start_error.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <pwd.h>
#include <string>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace sandboxd::node {

std::string describe_user(uid_t uid) {
  if (const passwd* pw = ::getpwuid(uid))
    return std::string(pw->pw_name) + " (uid " + std::to_string(uid) + ")";
  return "uid " + std::to_string(uid);
}

namespace {

std::string errno_text() {
  return std::strerror(errno);
}

// The pid written in a lock file held by someone else, for the message.
std::string holder_of(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string pid = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "";
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' '))
    pid.pop_back();
  return pid.empty() ? "an unknown process" : "pid " + pid;
}

} // namespace

data_directory::data_directory(const std::string& path, std::optional<gid_t> traverse_group) {
  if (path.empty())
    throw start_error("the data directory is empty; give --data-dir");
  path_ = fs::absolute(path).lexically_normal().string();
  while (path_.size() > 1 && path_.back() == '/')
    path_.pop_back();

  std::error_code ec;
  if (!fs::exists(path_, ec)) {
    const fs::path parent = fs::path(path_).parent_path();
    fs::create_directories(parent, ec);
    if (ec)
      throw start_error("cannot create the parent directories of data directory " + path_ + ": " +
                        ec.message() + "; create them or choose another --data-dir");
    if (::mkdir(path_.c_str(), 0700) != 0 && errno != EEXIST)
      throw start_error("cannot create data directory " + path_ + ": " + errno_text() +
                        "; choose another --data-dir");
  }
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0)
    throw start_error("cannot read data directory " + path_ + ": " + errno_text());
  if (!S_ISDIR(st.st_mode))
    throw start_error("data directory " + path_ + " is not a directory; choose another --data-dir");
  const uid_t me = ::geteuid();
  if (st.st_uid != me)
    throw start_error("data directory " + path_ + " is owned by " + describe_user(st.st_uid) +
                      ", but sandboxd runs as " + describe_user(me) +
                      "; run sandboxd as its owner, chown it, or choose another --data-dir");

  if (traverse_group) {
    if (::chown(path_.c_str(), static_cast<uid_t>(-1), *traverse_group) != 0 ||
        ::chmod(path_.c_str(), 0710) != 0)
      throw start_error("cannot open data directory " + path_ +
                        " to the embedded PostgreSQL's group: " + errno_text());
  } else if ((st.st_mode & 07777) != 0700 && ::chmod(path_.c_str(), 0700) != 0) {
    throw start_error("cannot set data directory " + path_ + " to mode 0700: " + errno_text());
  }

  const std::string lock = path_ + "/sandboxd.lock";
  lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd_ < 0)
    throw start_error("cannot open " + lock + ": " + errno_text());
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    const std::string holder = holder_of(lock_fd_);
    ::close(lock_fd_);
    lock_fd_ = -1;
    throw start_error("data directory " + path_ + " is in use by another sandboxd (" + holder +
                      "); stop it first or choose another --data-dir");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(lock_fd_, 0) != 0 ||
      ::pwrite(lock_fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    ::close(lock_fd_);
    lock_fd_ = -1;
    throw start_error("cannot write " + lock + ": " + errno_text());
  }
}

data_directory::~data_directory() {
  if (lock_fd_ >= 0)
    ::close(lock_fd_); // releases the flock; the file stays (its content is only a hint)
}

std::string data_directory::private_subdirectory(const std::string& name) const {
  const std::string dir = path_ + "/" + name;
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw start_error("cannot make " + dir + ": " + errno_text());
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw start_error(dir + " is not a directory; move it away");
  if ((st.st_mode & 07777) != 0700 && ::chmod(dir.c_str(), 0700) != 0)
    throw start_error("cannot set " + dir + " to mode 0700: " + errno_text());
  return dir;
}

} // namespace sandboxd::node
