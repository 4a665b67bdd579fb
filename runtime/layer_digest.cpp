#include "runtime/layer_digest.hpp"

#include "base/sha256.hpp"
#include "runtime/beneath.hpp"
#include "runtime/unique_fd.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <dirent.h>
#include <fcntl.h>
#include <stdexcept>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <system_error>
#include <unistd.h>
#include <vector>

namespace sandboxd::runtime {
namespace {

[[noreturn]] void fail(int e, const std::string& what) {
  throw std::system_error(e, std::generic_category(), what);
}

char type_of(mode_t m) {
  if (S_ISDIR(m))
    return 'd';
  if (S_ISREG(m))
    return 'f';
  if (S_ISLNK(m))
    return 'l';
  if (S_ISCHR(m))
    return 'c';
  if (S_ISBLK(m))
    return 'b';
  if (S_ISFIFO(m))
    return 'p';
  return 's';
}

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

// "name=hexvalue" of every extended attribute of the file open (O_PATH) as `fd`, sorted.
std::string xattrs_of(int fd, const std::string& where) {
  const std::string proc = "/proc/self/fd/" + std::to_string(fd);
  std::string names(256, '\0');
  for (;;) {
    ssize_t n = ::llistxattr(proc.c_str(), names.data(), names.size());
    if (n >= 0) {
      names.resize(static_cast<size_t>(n));
      break;
    }
    if (errno == ENOTSUP || errno == ENODATA)
      return {};
    if (errno != ERANGE)
      fail(errno, "list the extended attributes of " + where);
    names.resize(names.size() * 4);
  }
  std::vector<std::string> pairs;
  for (size_t at = 0; at < names.size();) {
    std::string name(names.c_str() + at);
    at += name.size() + 1;
    if (name.empty())
      continue;
    std::string value(64, '\0');
    for (;;) {
      ssize_t n = ::lgetxattr(proc.c_str(), name.c_str(), value.data(), value.size());
      if (n >= 0) {
        value.resize(static_cast<size_t>(n));
        break;
      }
      if (errno == ENODATA) { // removed meanwhile
        value.clear();
        break;
      }
      if (errno != ERANGE)
        fail(errno, "read the extended attribute " + name + " of " + where);
      value.resize(value.size() * 4);
    }
    pairs.push_back(name + "=" + hex(value));
  }
  std::sort(pairs.begin(), pairs.end());
  std::string out;
  for (const auto& p : pairs)
    out += (out.empty() ? "" : " ") + p;
  return out;
}

std::string content_sha256(int dir, const std::string& name, const struct stat& st,
                           const std::string& where, std::vector<char>& buf) {
  unique_fd f(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat now {};
  if (!f || ::fstat(f.get(), &now) != 0)
    fail(errno, "open " + where);
  if (!S_ISREG(now.st_mode) || now.st_ino != st.st_ino || now.st_dev != st.st_dev)
    throw std::runtime_error(where + " changed while the layer was digested");
  sandboxd::sha256 h;
  for (;;) {
    ssize_t n = ::read(f.get(), buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR)
        continue;
      fail(errno, "read " + where);
    }
    if (n == 0)
      break;
    h.add(std::string_view(buf.data(), static_cast<size_t>(n)));
  }
  return to_hex(h.finish());
}

// The entries of the directory open as `dir`, sorted bytewise, "." and ".." left out.
std::vector<std::string> sorted_names(int dir, const std::string& where) {
  int fd = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    fail(errno, "open " + where);
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    int e = errno;
    ::close(fd);
    fail(e, "read " + where);
  }
  std::vector<std::string> names;
  errno = 0;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..")
      names.push_back(std::move(n));
    errno = 0;
  }
  int err = errno;
  ::closedir(d);
  if (err != 0)
    fail(err, "read " + where);
  std::sort(names.begin(), names.end());
  return names;
}

struct walker {
  sandboxd::sha256 h;
  layer_summary out;
  std::vector<char> buf = std::vector<char>(1 << 16);
  const content_hashes* known = nullptr;

  // The manifest line of the entry `name` of `dir` (`path` in the layer), whose lstat is
  // `st`; `self` is the entry opened O_PATH, for its extended attributes.
  void line(const std::string& path, const struct stat& st, int dir, const std::string& name,
            int self) {
    char head[128];
    std::snprintf(head, sizeof head, "%c %o %u %u %lld ", type_of(st.st_mode),
                  static_cast<unsigned>(st.st_mode & 07777), static_cast<unsigned>(st.st_uid),
                  static_cast<unsigned>(st.st_gid), static_cast<long long>(st.st_mtim.tv_sec));
    std::string what;
    if (S_ISREG(st.st_mode)) {
      const known_content* k = nullptr;
      if (known)
        if (auto it = known->find(static_cast<std::uint64_t>(st.st_ino));
            it != known->end() && it->second.size == static_cast<std::uint64_t>(st.st_size))
          k = &it->second;
      what = std::to_string(st.st_size) + " " +
             (k ? k->sha256 : content_sha256(dir, name, st, path, buf));
      out.file_bytes += static_cast<std::uint64_t>(st.st_size);
    } else if (S_ISLNK(st.st_mode)) {
      std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
      ssize_t n = ::readlinkat(dir, name.c_str(), target.data(), target.size());
      if (n < 0)
        fail(errno, "read the link " + path);
      target.resize(static_cast<size_t>(n));
      what = target;
      out.link_bytes += static_cast<std::uint64_t>(st.st_size);
    } else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
      what = std::to_string(major(st.st_rdev)) + "," + std::to_string(minor(st.st_rdev));
    } else {
      what = "-";
    }
    std::string l = path;
    l += '\0';
    l += head;
    l += what;
    l += '\0';
    l += xattrs_of(self, path);
    l += '\n';
    h.add(l);
    ++out.entries;
  }
};

struct level {
  dev_t dev;
  ino_t ino;
  std::string path; // "." for the root
  std::vector<std::string> names;
  size_t next = 0;
};

std::string child_path(const std::string& parent, const std::string& name) {
  return parent == "." ? name : parent + "/" + name;
}

} // namespace

layer_summary digest_layer(int root, unsigned max_depth, const content_hashes* known) {
  walker w;
  w.known = known;
  w.h.add("sandboxd layer v1\n");
  unique_fd cur(::openat(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  struct stat st {};
  if (!cur || ::fstat(cur.get(), &st) != 0)
    fail(errno, "open the layer");
  w.line(".", st, cur.get(), ".", cur.get());
  std::vector<level> stack;
  stack.push_back({st.st_dev, st.st_ino, ".", sorted_names(cur.get(), "the layer"), 0});
  while (!stack.empty()) {
    level& top = stack.back();
    if (top.next == top.names.size()) {
      stack.pop_back();
      if (stack.empty())
        break;
      unique_fd up(::openat(cur.get(), "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      struct stat ust {};
      if (!up || ::fstat(up.get(), &ust) != 0)
        fail(errno, "open the parent of " + top.path);
      if (ust.st_dev != stack.back().dev || ust.st_ino != stack.back().ino)
        throw std::runtime_error("the layer changed while it was digested (" + stack.back().path +
                                 " was moved)");
      cur = std::move(up);
      continue;
    }
    const std::string name = top.names[top.next++];
    const std::string path = child_path(top.path, name);
    struct stat est {};
    if (::fstatat(cur.get(), name.c_str(), &est, AT_SYMLINK_NOFOLLOW) != 0)
      fail(errno, "stat " + path);
    unique_fd self(::openat(cur.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!self)
      fail(errno, "open " + path);
    w.line(path, est, cur.get(), name, self.get());
    if (!S_ISDIR(est.st_mode))
      continue;
    if (stack.size() >= max_depth)
      throw std::runtime_error("the layer nests directories deeper than " +
                               std::to_string(max_depth) + " levels at " + path);
    unique_fd child = open_beneath(cur.get(), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    struct stat cst {};
    if (!child || ::fstat(child.get(), &cst) != 0)
      fail(errno, "open the directory " + path + " (a mount point inside a layer is refused)");
    if (cst.st_ino != est.st_ino || cst.st_dev != est.st_dev)
      throw std::runtime_error(path + " changed while the layer was digested");
    auto names = sorted_names(child.get(), path);
    // Pushing may move the vector's storage: nothing refers to `top` after this.
    stack.push_back({cst.st_dev, cst.st_ino, path, std::move(names), 0});
    cur = std::move(child);
  }
  w.out.sha256 = to_hex(w.h.finish());
  return w.out;
}

} // namespace sandboxd::runtime
