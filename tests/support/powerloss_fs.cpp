#define FUSE_USE_VERSION 312
#include "tests/support/powerloss_fs.hpp"

#include "tests/support/guardian.hpp"
#include "tests/support/process.hpp"

#include <fuse_lowlevel.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <unordered_map>
#include <vector>

namespace sandboxd::test {

namespace {

constexpr std::uint64_t k_page = 4096;

struct node {
  fuse_ino_t ino = 0;
  bool dir = false;
  mode_t mode = 0;
  // A file: what processes see, what the disk has, and the pages written since the sync.
  std::string data;
  std::string synced;
  std::set<std::uint64_t> dirty;
  // A directory: its entries now and as of its last fsync.
  std::map<std::string, std::shared_ptr<node>> entries;
  std::map<std::string, std::shared_ptr<node>> synced_entries;
  timespec mtime{};

  void touch() { ::clock_gettime(CLOCK_REALTIME, &mtime); }

  void mark_dirty(std::uint64_t from, std::uint64_t to) {
    if (to <= from)
      return;
    for (std::uint64_t p = from / k_page; p <= (to - 1) / k_page; ++p)
      dirty.insert(p);
  }
  void write(const char* buf, std::size_t n, std::uint64_t off) {
    if (off + n > data.size())
      data.resize(off + n, '\0');
    std::memcpy(data.data() + off, buf, n);
    mark_dirty(off, off + n);
    touch();
  }
  void resize(std::uint64_t size) {
    const std::uint64_t old = data.size();
    data.resize(size, '\0');
    mark_dirty(std::min(old, size), std::max(old, size));
    touch();
  }
  void sync() {
    synced.resize(data.size(), '\0');
    for (std::uint64_t p : dirty) {
      const std::uint64_t from = p * k_page;
      if (from >= data.size())
        continue;
      const std::uint64_t n = std::min<std::uint64_t>(k_page, data.size() - from);
      std::memcpy(synced.data() + from, data.data() + from, n);
    }
    dirty.clear();
  }
};

} // namespace

struct powerloss_fs::state {
  std::string mountpoint;
  std::mt19937_64 rng;
  std::mutex mu;
  std::unordered_map<fuse_ino_t, std::shared_ptr<node>> inodes;
  fuse_ino_t next_ino = FUSE_ROOT_ID + 1;
  int fail_fsyncs = 0;
  std::int64_t writes_left = -1; // write requests until the power goes off; -1: never
  std::uint64_t writes = 0;      // write requests served, ever
  bool off = false;              // every request that would change anything fails
  std::uint64_t pages_kept = 0, pages_dropped = 0;

  fuse_session* session = nullptr;
  std::thread loop;

  std::shared_ptr<node> get(fuse_ino_t ino) {
    auto it = inodes.find(ino);
    return it == inodes.end() ? nullptr : it->second;
  }
  std::shared_ptr<node> make(bool dir, mode_t mode) {
    auto n = std::make_shared<node>();
    n->ino = next_ino++;
    n->dir = dir;
    n->mode = (dir ? S_IFDIR : S_IFREG) | (mode & 07777);
    n->touch();
    inodes[n->ino] = n;
    return n;
  }
  void crash();
  void mount();
  void unmount();
};

namespace {

powerloss_fs::state& fs(fuse_req_t req) {
  return *static_cast<powerloss_fs::state*>(fuse_req_userdata(req));
}

// With the power off nothing changes any more: the request fails with EIO (replied here).
bool powered_off(fuse_req_t req, const powerloss_fs::state& s) {
  if (!s.off)
    return false;
  fuse_reply_err(req, EIO);
  return true;
}

void fill_stat(const node& n, struct stat& st) {
  std::memset(&st, 0, sizeof st);
  st.st_ino = n.ino;
  st.st_mode = n.mode;
  st.st_nlink = n.dir ? 2 : 1;
  st.st_size = n.dir ? 4096 : static_cast<off_t>(n.data.size());
  st.st_blksize = k_page;
  st.st_blocks = (st.st_size + 511) / 512;
  st.st_mtim = st.st_ctim = st.st_atim = n.mtime;
}

fuse_entry_param entry_of(const node& n) {
  fuse_entry_param e;
  std::memset(&e, 0, sizeof e);
  e.ino = n.ino;
  e.generation = 1;
  e.attr_timeout = 1.0;
  e.entry_timeout = 1.0;
  fill_stat(n, e.attr);
  return e;
}

// Looks up directory `parent` under the lock; replies ENOENT/ENOTDIR and returns null.
std::shared_ptr<node> directory(fuse_req_t req, powerloss_fs::state& s, fuse_ino_t parent) {
  auto d = s.get(parent);
  if (!d) {
    fuse_reply_err(req, ENOENT);
    return nullptr;
  }
  if (!d->dir) {
    fuse_reply_err(req, ENOTDIR);
    return nullptr;
  }
  return d;
}

void op_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  auto& s = fs(req);
  std::lock_guard l(s.mu);
  auto d = directory(req, s, parent);
  if (!d)
    return;
  auto it = d->entries.find(name);
  if (it == d->entries.end()) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  auto e = entry_of(*it->second);
  fuse_reply_entry(req, &e);
}

void op_getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  auto& s = fs(req);
  std::lock_guard l(s.mu);
  auto n = s.get(ino);
  if (!n) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  struct stat st;
  fill_stat(*n, st);
  fuse_reply_attr(req, &st, 1.0);
}

void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info*) {
  auto& s = fs(req);
  std::lock_guard l(s.mu);
  if (powered_off(req, s))
    return;
  auto n = s.get(ino);
  if (!n) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  if (to_set & FUSE_SET_ATTR_SIZE) {
    if (n->dir) {
      fuse_reply_err(req, EISDIR);
      return;
    }
    n->resize(static_cast<std::uint64_t>(attr->st_size));
  }
  if (to_set & FUSE_SET_ATTR_MODE)
    n->mode = (n->mode & S_IFMT) | (attr->st_mode & 07777);
  struct stat st;
  fill_stat(*n, st);
  fuse_reply_attr(req, &st, 1.0);
}

// Adds a new node named `name` to `parent`; replies and returns null when it cannot.
std::shared_ptr<node> add(fuse_req_t req, powerloss_fs::state& s, fuse_ino_t parent,
                          const char* name, bool dir, mode_t mode) {
  if (powered_off(req, s))
    return nullptr;
  auto d = directory(req, s, parent);
  if (!d)
    return nullptr;
  if (d->entries.count(name)) {
    fuse_reply_err(req, EEXIST);
    return nullptr;
  }
  auto n = s.make(dir, mode);
  d->entries[name] = n;
  d->touch();
  return n;
}

void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  auto& s = fs(req);
  std::lock_guard l(s.mu);
  if (auto n = add(req, s, parent, name, true, mode)) {
    auto e = entry_of(*n);
    fuse_reply_entry(req, &e);
  }
}

void op_create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode,
               fuse_file_info* fi) {
  auto& s = fs(req);
  std::lock_guard l(s.mu);
  if (auto n = add(req, s, parent, name, false, mode)) {
    auto e = entry_of(*n);
    fi->fh = n->ino;
    fuse_reply_create(req, &e, fi);
  }
}

void remove_entry(fuse_req_t req, fuse_ino_t parent, const char* name, bool dir) {
  auto& s = fs(req);
  std::lock_guard l(s.mu);
  if (powered_off(req, s))
    return;
  auto d = directory(req, s, parent);
  if (!d)
    return;
  auto it = d->entries.find(name);
  if (it == d->entries.end()) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  if (it->second->dir != dir) {
    fuse_reply_err(req, dir ? ENOTDIR : EISDIR);
    return;
  }
  if (dir && !it->second->entries.empty()) {
    fuse_reply_err(req, ENOTEMPTY);
    return;
  }
  d->entries.erase(it);
  d->touch();
  fuse_reply_err(req, 0);
}

void op_unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  remove_entry(req, parent, name, false);
}

void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  remove_entry(req, parent, name, true);
}

void op_rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newparent,
               const char* newname, unsigned int flags) {
  auto& s = fs(req);
  std::lock_guard l(s.mu);
  if (powered_off(req, s))
    return;
  if (flags != 0) {
    fuse_reply_err(req, EINVAL);
    return;
  }
  auto from = directory(req, s, parent);
  if (!from)
    return;
  auto to = directory(req, s, newparent);
  if (!to)
    return;
  auto it = from->entries.find(name);
  if (it == from->entries.end()) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  auto moved = it->second;
  from->entries.erase(it);
  to->entries[newname] = moved;
  from->touch();
  to->touch();
  fuse_reply_err(req, 0);
}

void op_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto& s = fs(req);
  std::lock_guard l(s.mu);
  auto n = s.get(ino);
  if (!n) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  if (n->dir) {
    fuse_reply_err(req, EISDIR);
    return;
  }
  if ((fi->flags & O_TRUNC) && powered_off(req, s))
    return;
  if (fi->flags & O_TRUNC)
    n->resize(0);
  fi->fh = ino;
  fuse_reply_open(req, fi);
}

void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  auto& s = fs(req);
  std::lock_guard l(s.mu);
  auto n = s.get(ino);
  if (!n) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  const auto at = static_cast<std::uint64_t>(off);
  if (at >= n->data.size()) {
    fuse_reply_buf(req, nullptr, 0);
    return;
  }
  fuse_reply_buf(req, n->data.data() + at, std::min<std::uint64_t>(size, n->data.size() - at));
}

void op_write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off,
              fuse_file_info*) {
  auto& s = fs(req);
  std::lock_guard l(s.mu);
  auto n = s.get(ino);
  if (s.writes_left == 0 && !s.off && n) {
    // The power goes off during this request: a random prefix of it reaches the page cache.
    s.off = true;
    n->write(buf, std::uniform_int_distribution<std::size_t>(0, size)(s.rng),
             static_cast<std::uint64_t>(off));
  }
  if (powered_off(req, s))
    return;
  if (s.writes_left > 0)
    --s.writes_left;
  ++s.writes;
  if (!n) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  n->write(buf, size, static_cast<std::uint64_t>(off));
  fuse_reply_write(req, size);
}

void op_fsync(fuse_req_t req, fuse_ino_t ino, int, fuse_file_info*) {
  auto& s = fs(req);
  std::lock_guard l(s.mu);
  if (powered_off(req, s))
    return;
  auto n = s.get(ino);
  if (!n) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  if (s.fail_fsyncs > 0) {
    --s.fail_fsyncs;
    fuse_reply_err(req, EIO);
    return;
  }
  n->sync();
  fuse_reply_err(req, 0);
}

void op_release(fuse_req_t req, fuse_ino_t, fuse_file_info*) {
  fuse_reply_err(req, 0);
}

void op_flush(fuse_req_t req, fuse_ino_t, fuse_file_info*) {
  fuse_reply_err(req, 0);
}

// A directory listing is taken whole at opendir; readdir hands it out by offset.
struct listing {
  std::vector<std::pair<std::string, struct stat>> entries;
};

void op_opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto& s = fs(req);
  std::lock_guard l(s.mu);
  auto d = directory(req, s, ino);
  if (!d)
    return;
  auto* out = new listing;
  struct stat st;
  fill_stat(*d, st);
  out->entries.emplace_back(".", st);
  out->entries.emplace_back("..", st);
  for (const auto& [name, n] : d->entries) {
    fill_stat(*n, st);
    out->entries.emplace_back(name, st);
  }
  fi->fh = reinterpret_cast<std::uint64_t>(out);
  fuse_reply_open(req, fi);
}

void op_readdir(fuse_req_t req, fuse_ino_t, size_t size, off_t off, fuse_file_info* fi) {
  auto* list = reinterpret_cast<listing*>(fi->fh);
  std::string buf(size, '\0');
  std::size_t used = 0;
  for (auto i = static_cast<std::size_t>(off); i < list->entries.size(); ++i) {
    const auto& [name, st] = list->entries[i];
    const std::size_t need = fuse_add_direntry(req, buf.data() + used, size - used, name.c_str(),
                                               &st, static_cast<off_t>(i + 1));
    if (need > size - used)
      break;
    used += need;
  }
  fuse_reply_buf(req, buf.data(), used);
}

void op_releasedir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  delete reinterpret_cast<listing*>(fi->fh);
  fuse_reply_err(req, 0);
}

void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int, fuse_file_info*) {
  auto& s = fs(req);
  std::lock_guard l(s.mu);
  if (powered_off(req, s))
    return;
  auto d = directory(req, s, ino);
  if (!d)
    return;
  d->synced_entries = d->entries;
  fuse_reply_err(req, 0);
}

void op_statfs(fuse_req_t req, fuse_ino_t) {
  struct statvfs st;
  std::memset(&st, 0, sizeof st);
  st.f_bsize = st.f_frsize = k_page;
  st.f_blocks = st.f_bfree = st.f_bavail = std::uint64_t{1} << 24;
  st.f_files = st.f_ffree = std::uint64_t{1} << 20;
  st.f_namemax = 255;
  fuse_reply_statfs(req, &st);
}

const fuse_lowlevel_ops k_ops = [] {
  fuse_lowlevel_ops o;
  std::memset(&o, 0, sizeof o);
  o.lookup = op_lookup;
  o.getattr = op_getattr;
  o.setattr = op_setattr;
  o.mkdir = op_mkdir;
  o.create = op_create;
  o.unlink = op_unlink;
  o.rmdir = op_rmdir;
  o.rename = op_rename;
  o.open = op_open;
  o.read = op_read;
  o.write = op_write;
  o.flush = op_flush;
  o.release = op_release;
  o.fsync = op_fsync;
  o.opendir = op_opendir;
  o.readdir = op_readdir;
  o.releasedir = op_releasedir;
  o.fsyncdir = op_fsyncdir;
  o.statfs = op_statfs;
  return o;
}();

} // namespace

void powerloss_fs::state::crash() {
  std::lock_guard l(mu);
  pages_kept = pages_dropped = 0;
  off = false;
  writes_left = -1;
  fail_fsyncs = 0;
  std::uniform_int_distribution<int> coin(0, 1);
  for (auto& [ino, n] : inodes) {
    if (n->dir) {
      n->entries = n->synced_entries;
      continue;
    }
    // How this file's unsynced pages fare: 0 none reach the disk, 1 all, 2-3 each by chance.
    const int mode = std::uniform_int_distribution<int>(0, 3)(rng);
    const std::uint64_t size =
      n->data.size() == n->synced.size() || coin(rng) ? n->data.size() : n->synced.size();
    std::string disk = n->synced;
    disk.resize(size, '\0');
    for (std::uint64_t p : n->dirty) {
      const std::uint64_t from = p * k_page;
      if (from >= size)
        continue;
      const bool kept = mode == 1 || (mode >= 2 && coin(rng));
      if (!kept) {
        ++pages_dropped;
        continue;
      }
      ++pages_kept;
      const std::uint64_t to = std::min(size, from + k_page);
      for (std::uint64_t i = from; i < to; ++i)
        disk[i] = i < n->data.size() ? n->data[i] : '\0';
    }
    n->data = disk;
    n->synced = std::move(disk);
    n->dirty.clear();
  }
  // Only what the directories still reach exists after the crash.
  std::unordered_map<fuse_ino_t, std::shared_ptr<node>> reachable;
  std::vector<std::shared_ptr<node>> todo{inodes.at(FUSE_ROOT_ID)};
  while (!todo.empty()) {
    auto n = todo.back();
    todo.pop_back();
    if (!reachable.emplace(n->ino, n).second)
      continue;
    for (const auto& [name, child] : n->entries)
      todo.push_back(child);
  }
  inodes = std::move(reachable);
}

void powerloss_fs::state::mount() {
  const char* argv[] = {"sandboxd-powerloss-fs", "-o", "fsname=powerloss,subtype=sandboxd"};
  fuse_args args = FUSE_ARGS_INIT(3, const_cast<char**>(argv));
  session = fuse_session_new(&args, &k_ops, sizeof k_ops, this);
  if (session == nullptr)
    throw std::runtime_error("powerloss_fs: fuse_session_new failed");
  if (fuse_session_mount(session, mountpoint.c_str()) != 0) {
    fuse_session_destroy(session);
    session = nullptr;
    throw std::runtime_error("powerloss_fs: cannot mount FUSE on " + mountpoint);
  }
  loop = std::thread([this] {
    fuse_loop_config* config = fuse_loop_cfg_create();
    fuse_loop_cfg_set_max_threads(config, 8);
    fuse_session_loop_mt(session, config);
    fuse_loop_cfg_destroy(config);
  });
}

void powerloss_fs::state::unmount() {
  if (session == nullptr)
    return;
  fuse_session_exit(session);
  // Ends the connection: the loop's reads of /dev/fuse return and its threads end.
  fuse_session_unmount(session);
  if (loop.joinable())
    loop.join();
  fuse_session_destroy(session);
  session = nullptr;
}

namespace {

// The server process's side: serves FUSE on `mountpoint` and answers the owner's commands
// on `sock` (one byte, an i64 argument; an i64 or u64 pair back) until `q` or end of file.
[[noreturn]] void serve(const std::string& mountpoint, std::uint64_t seed, int sock) {
  powerloss_fs::state s;
  s.mountpoint = mountpoint;
  s.rng.seed(seed);
  auto root = std::make_shared<node>();
  root->ino = FUSE_ROOT_ID;
  root->dir = true;
  root->mode = S_IFDIR | 0755;
  root->touch();
  s.inodes[FUSE_ROOT_ID] = root;
  std::string hello = "ok";
  try {
    s.mount();
  } catch (const std::exception& e) {
    hello = e.what();
  }
  (void)!::write(sock, hello.data(), hello.size());
  if (hello != "ok")
    ::_exit(1);
  for (;;) {
    char command[9];
    const ssize_t n = ::read(sock, command, sizeof command);
    if (n < 0 && errno == EINTR)
      continue;
    if (n != static_cast<ssize_t>(sizeof command) || command[0] == 'q')
      break;
    std::int64_t arg;
    std::memcpy(&arg, command + 1, sizeof arg);
    std::uint64_t reply[2] = {0, 0};
    switch (command[0]) {
    case 'c':
      s.unmount();
      s.crash();
      s.mount();
      break;
    case 'f': {
      std::lock_guard l(s.mu);
      s.fail_fsyncs = static_cast<int>(arg);
      break;
    }
    case 'o': {
      std::lock_guard l(s.mu);
      s.writes_left = arg;
      break;
    }
    case 's': {
      std::lock_guard l(s.mu);
      reply[0] = s.pages_kept;
      reply[1] = s.pages_dropped;
      break;
    }
    case 'p': {
      std::lock_guard l(s.mu);
      reply[0] = s.off;
      reply[1] = s.writes;
      break;
    }
    }
    if (::write(sock, reply, sizeof reply) != static_cast<ssize_t>(sizeof reply))
      break;
  }
  s.unmount();
  char done = 'q';
  (void)!::write(sock, &done, 1);
  ::_exit(0);
}

} // namespace

// The owner's side: the server process, the command socket, and a guardian that unmounts
// lazily if the owner dies without its destructor.
struct powerloss_fs::owner {
  std::string mountpoint;
  pid_t server = -1;
  int sock = -1;
  std::unique_ptr<guardian> cleanup;

  std::array<std::uint64_t, 2> call(char c, std::int64_t arg = 0) {
    char command[9];
    command[0] = c;
    std::memcpy(command + 1, &arg, sizeof arg);
    std::array<std::uint64_t, 2> reply{};
    if (::write(sock, command, sizeof command) != static_cast<ssize_t>(sizeof command) ||
        ::read(sock, reply.data(), sizeof reply) != static_cast<ssize_t>(sizeof reply))
      throw std::runtime_error("powerloss_fs: the server process on " + mountpoint +
                               " does not answer");
    return reply;
  }
};

powerloss_fs::powerloss_fs(const std::string& mountpoint, std::uint64_t seed)
    : owner_(std::make_unique<owner>()) {
  owner_->mountpoint = mountpoint;
  // Its own process: a test process that dies while one of its threads waits for the file
  // system could otherwise never finish dying (its server threads die first).
  owner_->cleanup =
    std::make_unique<guardian>("umount -l " + shell_quote(mountpoint) + " 2>/dev/null");
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0)
    throw std::runtime_error(std::string("powerloss_fs: socketpair: ") + std::strerror(errno));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0)
    throw std::runtime_error(std::string("powerloss_fs: fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent)
      ::_exit(1);
    serve(mountpoint, seed, fds[1]);
  }
  ::close(fds[1]);
  owner_->server = pid;
  owner_->sock = fds[0];
  char hello[512];
  const ssize_t n = ::read(owner_->sock, hello, sizeof hello);
  const std::string said = n > 0 ? std::string(hello, static_cast<std::size_t>(n)) : "";
  if (said != "ok") {
    ::close(owner_->sock);
    ::waitpid(pid, nullptr, 0);
    throw std::runtime_error(said.empty() ? "powerloss_fs: the server process failed" : said);
  }
}

powerloss_fs::~powerloss_fs() {
  char command[9] = {'q'};
  if (::write(owner_->sock, command, sizeof command) == static_cast<ssize_t>(sizeof command)) {
    char done;
    (void)!::read(owner_->sock, &done, 1);
  }
  ::close(owner_->sock);
  ::waitpid(owner_->server, nullptr, 0);
  owner_->cleanup.reset();
}

const std::string& powerloss_fs::path() const {
  return owner_->mountpoint;
}

void powerloss_fs::crash() {
  owner_->call('c');
}

void powerloss_fs::fail_next_fsyncs(int n) {
  owner_->call('f', n);
}

void powerloss_fs::power_off_after_writes(std::int64_t n) {
  owner_->call('o', n);
}

bool powerloss_fs::powered_off() const {
  return owner_->call('p')[0] != 0;
}

std::uint64_t powerloss_fs::write_requests() const {
  return owner_->call('p')[1];
}

std::uint64_t powerloss_fs::pages_kept_at_last_crash() const {
  return owner_->call('s')[0];
}

std::uint64_t powerloss_fs::pages_dropped_at_last_crash() const {
  return owner_->call('s')[1];
}

std::string powerloss_fs::unavailable_reason() {
  if (::geteuid() != 0)
    return "mounting the power-loss file system (FUSE) needs root";
  if (::access("/dev/fuse", R_OK | W_OK) != 0)
    return std::string("/dev/fuse is not usable: ") + std::strerror(errno);
  return "";
}

} // namespace sandboxd::test
