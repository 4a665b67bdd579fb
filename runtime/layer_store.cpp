#include "runtime/layer_store.hpp"

#include "runtime/beneath.hpp"
#include "runtime/layer_pool.hpp"
#include "runtime/overlay_mount.hpp"
#include "runtime/tree_walk.hpp"

#include <cerrno>
#include <cstdio>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <random>
#include <sstream>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace sandboxd::runtime {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

constexpr const char* k_staging_prefix = ".staging-";

std::string random_suffix() {
  std::random_device rd;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08x%08x", rd(), rd());
  return buf;
}

std::vector<std::string> entries_of(int dirfd) {
  std::vector<std::string> out;
  int fd = ::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = fd < 0 ? nullptr : ::fdopendir(fd);
  if (d == nullptr) {
    if (fd >= 0)
      ::close(fd);
    fail("read the layer store");
  }
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..")
      out.push_back(std::move(n));
  }
  ::closedir(d);
  return out;
}

// The "major:minor" of the filesystem mounted at `dir` and how many mounts show that
// filesystem (binds of its directories included), from /proc/self/mountinfo.
std::pair<std::string, int> mounts_of(const std::string& dir) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line, dev;
  std::vector<std::string> devs;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string id, parent, d, root, mp;
    f >> id >> parent >> d >> root >> mp;
    devs.push_back(d);
    if (mp == dir)
      dev = d;
  }
  int n = 0;
  for (const auto& d : devs)
    n += !dev.empty() && d == dev;
  return {dev, n};
}

} // namespace

bool is_layer_name(const std::string& name) {
  if (name.size() != 64)
    return false;
  for (char c : name)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return true;
}

layer_store::layer_store(layer_store_options options)
    : options_(std::move(options)), root_(options_.dir + "/layers") {
  if (::mkdir(options_.dir.c_str(), 0700) != 0 && errno != EEXIST)
    fail("mkdir " + options_.dir);
  if (!options_.plain && !layer_pool::unavailable()) {
    layer_pool_options o;
    o.data_dir = options_.dir;
    o.pool_bytes = options_.pool_bytes;
    o.default_layer_bytes = 0;
    pool_ = std::make_unique<layer_pool>(o);
    root_fd_ = unique_fd(::fcntl(pool_->root_fd(), F_DUPFD_CLOEXEC, 0));
  } else {
    if (::mkdir(root_.c_str(), 0700) != 0 && errno != EEXIST)
      fail("mkdir " + root_);
    root_fd_ = unique_fd(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  }
  if (!root_fd_)
    fail("open " + root_);
  for (const auto& n : entries_of(root_fd_.get()))
    if (n.rfind(k_staging_prefix, 0) == 0)
      remove_tree(n);
}

layer_store::~layer_store() {
  if (!pool_)
    return;
  // A sandbox's stack is a bind of a layer: while one exists, the filesystem stays mounted
  // here too, so that the next store takes this mount over instead of mounting the image a
  // second time through another loop device.
  if (mounts_of(root_).second > 1)
    pool_->keep_mounted();
  root_fd_.reset();
  pool_.reset();
}

void layer_store::remove_tree(const std::string& name) {
  if (pool_ && is_subvolume(name)) {
    pool_->remove(name);
    return;
  }
  remove_tree_at(root_fd_.get(), name);
}

bool layer_store::is_subvolume(const std::string& name) const {
  struct stat st {};
  return ::fstatat(root_fd_.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
         S_ISDIR(st.st_mode) && st.st_ino == 256; // 256: the root of a btrfs subvolume
}

layer_staging layer_store::begin() {
  layer_staging s;
  s.name = k_staging_prefix + random_suffix();
  // A directory, not a subvolume of its own even on btrfs: every btrfs subvolume numbers
  // its inodes from 256 while they share one device, so two layers' files would share
  // (st_dev, st_ino) in a sandbox's overlay, and what keys files on that (gVisor's gofer,
  // which shares one inode between such files; tar and cp -a, which take them for hard
  // links) would read one file for another. The store's directories share one numbering.
  if (::mkdirat(root_fd_.get(), s.name.c_str(), 0755) != 0)
    fail("mkdir " + root_ + "/" + s.name);
  s.fd = open_beneath(root_fd_.get(), s.name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  if (!s.fd)
    fail("open " + root_ + "/" + s.name);
  ::fchmod(s.fd.get(), 0755);
  return s;
}

void layer_store::discard(layer_staging& s) noexcept {
  try {
    s.fd.reset();
    if (!s.name.empty())
      remove_tree(s.name);
  } catch (...) {
    // Deleted when the next store opens (its name says it is staging).
  }
  s.name.clear();
}

committed_layer layer_store::commit(layer_staging s) {
  committed_layer out;
  try {
    out.summary = digest_layer(s.fd.get(), 1024, &s.known);
    s.fd.reset();
    // Its files are on disk before the name says the layer is whole (one sync of the whole
    // filesystem: a sync of the staging tree's own directory before it would be a second one).
    if (pool_)
      pool_->commit();
    else
      ::syncfs(root_fd_.get());
    std::lock_guard<std::mutex> g(mu_);
    bool renamed = ::renameat2(root_fd_.get(), s.name.c_str(), root_fd_.get(),
                               out.summary.sha256.c_str(), RENAME_NOREPLACE) == 0;
    if (!renamed) {
      if (errno != EEXIST)
        fail("name layer " + out.summary.sha256);
      out.reused = true;
      remove_tree(s.name);
    }
    s.name.clear();
    ::fsync(root_fd_.get());
  } catch (...) {
    discard(s);
    throw;
  }
  // What bytes() would walk the tree again for: its files' and symlinks' sizes, counted by the
  // digest's walk. A layer stored already is measured as stored (an older one may be a
  // subvolume, measured by its quota group).
  out.bytes =
    out.reused ? bytes(out.summary.sha256) : out.summary.file_bytes + out.summary.link_bytes;
  return out;
}

bool layer_store::has(const std::string& sha256) const {
  if (!is_layer_name(sha256))
    return false;
  struct stat st {};
  return ::fstatat(root_fd_.get(), sha256.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
         S_ISDIR(st.st_mode);
}

unique_fd layer_store::open(const std::string& sha256) const {
  if (!is_layer_name(sha256)) {
    errno = EINVAL;
    return unique_fd();
  }
  return open_beneath(root_fd_.get(), sha256, O_PATH | O_DIRECTORY | O_NOFOLLOW);
}

std::uint64_t layer_store::bytes(const std::string& sha256) const {
  if (!is_layer_name(sha256))
    return 0;
  if (pool_ && is_subvolume(sha256)) // a layer stored before layers were directories
    return pool_->usage(sha256);
  return tree_bytes_at(root_fd_.get(), sha256);
}

std::vector<std::string> layer_store::list() const {
  std::vector<std::string> out;
  for (auto& n : entries_of(root_fd_.get()))
    if (is_layer_name(n))
      out.push_back(std::move(n));
  return out;
}

void layer_store::remove(const std::string& sha256) {
  if (!is_layer_name(sha256))
    return;
  std::lock_guard<std::mutex> g(mu_);
  struct stat st {};
  if (::fstatat(root_fd_.get(), sha256.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return;
  remove_tree(sha256);
}

} // namespace sandboxd::runtime
