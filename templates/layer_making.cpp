#include "templates/layer_making.hpp"

#include "runtime/beneath.hpp"
#include "runtime/template_store.hpp"

#include <cerrno>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace sandboxd::templates {
namespace {

using runtime::unique_fd;

// make_layer with the guard first, for the callers below.
template <class Fill>
result<made_layer> make(runtime::layer_store& store, const commit_guard& guard, Fill fill) {
  return make_layer(store, fill, guard);
}

// Sets every mtime below (and of) the directory `dir` to 0, by handle.
void zero_times(int dir) {
  const struct timespec zero[2] = {{0, 0}, {0, 0}};
  int fd = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = fd < 0 ? nullptr : ::fdopendir(fd);
  if (d == nullptr) {
    if (fd >= 0)
      ::close(fd);
    throw std::system_error(errno, std::generic_category(), "read a layer being made");
  }
  std::vector<std::string> subdirs;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..")
      continue;
    if (e->d_type == DT_DIR)
      subdirs.push_back(n);
    else
      ::utimensat(dir, n.c_str(), zero, AT_SYMLINK_NOFOLLOW);
  }
  ::closedir(d);
  for (const auto& n : subdirs) {
    unique_fd sub = runtime::open_beneath(dir, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    if (sub)
      zero_times(sub.get());
  }
  ::futimens(dir, zero);
}

} // namespace

result<made_layer>
make_layer(runtime::layer_store& store,
           const std::function<result<void>(runtime::layer_staging&, write_report&)>& fill,
           const commit_guard& guard) {
  runtime::layer_staging s = store.begin();
  made_layer out;
  try {
    auto r = fill(s, out.report);
    if (!r) {
      store.discard(s);
      return r.err();
    }
    auto commit = [&] { return store.commit(std::move(s)); };
    out.layer = guard ? guard(commit) : commit();
  } catch (const std::exception& e) {
    store.discard(s);
    return make_error(errc::internal, std::string("making a layer failed: ") + e.what());
  }
  return out;
}

result<made_layer> layer_from_tar(runtime::layer_store& store, chunk_source source,
                                  const import_limits& limits, whiteouts mode,
                                  const commit_guard& guard) {
  return make(store, guard, [&](runtime::layer_staging& s, write_report& report) -> result<void> {
    layer_writer w(s.fd.get(), limits, mode, &s.known);
    auto r = extract_tar(std::move(source), w);
    report = w.report();
    return r;
  });
}

result<made_layer> layer_above(runtime::layer_store& store, chunk_source source,
                               const std::string& lower, const import_limits& limits,
                               const commit_guard& guard) {
  unique_fd path_fd = store.open(lower);
  if (!path_fd)
    return make_error(errc::not_found, "layer " + lower + " is not in the layer store");
  unique_fd lower_fd(::openat(path_fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!lower_fd)
    return make_error(errc::internal, "cannot open layer " + lower);
  return make(store, guard, [&](runtime::layer_staging& s, write_report& report) -> result<void> {
    layer_writer w(s.fd.get(), limits, whiteouts::literal, &s.known);
    auto r = extract_tar_above(std::move(source), lower_fd.get(), w);
    report = w.report();
    if (!r)
      return r.err();
    return {};
  });
}

result<made_layer> base_layer(runtime::layer_store& store, const commit_guard& guard) {
  if (auto why = runtime::base_tree_unavailable())
    return make_error(errc::unavailable, *why);
  return make(store, guard, [&](runtime::layer_staging& s, write_report&) -> result<void> {
    runtime::write_base_tree(store.path() + "/" + s.name);
    zero_times(s.fd.get());
    return {};
  });
}

result<made_layer> sandboxd_layer(runtime::layer_store& store, const commit_guard& guard) {
  return make(store, guard, [&](runtime::layer_staging& s, write_report&) -> result<void> {
    const int root = s.fd.get();
    if (::mkdirat(root, "workspace", 0755) != 0 || ::mkdirat(root, "tmp", 0755) != 0 ||
        ::fchmodat(root, "tmp", 01777, 0) != 0 || ::fchmodat(root, "workspace", 0755, 0) != 0)
      throw std::system_error(errno, std::generic_category(), "make the sandboxd layer");
    unique_fd keep(
      ::openat(root, "tmp/.sandboxd-keep", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (!keep)
      throw std::system_error(errno, std::generic_category(), "make the sandboxd layer");
    keep.reset();
    zero_times(root);
    return {};
  });
}

} // namespace sandboxd::templates
