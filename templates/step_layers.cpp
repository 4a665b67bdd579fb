#include "templates/step_layers.hpp"

#include "runtime/beneath.hpp"
#include "templates/build_spec.hpp"
#include "templates/tree_entries.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <sys/stat.h>
#include <sys/xattr.h>

namespace sandboxd::templates {
namespace {

using runtime::open_beneath;
using runtime::unique_fd;

using entry_sink = std::function<result<void>(const entry_header&, const data_reader&)>;

const data_reader k_no_data = [](char*, std::size_t) { return 0L; };

std::string join(const std::vector<std::string>& parts, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n && i < parts.size(); ++i)
    out += (i ? "/" : "") + parts[i];
  return out;
}

bool is_opaque(int dir) {
  char v = 0;
  return ::fgetxattr(dir, "trusted.overlay.opaque", &v, 1) == 1 && v == 'y';
}

// The directory `parts` as the stack (hex digests, lowest first) shows it: the lstat of the
// topmost layer's directory there, or nullopt when the stack shows none there (missing,
// whited out, hidden by an opaque directory above it, or not a directory).
std::optional<struct stat> stack_dir(runtime::layer_store& store,
                                     const std::vector<std::string>& stack,
                                     const std::vector<std::string>& parts) {
  for (auto layer = stack.rbegin(); layer != stack.rend(); ++layer) {
    unique_fd path_fd = store.open(*layer);
    if (!path_fd)
      continue;
    unique_fd cur(::openat(path_fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!cur)
      continue;
    bool hides_below = false;
    std::size_t i = 0;
    for (; i < parts.size(); ++i) {
      struct stat st {};
      if (::fstatat(cur.get(), parts[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
        break; // not in this layer: the layers below decide
      if (!S_ISDIR(st.st_mode))
        return std::nullopt; // a file, a symlink or a whiteout hides everything below
      unique_fd next = open_beneath(cur.get(), parts[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      if (!next)
        return std::nullopt;
      cur = std::move(next);
      if (i + 1 < parts.size() && is_opaque(cur.get()))
        hides_below = true;
    }
    if (i == parts.size()) {
      struct stat st {};
      if (::fstat(cur.get(), &st) != 0)
        return std::nullopt;
      return st;
    }
    if (hides_below)
      return std::nullopt;
  }
  return std::nullopt;
}

// A directory entry at `path` ("" the root) with the stack's owner, mode and time there, or
// root's 0755 at time 0 where the stack has none.
entry_header stack_dir_entry(runtime::layer_store& store, const std::vector<std::string>& stack,
                             const std::vector<std::string>& parts) {
  entry_header h;
  h.path = parts.empty() ? "." : join(parts, parts.size());
  h.type = entry_type::directory;
  h.mode = 0755;
  if (auto st = stack_dir(store, stack, parts)) {
    h.mode = st->st_mode & 07777;
    h.uid = st->st_uid;
    h.gid = st->st_gid;
    h.mtime = st->st_mtim.tv_sec;
    h.mtime_nsec = st->st_mtim.tv_nsec;
  }
  return h;
}

std::uint32_t sandbox_id_of(std::uint32_t host, std::uint32_t base) {
  return host >= base && host - base <= 65535 ? host - base : 65534;
}

// Feeds what a COPY writes to `sink`: the destination directory and its parents as the stack
// shows them, then each source's entries (owner root, mtime 0).
result<void> copy_entries(runtime::layer_store& store, const build_context& context,
                          const copy_plan& plan, const entry_sink& sink) {
  const auto dest = path_components(plan.destination);
  const bool into_dir = plan.destination.back() == '/' || plan.sources.size() > 1;
  // The directory the entries go into, and for a single file copied to a file path, its name.
  std::vector<std::string> dir = dest;
  std::string file_name;
  std::vector<std::pair<unique_fd, std::vector<std::string>>> sources; // (parent, parts)
  for (const auto& s : plan.sources) {
    auto parts = copy_source_parts(s);
    if (!parts)
      return parts.err();
    unique_fd parent(::fcntl(context.root(), F_DUPFD_CLOEXEC, 0));
    for (std::size_t i = 0; parent && i + 1 < parts->size(); ++i)
      parent = open_beneath(parent.get(), (*parts)[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    struct stat st {};
    if (!parent || (!parts->empty() &&
                    ::fstatat(parent.get(), parts->back().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0))
      return make_error(
        errc::not_found,
        "COPY source '" + s + "' is not in the build context" +
          (context.empty()
             ? " (none was sent: give the build a context "
               "directory)"
             : (errno == ELOOP || errno == ENOTDIR ? " (a symlink or file is on its way)" : "")));
    if (!parts->empty() && !S_ISDIR(st.st_mode) && !into_dir) {
      if (dest.empty())
        return make_error(errc::invalid_argument,
                          "COPY of the file '" + s + "' to / needs a file name (or end it in /)");
      file_name = dir.back();
      dir.pop_back();
    }
    sources.emplace_back(std::move(parent), std::move(parts).value());
  }
  for (std::size_t n = 0; n <= dir.size(); ++n) {
    const std::vector<std::string> prefix(dir.begin(), dir.begin() + static_cast<long>(n));
    if (auto r = sink(stack_dir_entry(store, plan.stack, prefix), k_no_data); !r)
      return r;
  }
  const std::string base = join(dir, dir.size());
  auto under = [&](const std::string& rel) { return base.empty() ? rel : base + "/" + rel; };
  auto as_copied = [&](tree_entry e, const std::string& path) {
    e.header.path = path;
    e.header.uid = e.header.gid = 0;
    e.header.mtime = e.header.mtime_nsec = 0;
    e.header.xattrs.clear();
    if (e.header.type == entry_type::hardlink)
      e.header.link = under(e.header.link);
    return e;
  };
  for (const auto& [parent, parts] : sources) {
    struct stat st {};
    const bool whole = parts.empty();
    if (!whole && ::fstatat(parent.get(), parts.back().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      return make_error(errc::internal, "the build context changed during the build");
    if (whole || S_ISDIR(st.st_mode)) {
      unique_fd top =
        whole ? unique_fd(::fcntl(context.root(), F_DUPFD_CLOEXEC, 0))
              : open_beneath(parent.get(), parts.back(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      if (!top)
        return make_error(errc::internal, "cannot open '" + join(parts, parts.size()) +
                                            "' of the build context: " + std::strerror(errno));
      auto r = walk_entries(top.get(), [&](const tree_entry& e, const data_reader& read) {
        return sink(as_copied(e, under(e.header.path)).header, read);
      });
      if (!r)
        return r;
      continue;
    }
    const std::string target = under(file_name.empty() ? parts.back() : file_name);
    auto e = entry_at(parent.get(), parts.back(), target);
    if (!e)
      return e.err();
    auto r = visit_entry(
      parent.get(), parts.back(), as_copied(e.value(), target),
      [&](const tree_entry& c, const data_reader& read) { return sink(c.header, read); });
    if (!r)
      return r;
  }
  return {};
}

} // namespace

result<upper_baseline> baseline_of(int upper) {
  upper_baseline out;
  auto r = walk_entries(upper, [&](const tree_entry& e, const data_reader&) -> result<void> {
    out[e.header.path] = {e.inode, e.ctime_ns};
    return {};
  });
  if (!r)
    return r.err();
  return out;
}

result<std::optional<made_layer>> layer_of_upper(runtime::layer_store& store, int upper,
                                                 std::uint32_t host_id_base,
                                                 const upper_baseline& before,
                                                 const std::vector<std::string>& stack,
                                                 const import_limits& limits) {
  // What the step changed: entries new or changed since `before`, and the directories above.
  auto now = baseline_of(upper);
  if (!now)
    return now.err();
  std::set<std::string> keep;
  for (const auto& [path, id] : *now) {
    auto was = before.find(path);
    if (was != before.end() && was->second == id)
      continue;
    for (std::string p = path; !p.empty() && keep.insert(p).second;) {
      const auto slash = p.rfind('/');
      p = slash == std::string::npos ? "" : p.substr(0, slash);
    }
  }
  if (keep.empty())
    return std::optional<made_layer>();
  auto m = make_layer(store, [&](runtime::layer_staging& s, write_report& report) -> result<void> {
    layer_writer w(s.fd.get(), limits, whiteouts::literal);
    if (auto r = w.add(stack_dir_entry(store, stack, {}), k_no_data); !r)
      return r;
    auto r = walk_entries(upper, [&](const tree_entry& e, const data_reader& read) -> result<void> {
      if (!keep.count(e.header.path))
        return {};
      if (!e.overlay_xattr.empty())
        return make_error(errc::internal,
                          "the build step left " + e.header.path +
                            " with the overlayfs attribute " + e.overlay_xattr +
                            ", which a layer cannot hold (is overlayfs' redirect_dir or metacopy "
                            "on? sandboxd needs both off)");
      if (e.header.type == entry_type::char_device && e.major == 0 && e.minor == 0)
        return w.whiteout(e.header.path);
      entry_header h = e.header;
      h.uid = sandbox_id_of(h.uid, host_id_base);
      h.gid = sandbox_id_of(h.gid, host_id_base);
      if (auto a = w.add(h, read); !a)
        return a;
      if (e.opaque && e.header.type == entry_type::directory)
        return w.make_opaque(e.header.path);
      return {};
    });
    if (!r)
      return r;
    auto f = w.finish();
    report = w.report();
    return f;
  });
  if (!m)
    return m.err();
  return std::optional<made_layer>(std::move(m).value());
}

result<std::unique_ptr<build_context>> build_context::receive(runtime::layer_store& store,
                                                              chunk_source source,
                                                              const import_limits& limits) {
  std::unique_ptr<build_context> context(new build_context(store, store.begin()));
  const void* first = nullptr;
  std::string why;
  const long n = source(&first, &why);
  if (n < 0)
    return make_error(errc::invalid_argument, "the build context could not be read: " + why);
  if (n == 0)
    return context; // no context: a spec without COPY needs none
  context->empty_ = false;
  bool replayed = false;
  chunk_source rest = [&](const void** data, std::string* w) -> long {
    if (!replayed) {
      replayed = true;
      *data = first;
      return n;
    }
    return source(data, w);
  };
  layer_writer w(context->root(), limits, whiteouts::literal);
  if (auto r = extract_tar(std::move(rest), w); !r)
    return make_error(r.code(), "build context: " + r.err().message);
  return context;
}

build_context::~build_context() {
  store_.discard(staging_);
}

result<sha256_digest> copied_files(runtime::layer_store& store, const build_context& context,
                                   const copy_plan& plan, const import_limits& limits) {
  sandboxd::sha256 h;
  std::vector<char> buf(1 << 16);
  std::uint64_t total = 0;
  auto r = copy_entries(
    store, context, plan, [&](const entry_header& e, const data_reader& read) -> result<void> {
      h.add(e.path);
      h.add(std::string_view("\0", 1));
      h.add(std::to_string(static_cast<int>(e.type)) + " " + std::to_string(stored_mode(e.mode)) +
            " " + std::to_string(e.uid) + " " + std::to_string(e.gid) + " " +
            std::to_string(e.mtime) + " " + std::to_string(e.size) + " ");
      h.add(e.link);
      h.add(std::string_view("\0", 1));
      for (long n; (n = read(buf.data(), buf.size())) > 0;) {
        total += static_cast<std::uint64_t>(n);
        if (total > limits.max_bytes)
          return make_error(errc::too_large,
                            "COPY copies more than " + std::to_string(limits.max_bytes) + " bytes");
        h.add(std::string_view(buf.data(), static_cast<std::size_t>(n)));
      }
      h.add("\n");
      return {};
    });
  if (!r)
    return r.err();
  return h.finish();
}

result<made_layer> layer_of_copy(runtime::layer_store& store, const build_context& context,
                                 const copy_plan& plan, const import_limits& limits) {
  return make_layer(store, [&](runtime::layer_staging& s, write_report& report) -> result<void> {
    layer_writer w(s.fd.get(), limits, whiteouts::literal);
    auto r =
      copy_entries(store, context, plan,
                   [&](const entry_header& e, const data_reader& read) { return w.add(e, read); });
    if (!r)
      return r;
    auto f = w.finish();
    report = w.report();
    return f;
  });
}

} // namespace sandboxd::templates
