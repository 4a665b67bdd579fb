// The file commands: write, read, ls, stat, mkdir, rm, mv, cp-in, cp-out. Paths are inside
// the sandbox; LOCAL paths are on this machine.
#include "cli/command_support.hpp"
#include "cli/command_table.hpp"
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/file_view.hpp"
#include "cli/progress.hpp"
#include "cli/value_args.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sandboxd::cli {
namespace {

constexpr std::size_t k_chunk = 256 * 1024;

struct path_ref {
  std::string id, path;
  void add_to(CLI::App* c) {
    c->add_option("id", id, "the sandbox's id")->required()->type_name("ID");
    c->add_option("path", path, "a path in the sandbox")->required()->type_name("PATH");
  }
};

error local_error(const std::string& what, const std::string& path) {
  return make_error(errc::invalid_argument,
                    "cannot " + what + " " + path + ": " + std::strerror(errno));
}

// A local file descriptor, closed on scope exit.
struct local_fd {
  int fd = -1;
  ~local_fd() {
    if (fd >= 0)
      ::close(fd);
  }
};

// Streams `fd` to `path` in the sandbox, with a progress bar for large files on a terminal.
int upload(context& cx, const path_ref& ref, int fd, std::uint32_t mode, std::uint64_t size,
           const std::string& label) {
  progress_bar bar(label, size, progress_bar::stderr_is_terminal() && !cx.as_json());
  int read_errno = 0;
  api::chunk_source next = [&](std::string& chunk) {
    chunk.resize(k_chunk);
    for (;;) {
      const ssize_t n = ::read(fd, chunk.data(), chunk.size());
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0) {
        read_errno = errno;
        return api::source_step::failed;
      }
      if (n == 0)
        return api::source_step::end;
      chunk.resize(static_cast<std::size_t>(n));
      bar.add(static_cast<std::uint64_t>(n));
      return api::source_step::chunk;
    }
  };
  return with_client(cx, [&](api::client& client) {
    auto r = client.write_file(ref.id, ref.path, mode, next);
    bar.finish();
    if (read_errno != 0)
      return cx.fail(make_error(errc::invalid_argument, "cannot read the content for " + ref.path +
                                                          ": " + std::strerror(read_errno) +
                                                          "; nothing was written"));
    if (!r)
      return cx.fail(r.err());
    if (cx.as_json())
      cx.print(file_json(*r));
    return k_exit_ok;
  });
}

void add_write(command_table& t) {
  struct args {
    path_ref ref;
    std::string from, mode = "644";
  };
  auto a = std::make_shared<args>();
  auto* c = t.add(t.app(), "write",
                  "Write a file in a sandbox from stdin (or --from a local file); it appears whole",
                  "  echo 'print(42)' | sandboxctl write sb-0a1b2c3d4e5f /workspace/main.py\n"
                  "  sandboxctl write sb-0a1b2c3d4e5f /workspace/data.bin --from ./data.bin",
                  [a](context& cx) {
                    auto mode = parse_mode(a->mode);
                    if (!mode)
                      return cx.usage("--mode: " + mode.err().message);
                    local_fd in;
                    std::uint64_t size = 0;
                    if (a->from.empty()) {
                      in.fd = ::dup(0);
                    } else {
                      in.fd = ::open(a->from.c_str(), O_RDONLY | O_CLOEXEC);
                      if (in.fd < 0)
                        return cx.fail(local_error("read", a->from));
                      struct stat st {};
                      if (::fstat(in.fd, &st) == 0 && S_ISREG(st.st_mode))
                        size = static_cast<std::uint64_t>(st.st_size);
                    }
                    return upload(cx, a->ref, in.fd, *mode, size, a->ref.path);
                  });
  a->ref.add_to(c);
  c->add_option("--from", a->from, "the content comes from this local file")->type_name("LOCAL");
  c->add_option("--mode", a->mode, "permission bits, octal (default 644)")->type_name("MODE");
}

void add_cp_in(command_table& t) {
  struct args {
    std::string local;
    path_ref ref;
    std::string mode;
  };
  auto a = std::make_shared<args>();
  auto* c = t.add(
    t.app(), "cp-in",
    "Copy a local file into a sandbox (a progress bar on a terminal for large files)",
    "  sandboxctl cp-in ./model.bin sb-0a1b2c3d4e5f /workspace/model.bin", [a](context& cx) {
      local_fd in;
      in.fd = ::open(a->local.c_str(), O_RDONLY | O_CLOEXEC);
      if (in.fd < 0)
        return cx.fail(local_error("read", a->local));
      struct stat st {};
      if (::fstat(in.fd, &st) != 0)
        return cx.fail(local_error("stat", a->local));
      if (S_ISDIR(st.st_mode))
        return cx.fail(
          make_error(errc::is_a_directory, a->local + " is a directory; cp-in copies one file"));
      std::uint32_t mode = st.st_mode & 07777;
      if (!a->mode.empty()) {
        auto m = parse_mode(a->mode);
        if (!m)
          return cx.usage("--mode: " + m.err().message);
        mode = *m;
      }
      return upload(cx, a->ref, in.fd, mode, static_cast<std::uint64_t>(st.st_size), a->local);
    });
  c->add_option("local", a->local, "the local file")->required()->type_name("LOCAL");
  a->ref.add_to(c);
  c->add_option("--mode", a->mode, "permission bits, octal (default: the local file's)")
    ->type_name("MODE");
}

// Streams `path` from the sandbox to `fd`; with --json the content is kept for the document.
result<api::file_digest> download(api::client& client, const path_ref& ref, int fd,
                                  progress_bar* bar, std::string* keep) {
  int write_errno = 0;
  api::chunk_callback on_chunk = [&](std::string_view bytes) {
    if (keep) {
      keep->append(bytes);
      return;
    }
    if (bar)
      bar->add(bytes.size());
    while (!bytes.empty() && write_errno == 0) {
      const ssize_t n = ::write(fd, bytes.data(), bytes.size());
      if (n < 0) {
        if (errno != EINTR)
          write_errno = errno;
        continue;
      }
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
  };
  auto r = client.read_file(ref.id, ref.path, on_chunk);
  if (r && write_errno != 0)
    return make_error(errc::unavailable,
                      std::string("writing the content failed: ") + std::strerror(write_errno));
  return r;
}

void add_read(command_table& t) {
  auto ref = std::make_shared<path_ref>();
  auto* c = t.add(
    t.app(), "read", "Print a file of a sandbox to stdout, byte for byte (served while paused too)",
    "  sandboxctl read sb-0a1b2c3d4e5f /workspace/result.json | jq .", [ref](context& cx) {
      return with_client(cx, [&](api::client& client) {
        std::string content;
        auto r = download(client, *ref, 1, nullptr, cx.as_json() ? &content : nullptr);
        if (!r)
          return cx.fail(r.err());
        if (cx.as_json()) {
          auto doc = file_json(*r);
          put_bytes(doc, "content", content);
          cx.print(doc);
        }
        return k_exit_ok;
      });
    });
  ref->add_to(c);
}

void add_cp_out(command_table& t) {
  struct args {
    path_ref ref;
    std::string local;
  };
  auto a = std::make_shared<args>();
  auto* c = t.add(
    t.app(), "cp-out",
    "Copy a file out of a sandbox to a local file (a progress bar on a terminal for large files)",
    "  sandboxctl cp-out sb-0a1b2c3d4e5f /workspace/report.pdf ./report.pdf", [a](context& cx) {
      return with_client(cx, [&](api::client& client) {
        std::uint64_t size = 0;
        const bool terminal = progress_bar::stderr_is_terminal() && !cx.as_json();
        if (terminal) // the size, for the bar's total
          if (auto s = client.stat(a->ref.id, a->ref.path))
            size = s->size;
        // Written beside the target and renamed over it at the end: a failed copy leaves no
        // half file under the local name.
        const std::string partial = a->local + ".sandboxctl-partial";
        local_fd out;
        out.fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (out.fd < 0)
          return cx.fail(local_error("write", partial));
        progress_bar bar(a->local, size, terminal);
        auto r = download(client, a->ref, out.fd, &bar, nullptr);
        bar.finish();
        if (!r) {
          ::unlink(partial.c_str());
          return cx.fail(r.err());
        }
        ::fchmod(out.fd, r->info.mode & 0777);
        if (::rename(partial.c_str(), a->local.c_str()) != 0) {
          ::unlink(partial.c_str());
          return cx.fail(local_error("write", a->local));
        }
        if (cx.as_json()) {
          auto doc = file_json(*r);
          doc["local"] = a->local;
          cx.print(doc);
        }
        return k_exit_ok;
      });
    });
  a->ref.add_to(c);
  c->add_option("local", a->local, "the local file to write")->required()->type_name("LOCAL");
}

void add_ls(command_table& t) {
  struct args {
    std::string id, path = "/";
    std::uint32_t limit = 0;
  };
  auto a = std::make_shared<args>();
  auto* c = t.add(t.app(), "ls", "List a directory of a sandbox: name, type, size, mode, mtime",
                  "  sandboxctl ls sb-0a1b2c3d4e5f /workspace", [a](context& cx) {
                    return with_client(cx, [&](api::client& client) {
                      auto l = client.list_dir(a->id, a->path, a->limit);
                      if (!l)
                        return cx.fail(l.err());
                      if (cx.as_json()) {
                        cx.print(listing_json(a->path, *l));
                        return k_exit_ok;
                      }
                      cx.out(listing_table(*l));
                      if (l->truncated)
                        cx.note("the listing was cut at " + std::to_string(l->entries.size()) +
                                " entries; raise --limit");
                      return k_exit_ok;
                    });
                  });
  c->add_option("id", a->id, "the sandbox's id")->required()->type_name("ID");
  c->add_option("path", a->path, "a directory in the sandbox (default /)")->type_name("PATH");
  c->add_option("--limit", a->limit, "at most this many entries (default: the node's)")
    ->type_name("N");
}

void add_stat(command_table& t) {
  auto ref = std::make_shared<path_ref>();
  auto* c = t.add(t.app(), "stat", "Show a file's type, size, mode and modification time",
                  "  sandboxctl stat sb-0a1b2c3d4e5f /workspace/main.py", [ref](context& cx) {
                    return with_client(cx, [&](api::client& client) {
                      auto f = client.stat(ref->id, ref->path);
                      if (!f)
                        return cx.fail(f.err());
                      if (cx.as_json())
                        cx.print(file_json(*f));
                      else
                        cx.out(file_text(*f));
                      return k_exit_ok;
                    });
                  });
  ref->add_to(c);
}

void add_mkdir(command_table& t) {
  struct args {
    path_ref ref;
    bool parents = false;
  };
  auto a = std::make_shared<args>();
  auto* c = t.add(t.app(), "mkdir", "Make a directory in a sandbox",
                  "  sandboxctl mkdir -p sb-0a1b2c3d4e5f /workspace/out/logs", [a](context& cx) {
                    return with_client(cx, [&](api::client& client) {
                      auto r = client.make_dir(a->ref.id, a->ref.path, a->parents);
                      if (!r)
                        return cx.fail(r.err());
                      if (cx.as_json())
                        cx.print(json{{"created", a->ref.path}});
                      return k_exit_ok;
                    });
                  });
  a->ref.add_to(c);
  c->add_flag("--parents,-p", a->parents, "make missing parents too; an existing one is fine");
}

void add_rm(command_table& t) {
  struct args {
    path_ref ref;
    bool recursive = false;
  };
  auto a = std::make_shared<args>();
  auto* c = t.add(t.app(), "rm", "Remove a file, or a directory with -r",
                  "  sandboxctl rm -r sb-0a1b2c3d4e5f /workspace/build", [a](context& cx) {
                    return with_client(cx, [&](api::client& client) {
                      auto r = client.remove_path(a->ref.id, a->ref.path, a->recursive);
                      if (!r)
                        return cx.fail(r.err());
                      if (cx.as_json())
                        cx.print(json{{"removed", a->ref.path}});
                      return k_exit_ok;
                    });
                  });
  a->ref.add_to(c);
  c->add_flag("--recursive,-r", a->recursive, "a directory and everything in it");
}

void add_mv(command_table& t) {
  struct args {
    std::string id, from, to;
  };
  auto a = std::make_shared<args>();
  auto* c =
    t.add(t.app(), "mv", "Rename (move) a file or directory within a sandbox",
          "  sandboxctl mv sb-0a1b2c3d4e5f /workspace/a.txt /workspace/b.txt", [a](context& cx) {
            return with_client(cx, [&](api::client& client) {
              auto r = client.rename(a->id, a->from, a->to);
              if (!r)
                return cx.fail(r.err());
              if (cx.as_json())
                cx.print(json{{"from", a->from}, {"to", a->to}});
              return k_exit_ok;
            });
          });
  c->add_option("id", a->id, "the sandbox's id")->required()->type_name("ID");
  c->add_option("from", a->from, "the path now")->required()->type_name("FROM");
  c->add_option("to", a->to, "the new path")->required()->type_name("TO");
}

} // namespace

void add_file_commands(command_table& t) {
  add_write(t);
  add_read(t);
  add_ls(t);
  add_stat(t);
  add_mkdir(t);
  add_rm(t);
  add_mv(t);
  add_cp_in(t);
  add_cp_out(t);
}

} // namespace sandboxd::cli
