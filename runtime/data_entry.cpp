#include "runtime/data_entry.hpp"

#include "runtime/overlay_mount.hpp"

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <sys/mount.h>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace fs = std::filesystem;

namespace sandboxd::runtime {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

bool same_directory(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

void make_searchable_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0711) != 0 && errno != EEXIST)
    fail("mkdir " + path);
  if (::chmod(path.c_str(), 0711) != 0)
    fail("chmod " + path);
}

// Whether anything is mounted strictly below `path` (/proc/self/mountinfo's fifth field).
bool mounted_below(const std::string& path) {
  std::ifstream in("/proc/self/mountinfo");
  const std::string prefix = path + "/";
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string id, parent, device, root, point;
    if (f >> id >> parent >> device >> root >> point && point.rfind(prefix, 0) == 0)
      return true;
  }
  return false;
}

} // namespace

bool ancestors_searchable(const std::string& path) {
  for (fs::path p = fs::path(path).parent_path(); !p.empty(); p = p.parent_path()) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0 || (st.st_mode & S_IXOTH) == 0)
      return false;
    if (p == p.root_path())
      break;
  }
  return true;
}

std::string entry_path(const std::string& data_dir, const std::string& entry_root) {
  char name[17];
  std::snprintf(name, sizeof name, "%016zx", std::hash<std::string>{}(data_dir));
  return entry_root + "/" + name;
}

data_entry::data_entry(const std::string& data_dir, const std::string& entry_root) {
  fs::create_directories(data_dir);
  data_dir_ = fs::canonical(data_dir).string();
  path_ = data_dir_;
  if (ancestors_searchable(data_dir_))
    return;
  fs::create_directories(entry_root);
  make_searchable_dir(entry_root);
  if (!ancestors_searchable(entry_root + "/x"))
    throw std::invalid_argument("neither the data directory " + data_dir_ + " nor " + entry_root +
                                " can be reached by other users; make a directory above one "
                                "of them searchable (chmod o+x)");
  const std::string entry = entry_path(data_dir_, entry_root);
  make_searchable_dir(entry);
  if (is_mount_point(entry)) {
    if (!same_directory(entry, data_dir_))
      throw std::invalid_argument(entry + " is mounted, but not from " + data_dir_ +
                                  "; unmount it");
  } else if (::mount(data_dir_.c_str(), entry.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
    fail("bind " + data_dir_ + " at " + entry);
  }
  path_ = entry;
}

data_entry::~data_entry() {
  if (!bound())
    return;
  if (mounted_below(path_))
    return; // memory-paused sandboxes outlive this process: the next driver takes it over
  ::umount2(path_.c_str(), MNT_DETACH);
  ::rmdir(path_.c_str());
  ::rmdir(fs::path(path_).parent_path().c_str()); // the entry root, when no other is in it
}

} // namespace sandboxd::runtime
