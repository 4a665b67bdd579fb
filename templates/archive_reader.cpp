#include "templates/archive_reader.hpp"

#include <archive.h>
#include <archive_entry.h>

#include <cerrno>
#include <cstring>
#include <unistd.h>
#include <vector>

namespace sandboxd::templates {

struct tar_stream::impl {
  chunk_source source;
  archive* a = nullptr;
  std::string source_error;
  std::uint64_t consumed = 0;
  bool open = false;

  static la_ssize_t on_read(archive* a, void* self, const void** buf) {
    auto* s = static_cast<impl*>(self);
    long n = s->source(buf, &s->source_error);
    if (n < 0) {
      archive_set_error(a, EIO, "%s", s->source_error.c_str());
      return -1;
    }
    s->consumed += static_cast<std::uint64_t>(n);
    return n;
  }
};

chunk_source fd_source(int fd) {
  auto buf = std::make_shared<std::vector<char>>(1 << 20);
  return [fd, buf](const void** data, std::string* why) -> long {
    for (;;) {
      ssize_t n = ::read(fd, buf->data(), buf->size());
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0) {
        *why = std::strerror(errno);
        return -1;
      }
      *data = buf->data();
      return n;
    }
  };
}

chunk_source memory_source(const std::string& bytes) {
  auto done = std::make_shared<bool>(false);
  return [&bytes, done](const void** data, std::string*) -> long {
    if (*done)
      return 0;
    *done = true;
    *data = bytes.data();
    return static_cast<long>(bytes.size());
  };
}

tar_stream::tar_stream(chunk_source source) : impl_(std::make_unique<impl>()) {
  impl_->source = std::move(source);
  impl_->a = archive_read_new();
  archive_read_support_filter_all(impl_->a);
  archive_read_support_format_tar(impl_->a);
}

tar_stream::~tar_stream() {
  if (impl_->a)
    archive_read_free(impl_->a);
}

std::uint64_t tar_stream::consumed() const {
  return impl_->consumed;
}

result<bool> tar_stream::next(entry_header& h) {
  auto bad = [&](const std::string& why) {
    return make_error(errc::invalid_argument,
                      "the archive is not a tar archive sandboxd reads (" + why +
                        "); give a tar, tar.gz or tar.zst (docs/templates.md)");
  };
  if (!impl_->open) {
    if (archive_read_open(impl_->a, impl_.get(), nullptr, &impl::on_read, nullptr) != ARCHIVE_OK)
      return bad(archive_error_string(impl_->a) ? archive_error_string(impl_->a) : "unreadable");
    impl_->open = true;
  }
  archive_entry* e = nullptr;
  int r = archive_read_next_header(impl_->a, &e);
  if (r == ARCHIVE_EOF)
    return false;
  if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
    std::string why = archive_error_string(impl_->a) ? archive_error_string(impl_->a) : "damaged";
    if (!impl_->source_error.empty())
      why = impl_->source_error;
    return bad(why);
  }
  h = entry_header{};
  const char* path = archive_entry_pathname(e);
  h.path = path ? path : "";
  h.mode = static_cast<std::uint32_t>(archive_entry_perm(e)) |
           (static_cast<std::uint32_t>(archive_entry_mode(e)) & 07000);
  auto id = [](la_int64_t v) -> std::uint32_t {
    return v < 0 || v > 0xffffffffLL ? 0xffffffffu : static_cast<std::uint32_t>(v);
  };
  h.uid = id(archive_entry_uid(e));
  h.gid = id(archive_entry_gid(e));
  h.mtime = archive_entry_mtime_is_set(e) ? archive_entry_mtime(e) : 0;
  h.mtime_nsec = archive_entry_mtime_is_set(e) ? archive_entry_mtime_nsec(e) : 0;
  h.size = archive_entry_size(e) > 0 ? static_cast<std::uint64_t>(archive_entry_size(e)) : 0;
  if (const char* hl = archive_entry_hardlink(e)) {
    h.type = entry_type::hardlink;
    h.link = hl;
    h.size = 0;
  } else {
    switch (archive_entry_filetype(e)) {
    case AE_IFREG:
      h.type = entry_type::file;
      break;
    case AE_IFDIR:
      h.type = entry_type::directory;
      break;
    case AE_IFLNK:
      h.type = entry_type::symlink;
      h.link = archive_entry_symlink(e) ? archive_entry_symlink(e) : "";
      break;
    case AE_IFCHR:
      h.type = entry_type::char_device;
      break;
    case AE_IFBLK:
      h.type = entry_type::block_device;
      break;
    case AE_IFIFO:
      h.type = entry_type::fifo;
      break;
    default:
      h.type = entry_type::other;
    }
  }
  archive_entry_xattr_reset(e);
  const char* name = nullptr;
  const void* value = nullptr;
  size_t size = 0;
  while (archive_entry_xattr_next(e, &name, &value, &size) == ARCHIVE_OK)
    h.xattrs.emplace_back(name ? name : "", std::string(static_cast<const char*>(value), size));
  return true;
}

long tar_stream::read(char* buf, std::size_t n) {
  la_ssize_t r = archive_read_data(impl_->a, buf, n);
  if (r < 0) {
    failure_ = archive_error_string(impl_->a) ? archive_error_string(impl_->a) : "read error";
    if (!impl_->source_error.empty())
      failure_ = impl_->source_error;
    return -1;
  }
  return static_cast<long>(r);
}

result<void> extract_tar(chunk_source source, layer_writer& w) {
  tar_stream t(std::move(source));
  entry_header h;
  for (;;) {
    auto more = t.next(h);
    if (!more)
      return more.err();
    if (!more.value())
      break;
    auto r = w.add(h, [&](char* buf, std::size_t n) {
      long got = t.read(buf, n);
      if (got < 0)
        w.source_error = t.failure();
      return got;
    });
    if (!r)
      return r;
  }
  return w.finish();
}

} // namespace sandboxd::templates
