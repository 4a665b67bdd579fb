#include "runtime/rooted_fs.hpp"

#include "runtime/unique_fd.hpp"

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <random>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace sandboxd::runtime {
namespace {

constexpr std::uint64_t k_resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;

error errno_error(int e, std::string_view path) {
  std::string p(path);
  switch (e) {
  case ENOENT:
    return make_error(errc::not_found, "no such file or directory: " + p);
  case ENOTDIR:
    return make_error(errc::not_a_directory, "a component of " + p + " is not a directory");
  case EISDIR:
    return make_error(errc::is_a_directory, p + " is a directory; name a file");
  case ELOOP:
    return make_error(errc::invalid_argument, "too many symlinks resolving " + p);
  case ENAMETOOLONG:
    return make_error(errc::invalid_argument, "path too long: " + p);
  case EXDEV:
  case EACCES:
  case EPERM:
    return make_error(errc::permission_denied, "access refused: " + p);
  case ENOSPC:
  case EDQUOT:
    return make_error(errc::resource_exhausted, "no space left writing " + p);
  case EEXIST:
    return make_error(errc::conflict, p + " already exists; pick another name or remove it");
  case ENOTEMPTY:
    return make_error(errc::conflict, p + " is a directory that is not empty; remove it "
                                          "recursively or empty it first");
  case ESTALE:
    return make_error(errc::conflict, p + " changed while it was worked on; try again");
  case EINVAL:
    return make_error(errc::invalid_argument,
                      "cannot do that with " + p + " (a directory into itself?); pick other paths");
  default:
    return make_error(errc::internal, p + ": " + std::strerror(e));
  }
}

// The path relative to the root ("." for the root itself), or an error for NUL.
outcome<std::string> relative(std::string_view path) {
  if (path.find('\0') != std::string_view::npos)
    return make_error(errc::invalid_argument, "path contains a NUL byte; remove it");
  if (path.empty())
    return make_error(errc::invalid_argument, "empty path; name a file such as /workspace/a");
  size_t i = path.find_first_not_of('/');
  if (i == std::string_view::npos)
    return std::string(".");
  return std::string(path.substr(i));
}

int open_in(int dirfd, const std::string& rel, std::uint64_t flags) {
  open_how how{};
  how.flags = flags | O_CLOEXEC;
  how.resolve = k_resolve;
  for (;;) {
    long r = ::syscall(SYS_openat2, dirfd, rel.c_str(), &how, sizeof how);
    if (r >= 0 || errno != EAGAIN)
      return static_cast<int>(r);
  }
}

outcome<unique_fd> open_root(const std::string& root) {
  int fd = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return make_error(errc::internal,
                      "cannot open sandbox root " + root + ": " + std::strerror(errno));
  return unique_fd(fd);
}

file_info info_of(const struct stat& st) {
  file_info fi;
  if (S_ISREG(st.st_mode))
    fi.type = file_type::regular;
  else if (S_ISDIR(st.st_mode))
    fi.type = file_type::directory;
  else if (S_ISLNK(st.st_mode))
    fi.type = file_type::symlink;
  else
    fi.type = file_type::other;
  fi.size = static_cast<std::uint64_t>(st.st_size);
  fi.mode = st.st_mode & 07777;
  fi.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return fi;
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Opens (creating as needed) the directory `rel_dir` inside the root, each component
// resolved inside the root again after it was made.
outcome<unique_fd> open_parent_creating(int rootfd, const std::string& rel_dir,
                                        std::string_view shown, std::optional<file_owner> owner) {
  int fd = open_in(rootfd, rel_dir, O_PATH | O_DIRECTORY);
  if (fd >= 0)
    return unique_fd(fd);
  if (errno != ENOENT)
    return errno_error(errno, shown);
  std::string prefix;
  unique_fd cur(open_in(rootfd, ".", O_PATH | O_DIRECTORY));
  if (cur.get() < 0)
    return errno_error(errno, shown);
  size_t pos = 0;
  while (pos < rel_dir.size()) {
    size_t next = rel_dir.find('/', pos);
    if (next == std::string::npos)
      next = rel_dir.size();
    std::string comp = rel_dir.substr(pos, next - pos);
    pos = next + 1;
    if (comp.empty())
      continue;
    prefix += (prefix.empty() ? "" : "/") + comp;
    int f = open_in(rootfd, prefix, O_PATH | O_DIRECTORY);
    if (f < 0 && errno == ENOENT) {
      if (::mkdirat(cur.get(), comp.c_str(), 0755) == 0) {
        if (owner &&
            ::fchownat(cur.get(), comp.c_str(), owner->uid, owner->gid, AT_SYMLINK_NOFOLLOW) != 0)
          return errno_error(errno, shown);
      } else if (errno != EEXIST) {
        return errno_error(errno, shown);
      }
      f = open_in(rootfd, prefix, O_PATH | O_DIRECTORY);
    }
    if (f < 0)
      return errno_error(errno, shown);
    cur = unique_fd(f);
  }
  return cur;
}

struct opened_file {
  unique_fd fd;
  struct stat st {};
};

// Opens `path` inside `root` with `flags`, and stats what it opened.
outcome<opened_file> open_target(const std::string& root, std::string_view path,
                                 std::uint64_t flags) {
  auto rel = relative(path);
  if (!rel)
    return rel.err();
  auto rootfd = open_root(root);
  if (!rootfd)
    return rootfd.err();
  opened_file f{unique_fd(open_in(rootfd->get(), rel.value(), flags))};
  if (f.fd.get() < 0 || ::fstat(f.fd.get(), &f.st) != 0)
    return errno_error(errno, path);
  return f;
}

// Calls f(name, lstat) for each entry of the directory open as `fd` (which it takes
// over), skipping "." and ".." and entries removed meanwhile, until f returns false.
// False when `fd` is not a readable directory.
template <class F>
bool for_each_entry(int fd, F&& f) {
  if (fd < 0)
    return false;
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    int e = errno;
    ::close(fd);
    errno = e;
    return false;
  }
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    struct stat st {};
    if (n != "." && n != ".." && ::fstatat(fd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        !f(n, st))
      break;
  }
  ::closedir(d);
  return true;
}

std::string random_suffix() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string s;
  auto v = rng();
  for (int i = 0; i < 16; ++i, v >>= 4)
    s += hex[v & 15];
  return s;
}

} // namespace

error error_of_errno(int e, std::string_view path) {
  return errno_error(e, path);
}

outcome<std::string> path_in_root(std::string_view path) {
  return relative(path);
}

outcome<unique_fd> open_root_dir(const std::string& root) {
  return open_root(root);
}

int open_in_root(int rootfd, const std::string& rel, std::uint64_t flags) {
  return open_in(rootfd, rel, flags);
}

outcome<unique_fd> open_dir_creating_in_root(int rootfd, const std::string& rel_dir,
                                             std::string_view shown,
                                             std::optional<file_owner> owner) {
  return open_parent_creating(rootfd, rel_dir, shown, owner);
}

outcome<std::string> checked_write_path(std::string_view path, std::size_t content_bytes,
                                        std::uint64_t max_bytes) {
  auto rel = relative(path);
  if (!rel)
    return rel.err();
  if (content_bytes > max_bytes)
    return make_error(errc::too_large, "content of " + std::to_string(content_bytes) +
                                         " bytes for " + std::string(path) +
                                         " is over the limit of " + std::to_string(max_bytes));
  const std::string& r = rel.value();
  size_t slash = r.rfind('/');
  std::string name = slash == std::string::npos ? r : r.substr(slash + 1);
  if (r == "." || r.back() == '/' || name == "." || name == "..")
    return make_error(errc::is_a_directory, std::string(path) + " names a directory; name a file");
  return "/" + r;
}

outcome<std::string> read_file_in_root(const std::string& root, std::string_view path,
                                       std::uint64_t max_bytes) {
  auto opened = open_target(root, path, O_RDONLY | O_NOCTTY | O_NONBLOCK);
  if (!opened)
    return opened.err();
  unique_fd fd = std::move(opened->fd);
  const struct stat& st = opened->st;
  if (S_ISDIR(st.st_mode))
    return errno_error(EISDIR, path);
  if (!S_ISREG(st.st_mode))
    return make_error(errc::invalid_argument, std::string(path) + " is not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
    return make_error(errc::too_large, std::string(path) + " has " + std::to_string(st.st_size) +
                                         " bytes, over the limit of " + std::to_string(max_bytes) +
                                         "; read a smaller file");
  std::string out;
  out.reserve(static_cast<size_t>(st.st_size));
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return errno_error(errno, path);
    }
    if (n == 0)
      break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes)
      return make_error(errc::too_large, std::string(path) + " grew over the limit of " +
                                           std::to_string(max_bytes) + " bytes");
  }
  return out;
}

outcome<void> write_file_in_root(const std::string& root, std::string_view path,
                                 std::string_view content, std::uint32_t mode,
                                 std::uint64_t max_bytes, std::optional<file_owner> owner) {
  auto checked = checked_write_path(path, content.size(), max_bytes);
  if (!checked)
    return checked.err();
  const std::string r = checked.value().substr(1);
  size_t slash = r.rfind('/');
  std::string dir = slash == std::string::npos ? "." : r.substr(0, slash);
  std::string name = slash == std::string::npos ? r : r.substr(slash + 1);
  auto rootfd = open_root(root);
  if (!rootfd)
    return rootfd.err();
  auto parent = open_parent_creating(rootfd->get(), dir, path, owner);
  if (!parent)
    return parent.err();
  // O_PATH parents cannot be written through; reopen the same directory for writing.
  unique_fd pdir(::openat(parent->get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (pdir.get() < 0)
    return errno_error(errno, path);
  struct stat st {};
  if (::fstatat(pdir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
    return errno_error(EISDIR, path);
  std::string tmp = ".sandboxd-write-" + random_suffix();
  unique_fd out(
    ::openat(pdir.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (out.get() < 0)
    return errno_error(errno, path);
  auto fail = [&](int e) {
    ::unlinkat(pdir.get(), tmp.c_str(), 0);
    return errno_error(e, path);
  };
  if (!write_all(out.get(), content))
    return fail(errno);
  if (owner && ::fchown(out.get(), owner->uid, owner->gid) != 0)
    return fail(errno);
  // After the chown, which would clear setuid bits anyway: only permission bits are kept.
  if (::fchmod(out.get(), mode & 0777) != 0 || ::fsync(out.get()) != 0)
    return fail(errno);
  if (::renameat(pdir.get(), tmp.c_str(), pdir.get(), name.c_str()) != 0)
    return fail(errno);
  return {};
}

outcome<dir_listing> list_dir_in_root(const std::string& root, std::string_view path,
                                      std::uint32_t max_entries) {
  auto opened = open_target(root, path, O_RDONLY | O_DIRECTORY);
  if (!opened)
    return opened.err();
  dir_listing out;
  if (!for_each_entry(opened->fd.release(), [&](const std::string& n, const struct stat& st) {
        if (out.entries.size() >= max_entries) {
          out.truncated = true;
          return false;
        }
        out.entries.push_back(dir_entry{n, info_of(st)});
        return true;
      }))
    return errno_error(errno, path);
  return out;
}

outcome<file_info> stat_in_root(const std::string& root, std::string_view path) {
  auto opened = open_target(root, path, O_PATH);
  if (!opened)
    return opened.err();
  return info_of(opened->st);
}

} // namespace sandboxd::runtime
