#include "templates/image_spool.hpp"

#include "base/sha256.hpp"
#include "templates/layer_writer.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace sandboxd::templates {
namespace {

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts)
    out += (out.empty() ? "" : "/") + p;
  return out;
}

// A link target inside the archive, relative to the directory of `from` (or to the root
// when absolute), as a normalised path; nullopt when it leaves the archive.
std::optional<std::string> resolve_link(const std::vector<std::string>& from,
                                        const std::string& target, bool relative_to_parent) {
  std::vector<std::string> out;
  if (relative_to_parent && !target.empty() && target[0] != '/')
    out.assign(from.begin(), from.end() - (from.empty() ? 0 : 1));
  std::size_t at = 0;
  while (at <= target.size()) {
    auto slash = target.find('/', at);
    if (slash == std::string::npos)
      slash = target.size();
    std::string c = target.substr(at, slash - at);
    at = slash + 1;
    if (c.empty() || c == ".")
      continue;
    if (c == "..") {
      if (out.empty())
        return std::nullopt;
      out.pop_back();
      continue;
    }
    out.push_back(std::move(c));
  }
  return join(out);
}

} // namespace

image_spool::~image_spool() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

result<std::unique_ptr<image_spool>> image_spool::read(chunk_source source, const std::string& dir,
                                                       const import_limits& limits) {
  if (::mkdir(dir.c_str(), 0700) != 0)
    return make_error(errc::internal, "cannot make " + dir + ": " + std::strerror(errno));
  std::unique_ptr<image_spool> s(new image_spool(dir));
  runtime::unique_fd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dfd)
    return make_error(errc::internal, "cannot open " + dir + ": " + std::strerror(errno));
  tar_stream t(std::move(source));
  entry_header h;
  std::vector<char> buf(1 << 20);
  std::uint64_t entries = 0;
  for (;;) {
    auto more = t.next(h);
    if (!more)
      return more.err();
    if (!more.value())
      break;
    if (++entries > limits.max_entries)
      return make_error(errc::too_large, "the image archive has more than " +
                                           std::to_string(limits.max_entries) + " entries");
    auto parts = split_entry_path(h.path, limits);
    if (!parts)
      return parts.err();
    const std::string path = join(parts.value());
    if (h.type == entry_type::symlink || h.type == entry_type::hardlink) {
      auto to = resolve_link(parts.value(), h.link, h.type == entry_type::symlink);
      if (!to)
        return make_error(errc::invalid_argument,
                          "entry " + h.path + " of the image archive links to '" +
                            h.link.substr(0, 200) + "', outside the archive");
      s->aliases_[path] = *to;
      continue;
    }
    if (h.type != entry_type::file)
      continue; // directories; an image layout has nothing else that matters
    if (h.size > limits.max_bytes - std::min(limits.max_bytes, s->bytes_))
      return make_error(errc::too_large, "entry " + h.path +
                                           " of the image archive takes the import past its " +
                                           std::to_string(limits.max_bytes >> 20) + " MiB");
    file f;
    f.name = std::to_string(s->files_.size());
    runtime::unique_fd out(
      ::openat(dfd.get(), f.name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!out)
      return make_error(errc::internal,
                        "cannot write " + dir + "/" + f.name + ": " + std::strerror(errno));
    sha256 hash;
    for (;;) {
      long n = t.read(buf.data(), buf.size());
      if (n < 0)
        return make_error(errc::invalid_argument,
                          "entry " + h.path +
                            " of the image archive cannot be read: " + t.failure());
      if (n == 0)
        break;
      f.size += static_cast<std::uint64_t>(n);
      if (s->bytes_ + f.size > limits.max_bytes)
        return make_error(errc::too_large, "entry " + h.path +
                                             " of the image archive takes the import past its " +
                                             std::to_string(limits.max_bytes >> 20) + " MiB");
      hash.add({buf.data(), static_cast<std::size_t>(n)});
      for (long done = 0; done < n;) {
        ssize_t w = ::write(out.get(), buf.data() + done, static_cast<std::size_t>(n - done));
        if (w < 0 && errno == EINTR)
          continue;
        if (w < 0)
          return make_error(errc::resource_exhausted,
                            "cannot keep entry " + h.path +
                              " of the image archive: " + std::strerror(errno));
        done += w;
      }
    }
    s->bytes_ += f.size;
    f.sha256 = to_hex(hash.finish());
    s->files_[path] = std::move(f); // a later entry of the same path replaces it (tar's rule)
    s->aliases_.erase(path);
  }
  return s;
}

const image_spool::file* image_spool::find(const std::string& path) const {
  std::string p = path;
  for (int hop = 0; hop <= 8; ++hop) {
    if (auto f = files_.find(p); f != files_.end())
      return &f->second;
    auto a = aliases_.find(p);
    if (a == aliases_.end())
      return nullptr;
    p = a->second;
  }
  return nullptr;
}

std::optional<std::string> image_spool::small_file(const std::string& path) const {
  const file* f = find(path);
  if (!f || f->size > (4u << 20))
    return std::nullopt;
  std::string out;
  int fd = ::open((dir_ + "/" + f->name).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return std::nullopt;
  char buf[1 << 16];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
    out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

result<runtime::unique_fd> image_spool::open_checked(const std::string& path,
                                                     const std::string& sha256) const {
  const file* f = find(path);
  if (!f)
    return make_error(errc::invalid_argument,
                      "the image archive has no " + path + ", which its manifest names");
  if (f->sha256 != sha256)
    return make_error(errc::invalid_argument,
                      path + " in the image archive does not match its digest sha256:" + sha256 +
                        " (its bytes hash to sha256:" + f->sha256 + ")");
  runtime::unique_fd fd(::open((dir_ + "/" + f->name).c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd)
    return make_error(errc::internal,
                      "cannot open " + dir_ + "/" + f->name + ": " + std::strerror(errno));
  return fd;
}

} // namespace sandboxd::templates
