#include "runtime/layer_pool.hpp"

#include "runtime/beneath.hpp"
#include "runtime/child_process.hpp"
#include "runtime/names.hpp"
#include "runtime/overlay_mount.hpp"
#include "runtime/tree_walk.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <linux/loop.h>
#include <stdexcept>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace sandboxd::runtime {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

std::string mkfs_program() {
  std::string p = find_program("mkfs.btrfs");
  for (const char* dir : {"/usr/sbin/", "/sbin/"})
    if (p.empty() && ::access((std::string(dir) + "mkfs.btrfs").c_str(), X_OK) == 0)
      p = std::string(dir) + "mkfs.btrfs";
  return p;
}

bool kernel_has_btrfs() {
  std::ifstream in("/proc/filesystems");
  std::string line;
  while (std::getline(in, line))
    if (line.size() >= 5 && line.compare(line.size() - 5, 5, "btrfs") == 0)
      return true;
  return ::access("/sys/module/btrfs", F_OK) == 0;
}

std::uint64_t default_pool_bytes(const std::string& dir) {
  struct statvfs vfs {};
  if (::statvfs(dir.c_str(), &vfs) != 0)
    fail("statvfs " + dir);
  std::uint64_t half_free = std::uint64_t{vfs.f_bavail} * vfs.f_frsize / 2;
  return std::min<std::uint64_t>(64ull << 30, half_free);
}

void make_image(const std::string& image, std::uint64_t bytes) {
  if (bytes < (256ull << 20))
    throw std::runtime_error("the layer pool " + image + " would get " + std::to_string(bytes) +
                             " bytes; free disk space or set a pool size of at least 256 MiB");
  std::string tmp = image + ".new";
  ::unlink(tmp.c_str());
  unique_fd fd(::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd || ::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0)
    fail("make " + tmp);
  fd.reset();
  process_options o;
  o.argv = {mkfs_program(), "-q", "-f", tmp};
  auto r = run_process(o);
  if (r.exit_code != 0) {
    ::unlink(tmp.c_str());
    throw std::runtime_error("mkfs.btrfs " + tmp + " failed: " + r.err);
  }
  if (::rename(tmp.c_str(), image.c_str()) != 0)
    fail("rename " + tmp);
}

// Attaches `image` to a free loop device (released when the filesystem on it is
// unmounted) and mounts it on `dir` nosuid,nodev.
void mount_image(const std::string& image, const std::string& dir) {
  unique_fd ctl(::open("/dev/loop-control", O_RDWR | O_CLOEXEC));
  if (!ctl)
    fail("open /dev/loop-control");
  unique_fd img(::open(image.c_str(), O_RDWR | O_CLOEXEC));
  if (!img)
    fail("open " + image);
  for (int attempt = 0;; ++attempt) {
    int n = ::ioctl(ctl.get(), LOOP_CTL_GET_FREE);
    if (n < 0)
      fail("find a free loop device");
    std::string dev = "/dev/loop" + std::to_string(n);
    unique_fd loop(::open(dev.c_str(), O_RDWR | O_CLOEXEC));
    if (!loop)
      fail("open " + dev);
    loop_config cfg{};
    cfg.fd = static_cast<__u32>(img.get());
    cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
    std::strncpy(reinterpret_cast<char*>(cfg.info.lo_file_name), image.c_str(), LO_NAME_SIZE - 1);
    if (::ioctl(loop.get(), LOOP_CONFIGURE, &cfg) != 0) {
      if (errno == EBUSY && attempt < 20)
        continue; // another process took this device first
      fail("attach " + image + " to " + dev);
    }
    if (::mount(dev.c_str(), dir.c_str(), "btrfs", MS_NOSUID | MS_NODEV | MS_NOATIME, "") != 0) {
      int e = errno;
      ::ioctl(loop.get(), LOOP_CLR_FD, 0);
      errno = e;
      fail("mount " + image + " on " + dir);
    }
    return; // the mount holds the device; closing `loop` leaves it attached
  }
}

bool is_empty_dir(int dirfd) {
  int fd = ::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = fd < 0 ? nullptr : ::fdopendir(fd);
  if (d == nullptr) {
    if (fd >= 0)
      ::close(fd);
    return false;
  }
  bool empty = true;
  while (dirent* e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
      empty = false;
  ::closedir(d);
  return empty;
}

// Whether an overlay mounted anywhere (in this mount namespace) has its upper directory in
// the pool at `dir`: overlayfs holds a private clone of the pool's mount, so unmounting the
// pool succeeds while such an overlay lives, and the next pool would then mount the image a
// second time. The overlay's options in /proc/self/mountinfo (after " - ") name upperdir.
bool overlay_uses(const std::string& dir) {
  std::ifstream in("/proc/self/mountinfo");
  const std::string upper = "upperdir=" + dir + "/";
  for (std::string line; std::getline(in, line);) {
    const auto sep = line.find(" - ");
    if (sep == std::string::npos || line.compare(sep + 3, 8, "overlay ") != 0)
      continue;
    if (line.find(upper, sep) != std::string::npos)
      return true;
  }
  return false;
}

btrfs_ioctl_vol_args vol_args(const std::string& id) {
  require_plain_component(id, "layer name");
  btrfs_ioctl_vol_args a{};
  if (id.size() >= sizeof a.name)
    throw std::invalid_argument("layer name " + id + " is too long");
  std::memcpy(a.name, id.data(), id.size());
  return a;
}

} // namespace

std::optional<std::string> layer_pool::unavailable() {
  if (!kernel_has_btrfs())
    return std::string("the kernel has no btrfs (needed for the sandboxes' disk limits)");
  if (mkfs_program().empty())
    return std::string("mkfs.btrfs is not installed; apt-get install btrfs-progs");
  if (::access("/dev/loop-control", R_OK | W_OK) != 0)
    return std::string("no loop devices (/dev/loop-control) for the layer pool image");
  return std::nullopt;
}

layer_pool::layer_pool(layer_pool_options options)
    : options_(std::move(options)), image_(options_.data_dir + "/layers.img"),
      dir_(options_.data_dir + "/layers") {
  if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST)
    fail("mkdir " + dir_);
  if (!is_mount_point(dir_)) {
    if (::access(image_.c_str(), F_OK) != 0)
      make_image(image_,
                 options_.pool_bytes ? options_.pool_bytes : default_pool_bytes(options_.data_dir));
    mount_image(image_, dir_);
    mounted_here_ = true;
  }
  dir_fd_ = unique_fd(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd_)
    fail("open " + dir_);
  ::fchmod(dir_fd_.get(), 0700);
  btrfs_ioctl_quota_ctl_args q{};
  q.cmd = BTRFS_QUOTA_CTL_ENABLE;
  if (::ioctl(dir_fd_.get(), BTRFS_IOC_QUOTA_CTL, &q) != 0 && errno != EEXIST)
    fail("enable quotas on " + dir_);
}

layer_pool::~layer_pool() {
  if (keep_mounted_)
    return;
  // A handle inside the pool keeps it busy; an empty snapshot directory is no layer left.
  snapshots_fd_.reset();
  ::unlinkat(dir_fd_.get(), ".snapshots", AT_REMOVEDIR);
  const bool layers_left = !is_empty_dir(dir_fd_.get());
  dir_fd_.reset();
  if (layers_left) {
    // Layers of sandboxes that outlive this process stay in the image, which the next pool
    // mounts again; it stays mounted while an overlay uses it (a running, frozen or
    // memory-paused sandbox), so that the next pool takes this mount over instead of
    // mounting the image a second time beside the one the overlay still holds.
    if (!overlay_uses(dir_))
      ::umount2(dir_.c_str(), 0);
    return;
  }
  for (int i = 0; i < 50; ++i) {
    if (::umount2(dir_.c_str(), 0) == 0 || errno == EINVAL)
      return;
    if (errno != EBUSY)
      return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::umount2(dir_.c_str(), MNT_DETACH);
}

std::uint64_t layer_pool::limit_for(std::uint64_t bytes) const {
  return bytes ? bytes : options_.default_layer_bytes;
}

void layer_pool::create(const std::string& id, uid_t owner, gid_t group, std::uint64_t bytes) {
  auto args = vol_args(id);
  if (::ioctl(dir_fd_.get(), BTRFS_IOC_SUBVOL_CREATE, &args) != 0)
    fail("create layer " + id);
  unique_fd sub = open_beneath(dir_fd_.get(), id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  if (!sub)
    fail("open layer " + id);
  if (::fchmod(sub.get(), 0700) != 0 || ::mkdirat(sub.get(), "upper", 0755) != 0 ||
      ::fchownat(sub.get(), "upper", owner, group, AT_SYMLINK_NOFOLLOW) != 0 ||
      ::mkdirat(sub.get(), "work", 0700) != 0)
    fail("prepare layer " + id);
  if (limit_for(bytes) == 0)
    return; // no limit at all
  btrfs_ioctl_qgroup_limit_args l{};
  l.qgroupid = subvolume_id(id);
  l.lim.flags = BTRFS_QGROUP_LIMIT_MAX_RFER;
  l.lim.max_rfer = limit_for(bytes);
  if (::ioctl(dir_fd_.get(), BTRFS_IOC_QGROUP_LIMIT, &l) != 0)
    fail("limit layer " + id);
}

unique_fd layer_pool::make_subvolume(const std::string& name) {
  auto args = vol_args(name);
  if (::ioctl(dir_fd_.get(), BTRFS_IOC_SUBVOL_CREATE, &args) != 0)
    fail("create subvolume " + name);
  unique_fd sub = open_beneath(dir_fd_.get(), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  if (!sub)
    fail("open subvolume " + name);
  return sub;
}

void layer_pool::make_read_only(const std::string& name) {
  require_plain_component(name, "layer name");
  unique_fd sub = open_beneath(dir_fd_.get(), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  std::uint64_t flags = 0;
  if (!sub || ::ioctl(sub.get(), BTRFS_IOC_SUBVOL_GETFLAGS, &flags) != 0)
    fail("read the flags of layer " + name);
  flags |= BTRFS_SUBVOL_RDONLY;
  if (::ioctl(sub.get(), BTRFS_IOC_SUBVOL_SETFLAGS, &flags) != 0)
    fail("make layer " + name + " read-only");
}

bool layer_pool::rename(const std::string& from, const std::string& to) {
  require_plain_component(from, "layer name");
  require_plain_component(to, "layer name");
  if (::renameat2(dir_fd_.get(), from.c_str(), dir_fd_.get(), to.c_str(), RENAME_NOREPLACE) == 0)
    return true;
  if (errno == EEXIST)
    return false;
  fail("rename layer " + from + " to " + to);
}

void layer_pool::remove(const std::string& id) {
  auto args = vol_args(id);
  if (::ioctl(dir_fd_.get(), BTRFS_IOC_SNAP_DESTROY, &args) != 0 && errno != ENOENT)
    fail("delete layer " + id);
}

bool layer_pool::exists(const std::string& id) const {
  require_plain_component(id, "layer name");
  struct stat st {};
  return ::fstatat(dir_fd_.get(), id.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

std::string layer_pool::upper(const std::string& id) const {
  require_plain_component(id, "layer name");
  return dir_ + "/" + id + "/upper";
}

std::string layer_pool::work(const std::string& id) const {
  require_plain_component(id, "layer name");
  return dir_ + "/" + id + "/work";
}

std::uint64_t layer_pool::subvolume_id(const std::string& id) const {
  unique_fd sub = open_beneath(dir_fd_.get(), id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  if (!sub)
    fail("open layer " + id);
  return subvolume_id_of(sub.get(), "layer " + id);
}

std::uint64_t layer_pool::subvolume_id_of(int fd, const std::string& what) {
  btrfs_ioctl_ino_lookup_args a{};
  a.objectid = BTRFS_FIRST_FREE_OBJECTID;
  if (::ioctl(fd, BTRFS_IOC_INO_LOOKUP, &a) != 0)
    fail("look up " + what);
  return a.treeid;
}

void layer_pool::set_limit(std::uint64_t qgroup, std::uint64_t bytes, const std::string& what) {
  if (bytes == 0)
    return; // no limit at all
  btrfs_ioctl_qgroup_limit_args l{};
  l.qgroupid = qgroup;
  l.lim.flags = BTRFS_QGROUP_LIMIT_MAX_RFER;
  l.lim.max_rfer = bytes;
  if (::ioctl(dir_fd_.get(), BTRFS_IOC_QGROUP_LIMIT, &l) != 0)
    fail("limit " + what);
}

int layer_pool::snapshots_fd() {
  if (!snapshots_fd_) {
    if (::mkdirat(dir_fd_.get(), ".snapshots", 0700) != 0 && errno != EEXIST)
      fail("mkdir " + dir_ + "/.snapshots");
    snapshots_fd_ = open_beneath(dir_fd_.get(), ".snapshots", O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    if (!snapshots_fd_)
      fail("open " + dir_ + "/.snapshots");
  }
  return snapshots_fd_.get();
}

void layer_pool::snapshot(const std::string& id, const std::string& snap) {
  unique_fd src = open_beneath(dir_fd_.get(), id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  if (!src)
    fail("open layer " + id);
  require_plain_component(snap, "snapshot name");
  btrfs_ioctl_vol_args_v2 a{};
  if (snap.size() >= sizeof a.name)
    throw std::invalid_argument("snapshot name " + snap + " is too long");
  a.fd = src.get();
  a.flags = BTRFS_SUBVOL_RDONLY;
  std::memcpy(a.name, snap.data(), snap.size());
  if (::ioctl(snapshots_fd(), BTRFS_IOC_SNAP_CREATE_V2, &a) != 0)
    fail("snapshot layer " + id + " as " + snap);
}

void layer_pool::create_from(const std::string& id, const std::string& snap, uid_t owner,
                             std::uint64_t bytes) {
  require_plain_component(id, "layer name");
  require_plain_component(snap, "snapshot name");
  unique_fd src = open_beneath(snapshots_fd(), snap, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  if (!src)
    fail("open snapshot " + snap);
  btrfs_ioctl_vol_args_v2 a{};
  if (id.size() >= sizeof a.name)
    throw std::invalid_argument("layer name " + id + " is too long");
  a.fd = src.get();
  std::memcpy(a.name, id.data(), id.size());
  if (::ioctl(dir_fd_.get(), BTRFS_IOC_SNAP_CREATE_V2, &a) != 0)
    fail("make layer " + id + " from snapshot " + snap);
  unique_fd sub = open_beneath(dir_fd_.get(), id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  struct stat up {};
  if (!sub || ::fstatat(sub.get(), "upper", &up, AT_SYMLINK_NOFOLLOW) != 0)
    fail("open layer " + id);
  // The snapshot's files belong to its sandbox's range [from, from + 65536): move each to the
  // same id in the new range. chown clears setuid and setgid, which are then set again.
  const uid_t from = up.st_uid;
  if (from != owner) {
    auto shift = [&](int parent, const std::string& name, const struct stat& st) {
      auto moved = [&](std::uint32_t v) -> std::uint32_t {
        return v >= from && v - from < 65536 ? owner + (v - from) : v;
      };
      if (::fchownat(parent, name.c_str(), moved(st.st_uid), moved(st.st_gid),
                     AT_SYMLINK_NOFOLLOW) != 0)
        fail("chown " + name + " in layer " + id);
      if (S_ISREG(st.st_mode) && (st.st_mode & (S_ISUID | S_ISGID)) &&
          ::fchmodat(parent, name.c_str(), st.st_mode & 07777, 0) != 0)
        fail("chmod " + name + " in layer " + id);
    };
    tree_visitor v;
    v.on_leaf = shift;
    v.on_dir_done = [&](int parent, const std::string& name) {
      struct stat st {};
      if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
        fail("stat " + name + " in layer " + id);
      shift(parent, name, st);
    };
    walk_tree(sub.get(), "upper", v);
  }
  set_limit(subvolume_id_of(sub.get(), "layer " + id), limit_for(bytes), "layer " + id);
}

void layer_pool::remove_snapshot(const std::string& snap) {
  auto args = vol_args(snap);
  if (::ioctl(snapshots_fd(), BTRFS_IOC_SNAP_DESTROY, &args) != 0 && errno != ENOENT)
    fail("delete snapshot " + snap);
}

bool layer_pool::snapshot_exists(const std::string& snap) const {
  require_plain_component(snap, "snapshot name");
  struct stat st {};
  const std::string path = ".snapshots/" + snap;
  return ::fstatat(dir_fd_.get(), path.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
         S_ISDIR(st.st_mode);
}

std::vector<std::string> layer_pool::snapshots() const {
  std::vector<std::string> out;
  int fd = ::openat(dir_fd_.get(), ".snapshots", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return out;
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return out;
  }
  while (dirent* e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
      out.emplace_back(e->d_name);
  ::closedir(d);
  return out;
}

layer_pool::qgroup_bytes layer_pool::snapshot_usage(const std::string& snap) {
  require_plain_component(snap, "snapshot name");
  unique_fd sub = open_beneath(snapshots_fd(), snap, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  if (!sub)
    fail("open snapshot " + snap);
  auto q = subvolume_id_of(sub.get(), "snapshot " + snap);
  commit();
  return qgroup_of(q, "snapshot " + snap);
}

void layer_pool::commit() {
  if (::ioctl(dir_fd_.get(), BTRFS_IOC_SYNC) != 0)
    fail("commit " + dir_);
}

std::uint64_t layer_pool::usage(const std::string& id, bool commit_first) {
  std::uint64_t qgroup = subvolume_id(id);
  if (commit_first)
    commit();
  return qgroup_of(qgroup, "layer " + id).referenced;
}

layer_pool::qgroup_bytes layer_pool::qgroup_of(std::uint64_t qgroup, const std::string& what) {
  btrfs_ioctl_search_args s{};
  s.key.tree_id = BTRFS_QUOTA_TREE_OBJECTID;
  s.key.min_type = s.key.max_type = BTRFS_QGROUP_INFO_KEY;
  s.key.min_offset = s.key.max_offset = qgroup;
  s.key.max_transid = ~0ull;
  s.key.nr_items = 1;
  if (::ioctl(dir_fd_.get(), BTRFS_IOC_TREE_SEARCH, &s) != 0)
    fail("read the quota of " + what);
  if (s.key.nr_items == 0)
    return {};
  btrfs_ioctl_search_header h{};
  std::memcpy(&h, s.buf, sizeof h);
  btrfs_qgroup_info_item item{};
  if (h.len < sizeof item)
    return {};
  std::memcpy(&item, s.buf + sizeof h, sizeof item);
  return {le64toh(item.rfer), le64toh(item.excl)};
}

} // namespace sandboxd::runtime
