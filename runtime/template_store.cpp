#include "runtime/template_store.hpp"

#include "base/sha256.hpp"

#include "runtime/beneath.hpp"
#include "runtime/child_process.hpp"
#include "runtime/names.hpp"
#include "runtime/tree_walk.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <random>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

namespace sandboxd::runtime {
namespace {

constexpr const char* k_busybox = "/bin/busybox";

std::string random_name() {
  std::random_device rd;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08x%08x", rd(), rd());
  return buf;
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out)
    throw std::runtime_error("cannot write " + p.string());
}

// `target` is exactly <name>-<16 lowercase hex digits>, for a valid template name.
bool is_template_dir_name(const std::string& name, const std::string& target) {
  if (!is_valid_name(name) || target.size() != name.size() + 17 ||
      target.compare(0, name.size(), name) != 0 || target[name.size()] != '-')
    return false;
  for (size_t i = name.size() + 1; i < target.size(); ++i)
    if (!((target[i] >= '0' && target[i] <= '9') || (target[i] >= 'a' && target[i] <= 'f')))
      return false;
  return true;
}

// Opens `name` directly beneath `dirfd` as a directory, following no symlink at all.
unique_fd open_template_dir(int dirfd, const std::string& name) {
  return open_beneath(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW);
}

} // namespace

std::string hash_tree(const std::string& dir) {
  std::vector<fs::path> paths;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator();
       ++it)
    paths.push_back(it->path());
  std::sort(paths.begin(), paths.end());
  sandboxd::sha256 h;
  std::vector<char> buf(1 << 16);
  for (const auto& p : paths) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0)
      throw std::runtime_error("cannot stat " + p.string());
    h.add(fs::relative(p, dir).string());
    h.add(std::string(1, '\0') + std::to_string(st.st_mode) + '\0');
    if (S_ISLNK(st.st_mode)) {
      h.add(fs::read_symlink(p).string());
    } else if (S_ISREG(st.st_mode)) {
      std::ifstream in(p, std::ios::binary);
      while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0)
        h.add(std::string_view(buf.data(), static_cast<size_t>(in.gcount())));
    }
    h.add(std::string_view("\n", 1));
  }
  return to_hex(h.finish());
}

template_store::template_store(std::string data_dir) : dir_(std::move(data_dir) + "/templates") {
  fs::create_directories(dir_);
}

outcome<std::string> template_store::rootfs(const std::string& name) {
  if (auto c = check_template_name(name); !c)
    return c.err();
  std::lock_guard<std::mutex> g(mutex_);
  if (auto it = known_.find(name); it != known_.end())
    return it->second;
  auto found = guard_faults("template " + name, [&]() -> outcome<std::string> {
    auto r = resolve(name);
    if (!r && r.code() == errc::not_found && name == "base")
      return build_base();
    return r;
  });
  if (found)
    known_[name] = found.value();
  return found;
}

outcome<std::string> template_store::resolve(const std::string& name) const {
  unique_fd top(::open(dir_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!top)
    throw std::system_error(errno, std::generic_category(), "open " + dir_);
  char buf[k_max_name_length + 32];
  ssize_t n = ::readlinkat(top.get(), name.c_str(), buf, sizeof buf);
  if (n < 0 && errno == ENOENT)
    return make_error(errc::not_found,
                      "template " + name + " is not built; use base, or build it first");
  if (n < 0 && errno != EINVAL)
    throw std::system_error(errno, std::generic_category(), "readlink " + dir_ + "/" + name);
  auto refused = [&](const std::string& why) {
    return make_error(errc::permission_denied, "template " + name + " in " + dir_ + " " + why +
                                                 "; remove it and build the template again");
  };
  if (n < 0)
    return refused("is not a link to a template directory");
  std::string target(buf, static_cast<size_t>(n));
  if (!is_template_dir_name(name, target))
    return refused("points at '" + target + "', not at a " + name + "-<hash> directory beside it");
  if (!open_template_dir(top.get(), target))
    return refused("points at " + target + ", which is not a directory");
  return dir_ + "/" + target;
}

outcome<unique_fd> template_store::open_rootfs(const std::string& dir) const {
  auto slash = dir.rfind('/');
  std::string target = slash == std::string::npos ? dir : dir.substr(slash + 1);
  auto dash = target.size() > 17 ? target.size() - 17 : 0;
  bool inside = slash != std::string::npos && dir.substr(0, slash) == dir_;
  if (!inside || dash == 0 || !is_template_dir_name(target.substr(0, dash), target))
    return make_error(errc::permission_denied, dir + " is not a template directory inside " + dir_ +
                                                 "; recreate the sandbox");
  unique_fd top(::open(dir_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!top)
    throw std::system_error(errno, std::generic_category(), "open " + dir_);
  unique_fd fd = open_template_dir(top.get(), target);
  if (!fd)
    return make_error(errc::permission_denied, dir + " is not a directory; recreate the sandbox");
  return fd;
}

void template_store::discard(const std::string& staging) const noexcept {
  try {
    unique_fd top(::open(dir_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (top && fs::path(staging).parent_path() == dir_)
      remove_tree_at(top.get(), fs::path(staging).filename().string());
  } catch (...) {
    // Left for the operator; a staging directory is never taken for a template.
  }
}

std::string template_store::publish(const std::string& name, const std::string& staging) {
  std::string final_name = name + "-" + hash_tree(staging).substr(0, 16);
  fs::path final_dir = fs::path(dir_) / final_name;
  if (::rename(staging.c_str(), final_dir.c_str()) != 0) {
    if (errno != EEXIST && errno != ENOTEMPTY)
      throw std::runtime_error("cannot move template into " + final_dir.string());
    discard(staging); // the same content is already there
  }
  fs::path tmp_link = fs::path(dir_) / (".link-" + random_name());
  fs::create_symlink(final_name, tmp_link);
  fs::rename(tmp_link, fs::path(dir_) / name);
  return final_dir.string();
}

std::optional<std::string> base_tree_unavailable() {
  if (::access(k_busybox, X_OK) != 0)
    return std::string("template base needs /bin/busybox; install busybox-static");
  return std::nullopt;
}

void write_base_tree(const std::string& dir) {
  const fs::path root(dir);
  for (const char* d : {"bin", "sbin", "usr/bin", "usr/sbin", "usr/local/bin", "etc", "root", "tmp",
                        "proc", "sys", "dev", "workspace", "var/tmp", "home", "run"})
    fs::create_directories(root / d);
  fs::copy_file(k_busybox, root / "bin/busybox");
  fs::permissions(root / "bin/busybox", fs::perms(0755));
  process_options list;
  list.argv = {k_busybox, "--list-full"};
  auto r = run_process(list);
  if (r.exit_code != 0)
    throw std::runtime_error("busybox --list-full failed: " + r.err);
  size_t pos = 0;
  while (pos < r.out.size()) {
    size_t nl = r.out.find('\n', pos);
    if (nl == std::string::npos)
      nl = r.out.size();
    std::string applet = r.out.substr(pos, nl - pos);
    pos = nl + 1;
    if (applet.empty() || applet == "bin/busybox" || applet.find("..") != std::string::npos)
      continue;
    fs::create_directories((root / applet).parent_path());
    if (!fs::exists(fs::symlink_status(root / applet)))
      fs::create_symlink("/bin/busybox", root / applet);
  }
  write_text(
    root / "etc/passwd",
    "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n");
  write_text(root / "etc/group", "root:x:0:\nnogroup:x:65534:\n");
  write_text(root / "etc/hosts", "127.0.0.1 localhost\n::1 localhost\n");
  write_text(root / "etc/hostname", "sandbox\n");
  write_text(root / "tmp/.sandboxd-keep", "");
  fs::permissions(root / "tmp", fs::perms(01777));
  fs::permissions(root / "var/tmp", fs::perms(01777));
}

outcome<std::string> template_store::build_base() {
  if (auto why = base_tree_unavailable())
    return make_error(errc::unavailable, *why);
  fs::path root = fs::path(dir_) / (".build-" + random_name());
  try {
    write_base_tree(root.string());
    return publish("base", root.string());
  } catch (...) {
    discard(root.string());
    throw;
  }
}

outcome<std::string> template_store::build_debian(const std::string& suite,
                                                  const std::string& mirror) {
  std::lock_guard<std::mutex> g(mutex_);
  return guard_faults("template debian", [&]() -> outcome<std::string> {
    std::string tool = find_program("debootstrap");
    if (tool.empty())
      return make_error(errc::unavailable, "building template debian needs debootstrap; "
                                           "apt-get install debootstrap");
    fs::path root = fs::path(dir_) / (".build-" + random_name());
    process_options o;
    o.argv = {tool, "--variant=minbase", suite, root.string(), mirror};
    o.max_output_bytes = 64 << 10;
    auto r = run_process(o);
    if (r.exit_code != 0) {
      discard(root.string());
      return make_error(errc::internal, "debootstrap failed: " + r.err);
    }
    fs::create_directories(root / "workspace");
    write_text(root / "tmp/.sandboxd-keep", "");
    return known_["debian"] = publish("debian", root.string());
  });
}

} // namespace sandboxd::runtime
