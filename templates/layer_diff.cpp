#include "templates/layer_diff.hpp"

#include "runtime/beneath.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <set>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

namespace sandboxd::templates {
namespace {

using runtime::open_beneath;
using runtime::unique_fd;

constexpr std::uint64_t k_max_compared = 64ull << 20; // bigger files are written, not compared

std::string join(const std::vector<std::string>& parts, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i)
    out += (i ? "/" : "") + parts[i];
  return out;
}

// The lower layer's directories, opened by handle (one cached: tar order keeps a directory's
// entries together).
struct lower_view {
  int root;
  std::string cached;
  unique_fd cached_fd;

  // The directory holding the entry `parts` in the lower layer; invalid when it has none.
  int parent(const std::vector<std::string>& parts) {
    const std::string want = join(parts, parts.size() - 1);
    if (cached_fd && cached == want)
      return cached_fd.get();
    unique_fd cur(::fcntl(root, F_DUPFD_CLOEXEC, 0));
    for (std::size_t i = 0; i + 1 < parts.size() && cur; ++i)
      cur = open_beneath(cur.get(), parts[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    cached = want;
    cached_fd = std::move(cur);
    return cached_fd ? cached_fd.get() : -1;
  }
};

std::vector<std::pair<std::string, std::string>> user_xattrs(int dir, const std::string& name) {
  std::vector<std::pair<std::string, std::string>> out;
  unique_fd f(::openat(dir, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!f)
    return out;
  const std::string proc = "/proc/self/fd/" + std::to_string(f.get());
  char names[4096];
  ssize_t n = ::llistxattr(proc.c_str(), names, sizeof names);
  for (ssize_t at = 0; n > 0 && at < n;) {
    std::string x(names + at);
    at += static_cast<ssize_t>(x.size()) + 1;
    if (x.rfind("user.", 0) != 0)
      continue;
    char value[65536];
    ssize_t v = ::lgetxattr(proc.c_str(), x.c_str(), value, sizeof value);
    if (v >= 0)
      out.emplace_back(x, std::string(value, static_cast<size_t>(v)));
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool same_meta(const entry_header& h, const struct stat& st, int dir, const std::string& name) {
  if ((st.st_mode & 07777) != stored_mode(h.mode) || st.st_uid != stored_owner(h.uid) ||
      st.st_gid != stored_owner(h.gid) || st.st_mtim.tv_sec != h.mtime)
    return false;
  std::vector<std::pair<std::string, std::string>> want;
  for (const auto& x : h.xattrs)
    if (x.first.rfind("user.", 0) == 0)
      want.push_back(x);
  std::sort(want.begin(), want.end());
  return want == user_xattrs(dir, name);
}

bool same_bytes(int dir, const std::string& name, const std::string& data) {
  unique_fd f(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!f)
    return false;
  std::string buf(1 << 16, '\0');
  std::size_t at = 0;
  for (;;) {
    ssize_t n = ::read(f.get(), buf.data(), buf.size());
    if (n < 0)
      return false;
    if (n == 0)
      return at == data.size();
    if (at + static_cast<size_t>(n) > data.size() ||
        std::memcmp(data.data() + at, buf.data(), static_cast<size_t>(n)) != 0)
      return false;
    at += static_cast<size_t>(n);
  }
}

// Whiteouts for every entry below the lower directory `dir` (path `prefix`) the tree lacks;
// a missing directory is one whiteout, not entered.
result<void> white_out_missing(int dir, const std::string& prefix,
                               const std::set<std::string>& seen, layer_writer& w,
                               diff_report& report) {
  int fd = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = fd < 0 ? nullptr : ::fdopendir(fd);
  if (d == nullptr) {
    if (fd >= 0)
      ::close(fd);
    return make_error(errc::internal, "cannot read the lower layer at " + prefix);
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
      names.emplace_back(e->d_name);
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const auto& n : names) {
    const std::string path = prefix.empty() ? n : prefix + "/" + n;
    if (!seen.count(path)) {
      if (auto r = w.whiteout(path); !r)
        return r;
      ++report.whited_out;
      continue;
    }
    struct stat st {};
    if (::fstatat(dir, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
      unique_fd sub = open_beneath(dir, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      if (sub)
        if (auto r = white_out_missing(sub.get(), path, seen, w, report); !r)
          return r;
    }
  }
  return {};
}

} // namespace

result<diff_report> extract_tar_above(chunk_source source, int lower_fd, layer_writer& w) {
  tar_stream t(std::move(source));
  lower_view lower{lower_fd, {}, {}};
  diff_report report;
  std::set<std::string> seen;
  std::set<std::string> skipped; // regular files left out (the lower layer has them)
  import_limits limits;
  entry_header h;
  auto from_tar = [&](char* buf, std::size_t n) {
    long got = t.read(buf, n);
    if (got < 0)
      w.source_error = t.failure();
    return got;
  };
  for (;;) {
    auto more = t.next(h);
    if (!more)
      return more.err();
    if (!more.value())
      break;
    auto parts = split_entry_path(h.path, limits);
    if (!parts)
      return parts.err();
    if (parts->empty()) { // the root: always written
      if (auto r = w.add(h, from_tar); !r)
        return r.err();
      continue;
    }
    const std::string path = join(parts.value(), parts->size());
    seen.insert(path);
    int dir = lower.parent(parts.value());
    struct stat st {};
    const bool in_lower =
      dir >= 0 && ::fstatat(dir, parts->back().c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
    bool keep = false;
    std::string data;
    bool have_data = false;
    if (in_lower && h.type == entry_type::file && S_ISREG(st.st_mode) &&
        static_cast<std::uint64_t>(st.st_size) == h.size && h.size <= k_max_compared &&
        same_meta(h, st, dir, parts->back())) {
      data.resize(h.size);
      std::size_t at = 0;
      while (at < h.size) {
        long n = t.read(data.data() + at, h.size - at);
        if (n <= 0)
          return make_error(errc::invalid_argument,
                            "the archive entry " + path + " could not be read: " + t.failure());
        at += static_cast<size_t>(n);
      }
      have_data = true;
      keep = same_bytes(dir, parts->back(), data);
      if (keep)
        skipped.insert(path);
    } else if (in_lower && h.type == entry_type::symlink && S_ISLNK(st.st_mode) &&
               same_meta(h, st, dir, parts->back())) {
      std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
      ssize_t n = ::readlinkat(dir, parts->back().c_str(), target.data(), target.size());
      keep = n >= 0 && std::string(target.data(), static_cast<size_t>(n)) == h.link;
    } else if (in_lower && h.type == entry_type::fifo && S_ISFIFO(st.st_mode) &&
               same_meta(h, st, dir, parts->back())) {
      keep = true;
    } else if (h.type == entry_type::hardlink) {
      auto target = split_entry_path(h.link, limits);
      if (target && skipped.count(join(target.value(), target->size()))) {
        // Its target was left out: the link is the lower layer's file, if lower has it at this
        // path too (the same inode there), else a copy of it.
        int tdir = -1;
        unique_fd tdir_fd;
        {
          unique_fd cur(::fcntl(lower_fd, F_DUPFD_CLOEXEC, 0));
          for (std::size_t i = 0; i + 1 < target->size() && cur; ++i)
            cur = open_beneath(cur.get(), (*target)[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
          tdir_fd = std::move(cur);
          tdir = tdir_fd ? tdir_fd.get() : -1;
        }
        struct stat tst {};
        if (tdir < 0 || ::fstatat(tdir, target->back().c_str(), &tst, AT_SYMLINK_NOFOLLOW) != 0)
          return make_error(errc::internal, "the lower layer lost " + h.link);
        if (in_lower && st.st_ino == tst.st_ino && st.st_dev == tst.st_dev) {
          skipped.insert(path);
          ++report.kept_from_lower;
          continue;
        }
        entry_header copy;
        copy.path = h.path;
        copy.type = entry_type::file;
        copy.mode = tst.st_mode & 07777;
        copy.uid = tst.st_uid;
        copy.gid = tst.st_gid;
        copy.mtime = tst.st_mtim.tv_sec;
        copy.size = static_cast<std::uint64_t>(tst.st_size);
        unique_fd src(::openat(tdir, target->back().c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
        if (!src)
          return make_error(errc::internal, "cannot open " + h.link + " in the lower layer");
        auto r = w.add(copy, [&](char* buf, std::size_t n) {
          return static_cast<long>(::read(src.get(), buf, n));
        });
        if (!r)
          return r.err();
        ++report.written;
        continue;
      }
    }
    if (keep) {
      ++report.kept_from_lower;
      continue;
    }
    std::size_t at = 0;
    auto r = have_data ? w.add(h,
                               [&](char* buf, std::size_t n) {
                                 std::size_t k = std::min(n, data.size() - at);
                                 std::memcpy(buf, data.data() + at, k);
                                 at += k;
                                 return static_cast<long>(k);
                               })
                       : w.add(h, from_tar);
    if (!r)
      return r.err();
    ++report.written;
  }
  if (auto r = white_out_missing(lower_fd, "", seen, w, report); !r)
    return r.err();
  if (auto r = w.finish(); !r)
    return r.err();
  return report;
}

} // namespace sandboxd::templates
