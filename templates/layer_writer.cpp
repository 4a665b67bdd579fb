#include "templates/layer_writer.hpp"

#include "base/sha256.hpp"
#include "runtime/beneath.hpp"
#include "runtime/tree_walk.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <system_error>
#include <unistd.h>

namespace sandboxd::templates {
namespace {

using runtime::open_beneath;
using runtime::unique_fd;

constexpr std::uint32_t k_nobody = 65534;
constexpr std::size_t k_max_component = 255;

error refused(const std::string& shown, const std::string& why) {
  return make_error(errc::invalid_argument, "archive entry '" + shown + "' " + why);
}

error too_large(const std::string& shown, const std::string& why) {
  return make_error(errc::too_large, "archive entry '" + shown + "': " + why);
}

error io_failure(const std::string& shown, const std::string& what, int e) {
  if (e == ENOSPC || e == EDQUOT)
    return make_error(errc::resource_exhausted, "archive entry '" + shown +
                                                  "': the layer store is full (" + what +
                                                  "); free space or grow it");
  return make_error(errc::internal,
                    "archive entry '" + shown + "': " + what + ": " + std::strerror(e));
}

// What an entry shows in messages: its path with control characters escaped, shortened.
std::string shown_path(const std::string& p) {
  std::string out;
  for (unsigned char c : p.substr(0, 300)) {
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (p.size() > 300)
    out += "...";
  return out;
}

std::string join(const std::vector<std::string>& parts, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i)
    out += (i ? "/" : "") + parts[i];
  return out;
}

std::uint32_t owner(std::uint32_t id, write_report& r) {
  if (id <= 65535)
    return id;
  ++r.owners_mapped;
  return k_nobody;
}

std::uint32_t perms(std::uint32_t mode, write_report& r) {
  mode &= 07777;
  if (mode & 06000) {
    ++r.setid_cleared;
    mode &= ~06000u;
  }
  return mode;
}

std::vector<std::pair<std::string, std::string>>
kept_xattrs(const std::vector<std::pair<std::string, std::string>>& in, write_report& r) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& x : in) {
    if (x.first.rfind("user.", 0) == 0 && x.first.size() > 5 && x.first.size() <= 255 &&
        x.second.size() <= 65536)
      out.push_back(x);
    else
      ++r.xattrs_dropped;
  }
  return out;
}

bool set_xattrs(int fd, const std::vector<std::pair<std::string, std::string>>& xs) {
  for (const auto& [name, value] : xs)
    if (::fsetxattr(fd, name.c_str(), value.data(), value.size(), 0) != 0 && errno != ENOTSUP)
      return false;
  return true;
}

} // namespace

std::uint32_t stored_mode(std::uint32_t mode) {
  return mode & 07777 & ~06000u;
}

std::uint32_t stored_owner(std::uint32_t id) {
  return id <= 65535 ? id : k_nobody;
}

layer_writer::layer_writer(int root, import_limits limits, whiteouts mode,
                           runtime::content_hashes* hashes)
    : root_(root), limits_(limits), mode_(mode), buf_(1 << 17), hashes_(hashes) {
  dirs_[""] = dir_meta{};
}

layer_writer::~layer_writer() = default;

// Splits `path` into checked components; an empty result names the root.
result<std::vector<std::string>> split_entry_path(const std::string& path,
                                                  const import_limits& limits) {
  const std::string shown = shown_path(path);
  if (path.find('\0') != std::string::npos)
    return refused(shown, "holds a NUL byte; refused");
  if (path.size() > limits.max_path)
    return refused(shown, "is longer than " + std::to_string(limits.max_path) + " bytes; refused");
  std::vector<std::string> parts;
  std::size_t at = 0;
  while (at <= path.size()) {
    std::size_t slash = path.find('/', at);
    if (slash == std::string::npos)
      slash = path.size();
    std::string c = path.substr(at, slash - at);
    at = slash + 1;
    if (c.empty() || c == ".")
      continue;
    if (c == "..")
      return refused(shown, "has a '..' component; refused (an archive may not name anything "
                            "outside its own tree)");
    if (c.size() > k_max_component)
      return refused(shown, "has a name longer than 255 bytes; refused");
    parts.push_back(std::move(c));
  }
  if (parts.size() > limits.max_depth)
    return refused(shown, "is nested deeper than " + std::to_string(limits.max_depth) +
                            " directories; refused");
  return parts;
}

result<int> layer_writer::open_parent(const std::vector<std::string>& parts,
                                      const std::string& shown) {
  const std::size_t n = parts.size() - 1;
  const std::string want = join(parts, n);
  if (cached_fd_ && want == cached_parent_)
    return cached_fd_.get();
  unique_fd cur(::fcntl(root_, F_DUPFD_CLOEXEC, 0));
  if (!cur)
    return io_failure(shown, "open the layer", errno);
  for (std::size_t i = 0; i < n; ++i) {
    unique_fd next = open_beneath(cur.get(), parts[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    if (!next && errno == ENOENT) {
      if (::mkdirat(cur.get(), parts[i].c_str(), 0755) != 0 && errno != EEXIST)
        return io_failure(shown, "make directory " + join(parts, i + 1), errno);
      dirs_.try_emplace(join(parts, i + 1), dir_meta{});
      next = open_beneath(cur.get(), parts[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    }
    if (!next) {
      if (errno == ENOTDIR || errno == ELOOP || errno == EXDEV)
        return refused(shown, "lies under '" + shown_path(join(parts, i + 1)) +
                                "', which this archive made a symlink or a file, not a "
                                "directory; refused (nothing is written through a symlink)");
      return io_failure(shown, "open directory " + join(parts, i + 1), errno);
    }
    cur = std::move(next);
  }
  cached_parent_ = want;
  cached_fd_ = std::move(cur);
  return cached_fd_.get();
}

result<void> layer_writer::clear(int dir, const std::string& name, const std::string& shown) {
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT)
      return {};
    return io_failure(shown, "stat", errno);
  }
  ++report_.replaced;
  if (S_ISDIR(st.st_mode)) {
    try {
      runtime::remove_tree_at(dir, name);
    } catch (const std::system_error& e) {
      return io_failure(shown, "replace the directory", e.code().value());
    }
    // Whatever was recorded below it, and the cached parent, are gone with it.
    const std::string prefix = cached_parent_; // the cache is the entry's parent
    const std::string gone = prefix.empty() ? name : prefix + "/" + name;
    for (auto it = dirs_.lower_bound(gone); it != dirs_.end() && it->first.rfind(gone, 0) == 0;)
      it = (it->first.size() == gone.size() || it->first[gone.size()] == '/') ? dirs_.erase(it)
                                                                              : std::next(it);
    return {};
  }
  if (::unlinkat(dir, name.c_str(), 0) != 0)
    return io_failure(shown, "replace", errno);
  return {};
}

result<void> layer_writer::add(const entry_header& h, const data_reader& read) {
  const std::string shown = shown_path(h.path);
  if (++report_.entries > limits_.max_entries)
    return too_large(shown, "the archive has more than " + std::to_string(limits_.max_entries) +
                              " entries");
  auto split = split_entry_path(h.path, limits_);
  if (!split)
    return split.err();
  auto& parts = split.value();
  if (parts.empty()) {
    if (h.type != entry_type::directory)
      return refused(shown, "names the root of the tree but is not a directory; refused");
    auto& m = dirs_[""];
    m.mode = perms(h.mode, report_);
    m.uid = owner(h.uid, report_);
    m.gid = owner(h.gid, report_);
    m.mtime = h.mtime;
    m.mtime_nsec = h.mtime_nsec;
    m.xattrs = kept_xattrs(h.xattrs, report_);
    return {};
  }
  const std::string& leaf = parts.back();
  const std::string path = join(parts, parts.size());

  if (mode_ == whiteouts::overlay && leaf.rfind(".wh.", 0) == 0) {
    if (leaf == ".wh..wh..opq") {
      std::vector<std::string> dir(parts.begin(), parts.end() - 1);
      dir.push_back("x"); // open_parent opens all but the last component
      auto p = open_parent(dir, shown);
      if (!p)
        return p.err();
      dirs_[join(parts, parts.size() - 1)].opaque = true;
      ++report_.opaque_dirs;
      return {};
    }
    const std::string target = leaf.substr(4);
    if (target.empty() || target == "." || target == ".." || target.rfind(".wh.", 0) == 0)
      return refused(shown, "is a whiteout of no valid name; refused");
    auto p = open_parent(parts, shown);
    if (!p)
      return p.err();
    if (auto c = clear(p.value(), target, shown); !c)
      return c;
    if (::mknodat(p.value(), target.c_str(), S_IFCHR | 0, makedev(0, 0)) != 0)
      return io_failure(shown, "make the whiteout", errno);
    // The whiteout entry's time, never the clock's: the same layer tar gives the same digest.
    const struct timespec times[2] = {{h.mtime, h.mtime_nsec}, {h.mtime, h.mtime_nsec}};
    if (::utimensat(p.value(), target.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0)
      return io_failure(shown, "time the whiteout", errno);
    ++report_.whiteouts;
    return {};
  }

  if (h.type == entry_type::char_device || h.type == entry_type::block_device ||
      h.type == entry_type::other) {
    ++report_.devices_dropped;
    return {};
  }
  auto parent = open_parent(parts, shown);
  if (!parent)
    return parent.err();
  const int dir = parent.value();
  const std::uint32_t uid = owner(h.uid, report_), gid = owner(h.gid, report_);
  const struct timespec times[2] = {{h.mtime, h.mtime_nsec}, {h.mtime, h.mtime_nsec}};

  switch (h.type) {
  case entry_type::directory: {
    struct stat st {};
    if (::fstatat(dir, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode))
      if (auto c = clear(dir, leaf, shown); !c)
        return c;
    if (::mkdirat(dir, leaf.c_str(), 0755) != 0 && errno != EEXIST)
      return io_failure(shown, "make the directory", errno);
    auto& m = dirs_[path];
    m.mode = perms(h.mode, report_);
    m.uid = uid;
    m.gid = gid;
    m.mtime = h.mtime;
    m.mtime_nsec = h.mtime_nsec;
    m.xattrs = kept_xattrs(h.xattrs, report_);
    return {};
  }
  case entry_type::file: {
    if (h.size > limits_.max_file_bytes)
      return too_large(shown, "holds " + std::to_string(h.size) + " bytes; one file may hold " +
                                std::to_string(limits_.max_file_bytes));
    if (report_.bytes + h.size > limits_.max_bytes)
      return too_large(shown, "the archive unpacks to more than " +
                                std::to_string(limits_.max_bytes) + " bytes");
    if (auto c = clear(dir, leaf, shown); !c)
      return c;
    unique_fd f(
      ::openat(dir, leaf.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!f)
      return io_failure(shown, "create", errno);
    std::uint64_t written = 0;
    sandboxd::sha256 content;
    for (;;) {
      long n = read(buf_.data(), buf_.size());
      if (n < 0)
        return refused(shown, "could not be read: " + source_error);
      if (n == 0)
        break;
      written += static_cast<std::uint64_t>(n);
      if (written > h.size || report_.bytes + written > limits_.max_bytes)
        return too_large(shown, "holds more bytes than its header says");
      if (hashes_)
        content.add(std::string_view(buf_.data(), static_cast<std::size_t>(n)));
      for (long off = 0; off < n;) {
        ssize_t w = ::write(f.get(), buf_.data() + off, static_cast<size_t>(n - off));
        if (w < 0) {
          if (errno == EINTR)
            continue;
          return io_failure(shown, "write", errno);
        }
        off += w;
      }
    }
    report_.bytes += written;
    if (::fchown(f.get(), uid, gid) != 0 || ::fchmod(f.get(), perms(h.mode, report_)) != 0 ||
        !set_xattrs(f.get(), kept_xattrs(h.xattrs, report_)) || ::futimens(f.get(), times) != 0)
      return io_failure(shown, "set owner, mode and times", errno);
    if (hashes_) {
      struct stat st {};
      if (::fstat(f.get(), &st) != 0)
        return io_failure(shown, "stat", errno);
      (*hashes_)[static_cast<std::uint64_t>(st.st_ino)] = {written, to_hex(content.finish())};
    }
    return {};
  }
  case entry_type::symlink: {
    if (h.link.empty() || h.link.size() > limits_.max_path ||
        h.link.find('\0') != std::string::npos)
      return refused(shown, "is a symlink without a valid target; refused");
    if (auto c = clear(dir, leaf, shown); !c)
      return c;
    if (::symlinkat(h.link.c_str(), dir, leaf.c_str()) != 0)
      return io_failure(shown, "make the symlink", errno);
    if (::fchownat(dir, leaf.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW) != 0 ||
        ::utimensat(dir, leaf.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0)
      return io_failure(shown, "set the symlink's owner and times", errno);
    return {};
  }
  case entry_type::hardlink: {
    auto target = split_entry_path(h.link, limits_);
    if (!target)
      return refused(shown, "is a hard link to '" + shown_path(h.link) +
                              "', which is not a path inside the archive; refused");
    if (target->empty())
      return refused(shown, "is a hard link to the root; refused");
    unique_fd leaf_dir(::fcntl(dir, F_DUPFD_CLOEXEC, 0));
    // The target's directory, looked up like any parent (it must exist: nothing is made).
    unique_fd tdir(::fcntl(root_, F_DUPFD_CLOEXEC, 0));
    for (std::size_t i = 0; i + 1 < target->size() && tdir; ++i)
      tdir = open_beneath(tdir.get(), (*target)[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    struct stat st {};
    if (!tdir || ::fstatat(tdir.get(), target->back().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode))
      return refused(shown, "is a hard link to '" + shown_path(h.link) +
                              "', which is not a regular file this archive put in the tree "
                              "before it; refused");
    if (join(*target, target->size()) == path)
      return {}; // a link to itself: nothing to do
    if (auto c = clear(leaf_dir.get(), leaf, shown); !c)
      return c;
    if (::linkat(tdir.get(), target->back().c_str(), leaf_dir.get(), leaf.c_str(), 0) != 0)
      return io_failure(shown, "make the hard link", errno);
    return {};
  }
  case entry_type::fifo: {
    if (auto c = clear(dir, leaf, shown); !c)
      return c;
    if (::mkfifoat(dir, leaf.c_str(), 0600) != 0 ||
        ::fchownat(dir, leaf.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW) != 0 ||
        ::fchmodat(dir, leaf.c_str(), perms(h.mode, report_), 0) != 0 ||
        ::utimensat(dir, leaf.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0)
      return io_failure(shown, "make the FIFO", errno);
    return {};
  }
  default:
    ++report_.devices_dropped;
    return {};
  }
}

result<void> layer_writer::whiteout(const std::string& path) {
  const std::string shown = shown_path(path);
  auto split = split_entry_path(path, limits_);
  if (!split)
    return split.err();
  if (split->empty())
    return refused(shown, "would white out the root; refused");
  auto p = open_parent(split.value(), shown);
  if (!p)
    return p.err();
  if (auto c = clear(p.value(), split->back(), shown); !c)
    return c;
  if (::mknodat(p.value(), split->back().c_str(), S_IFCHR | 0, makedev(0, 0)) != 0)
    return io_failure(shown, "make the whiteout", errno);
  const struct timespec zero[2] = {{0, 0}, {0, 0}};
  if (::utimensat(p.value(), split->back().c_str(), zero, AT_SYMLINK_NOFOLLOW) != 0)
    return io_failure(shown, "time the whiteout", errno);
  ++report_.whiteouts;
  return {};
}

result<void> layer_writer::make_opaque(const std::string& path) {
  auto split = split_entry_path(path, limits_);
  if (!split)
    return split.err();
  auto it = dirs_.find(join(split.value(), split->size()));
  if (it == dirs_.end())
    return refused(shown_path(path), "is no directory of this layer; it cannot be made opaque");
  it->second.opaque = true;
  ++report_.opaque_dirs;
  return {};
}

result<void> layer_writer::finish() {
  cached_fd_.reset();
  cached_parent_.clear();
  std::vector<std::pair<std::string, dir_meta>> order(dirs_.begin(), dirs_.end());
  auto depth = [](const std::string& p) {
    return p.empty() ? 0 : 1 + std::count(p.begin(), p.end(), '/');
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](const auto& a, const auto& b) { return depth(a.first) > depth(b.first); });
  for (const auto& [path, m] : order) {
    unique_fd fd(::fcntl(root_, F_DUPFD_CLOEXEC, 0));
    std::size_t at = 0;
    while (fd && at < path.size()) {
      std::size_t slash = path.find('/', at);
      if (slash == std::string::npos)
        slash = path.size();
      fd = open_beneath(fd.get(), path.substr(at, slash - at), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      at = slash + 1;
    }
    if (!fd)
      continue; // replaced by a later entry
    const struct timespec times[2] = {{m.mtime, m.mtime_nsec}, {m.mtime, m.mtime_nsec}};
    if (m.opaque && ::fsetxattr(fd.get(), "trusted.overlay.opaque", "y", 1, 0) != 0)
      return io_failure(path.empty() ? "." : path, "mark the directory opaque", errno);
    if (::fchown(fd.get(), m.uid, m.gid) != 0 || ::fchmod(fd.get(), m.mode) != 0 ||
        !set_xattrs(fd.get(), m.xattrs) || ::futimens(fd.get(), times) != 0)
      return io_failure(path.empty() ? "." : path, "set the directory's owner, mode and times",
                        errno);
  }
  return {};
}

} // namespace sandboxd::templates
