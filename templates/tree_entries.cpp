#include "templates/tree_entries.hpp"

#include "runtime/beneath.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

namespace sandboxd::templates {
namespace {

using runtime::unique_fd;

error fault(const std::string& path, const std::string& what, int e) {
  return make_error(errc::internal, "reading " + (path.empty() ? std::string(".") : path) + ": " +
                                      what + ": " + std::strerror(e));
}

// Every extended attribute of the entry open O_PATH as `fd`.
result<std::vector<std::pair<std::string, std::string>>> xattrs_of(int fd,
                                                                   const std::string& path) {
  const std::string proc = "/proc/self/fd/" + std::to_string(fd);
  std::string names(1024, '\0');
  for (;;) {
    const ssize_t n = ::llistxattr(proc.c_str(), names.data(), names.size());
    if (n >= 0) {
      names.resize(static_cast<std::size_t>(n));
      break;
    }
    if (errno == ENOTSUP)
      return std::vector<std::pair<std::string, std::string>>{};
    if (errno != ERANGE || names.size() > (1u << 20))
      return fault(path, "list its extended attributes", errno);
    names.resize(names.size() * 4);
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (std::size_t at = 0; at < names.size();) {
    std::string name(names.c_str() + at);
    at += name.size() + 1;
    if (name.empty())
      continue;
    std::string value(256, '\0');
    for (;;) {
      const ssize_t n = ::lgetxattr(proc.c_str(), name.c_str(), value.data(), value.size());
      if (n >= 0) {
        value.resize(static_cast<std::size_t>(n));
        break;
      }
      if (errno != ERANGE || value.size() > (1u << 20))
        return fault(path, "read its extended attribute " + name, errno);
      value.resize(value.size() * 4);
    }
    out.emplace_back(std::move(name), std::move(value));
  }
  std::sort(out.begin(), out.end());
  return out;
}

result<std::vector<std::string>> sorted_names(int dir, const std::string& path) {
  const int fd = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = fd < 0 ? nullptr : ::fdopendir(fd);
  if (d == nullptr) {
    const int e = errno;
    if (fd >= 0)
      ::close(fd);
    return fault(path, "open the directory", e);
  }
  std::vector<std::string> names;
  errno = 0;
  while (dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
      names.emplace_back(e->d_name);
    errno = 0;
  }
  const int err = errno;
  ::closedir(d);
  if (err != 0)
    return fault(path, "read the directory", err);
  std::sort(names.begin(), names.end());
  return names;
}

entry_type type_of(mode_t m) {
  if (S_ISREG(m))
    return entry_type::file;
  if (S_ISDIR(m))
    return entry_type::directory;
  if (S_ISLNK(m))
    return entry_type::symlink;
  if (S_ISCHR(m))
    return entry_type::char_device;
  if (S_ISBLK(m))
    return entry_type::block_device;
  if (S_ISFIFO(m))
    return entry_type::fifo;
  return entry_type::other;
}

// The entry `name` of `dir` (lstat `st`) as a tree_entry.
result<tree_entry> describe(int dir, const std::string& name, const std::string& path,
                            const struct stat& st) {
  tree_entry e;
  e.header.path = path;
  e.header.type = type_of(st.st_mode);
  e.header.mode = st.st_mode & 07777;
  e.header.uid = st.st_uid;
  e.header.gid = st.st_gid;
  e.header.mtime = st.st_mtim.tv_sec;
  e.header.mtime_nsec = st.st_mtim.tv_nsec;
  e.inode = st.st_ino;
  e.ctime_ns = st.st_ctim.tv_sec * 1'000'000'000LL + st.st_ctim.tv_nsec;
  if (S_ISREG(st.st_mode))
    e.header.size = static_cast<std::uint64_t>(st.st_size);
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    e.major = ::major(st.st_rdev);
    e.minor = ::minor(st.st_rdev);
  }
  if (S_ISLNK(st.st_mode)) {
    std::string target(static_cast<std::size_t>(st.st_size) + 1, '\0');
    const ssize_t n = ::readlinkat(dir, name.c_str(), target.data(), target.size());
    if (n < 0)
      return fault(path, "read the symlink", errno);
    target.resize(static_cast<std::size_t>(n));
    e.header.link = std::move(target);
  }
  unique_fd self(::openat(dir, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!self)
    return fault(path, "open", errno);
  auto xs = xattrs_of(self.get(), path);
  if (!xs)
    return xs.err();
  for (auto& [k, v] : *xs) {
    if (k == "trusted.overlay.opaque") {
      e.opaque = v == "y";
    } else if (k.rfind("trusted.overlay.", 0) == 0) {
      if (e.overlay_xattr.empty() && k != "trusted.overlay.origin" &&
          k != "trusted.overlay.impure" && k != "trusted.overlay.nlink")
        e.overlay_xattr = k;
    } else {
      e.header.xattrs.emplace_back(k, std::move(v));
    }
  }
  return e;
}

struct walker {
  const entry_visit& visit;
  unsigned max_depth;
  std::map<std::pair<dev_t, ino_t>, std::string> linked; // files with several links: first path

  result<void> entry(int dir, const std::string& name, const std::string& path, unsigned depth) {
    struct stat st {};
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      return fault(path, "stat", errno);
    auto e = describe(dir, name, path, st);
    if (!e)
      return e.err();
    if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
      auto [it, first] = linked.try_emplace({st.st_dev, st.st_ino}, path);
      if (!first) {
        e->header.type = entry_type::hardlink;
        e->header.link = it->second;
        e->header.size = 0;
        return visit(*e, [](char*, std::size_t) { return 0L; });
      }
    }
    if (!S_ISDIR(st.st_mode))
      return visit_entry(dir, name, e.value(), visit);
    if (auto r = visit(*e, [](char*, std::size_t) { return 0L; }); !r)
      return r;
    if (depth + 1 > max_depth)
      return make_error(errc::invalid_argument, "'" + path + "' is nested deeper than " +
                                                  std::to_string(max_depth) + " directories");
    unique_fd sub = runtime::open_beneath(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    if (!sub) {
      if (errno == EXDEV)
        return {}; // a mount point: not part of the tree
      return fault(path, "open the directory", errno);
    }
    return below(sub.get(), path, depth + 1);
  }

  result<void> below(int dir, const std::string& path, unsigned depth) {
    auto names = sorted_names(dir, path);
    if (!names)
      return names.err();
    for (const auto& n : *names)
      if (auto r = entry(dir, n, path.empty() ? n : path + "/" + n, depth); !r)
        return r;
    return {};
  }
};

} // namespace

result<void> walk_entries(int top, const entry_visit& visit, unsigned max_depth) {
  walker w{visit, max_depth, {}};
  return w.below(top, "", 0);
}

result<tree_entry> entry_at(int dir, const std::string& name, const std::string& path) {
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return fault(path, "stat", errno);
  return describe(dir, name, path, st);
}

result<void> visit_entry(int dir, const std::string& name, const tree_entry& e,
                         const entry_visit& visit) {
  if (e.header.type != entry_type::file)
    return visit(e, [](char*, std::size_t) { return 0L; });
  unique_fd f(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat now {};
  if (!f || ::fstat(f.get(), &now) != 0)
    return fault(e.header.path, "open", errno);
  if (!S_ISREG(now.st_mode))
    return make_error(errc::internal, e.header.path + " changed while it was read");
  const int fd = f.get();
  return visit(e, [fd](char* buf, std::size_t n) -> long {
    for (;;) {
      const ssize_t r = ::read(fd, buf, n);
      if (r < 0 && errno == EINTR)
        continue;
      return static_cast<long>(r);
    }
  });
}

} // namespace sandboxd::templates
