// The template commands: template list, show, build, import, rm (docs/templates.md).
//
// build makes a template from a spec (--spec, --dockerfile, with --context) and shows each
// step and its output on stderr; without a spec it makes a stock template now (admin scope),
// showing its phases (mmdebstrap's output too with --verbose); without it, the first create
// that names a stock template builds it.
#include "cli/command_support.hpp"
#include "cli/command_table.hpp"
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/progress.hpp"
#include "cli/table.hpp"
#include "cli/terminal_text.hpp"
#include "cli/time_arg.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

namespace sandboxd::cli {
namespace {

using time_point = std::chrono::sys_time<std::chrono::nanoseconds>;

json template_json(const api::template_info& t) {
  json layers = json::array();
  for (const auto& l : t.layers)
    layers.push_back({{"sha256", l.sha256}, {"bytes", l.bytes}});
  json env = json::object();
  for (const auto& e : t.env)
    env[e.name] = e.secret ? json(nullptr) : json(e.value);
  json j;
  j["name"] = t.name;
  j["id"] = t.id;
  j["scope"] = t.scope;
  j["tenant"] = t.tenant;
  j["status"] = t.status;
  j["source"] = t.source;
  j["description"] = t.description;
  j["digest"] = t.digest;
  j["layers"] = layers;
  j["env"] = env;
  j["working_directory"] = t.working_directory;
  j["user"] = t.user;
  j["command"] = t.command;
  j["total_bytes"] = t.total_bytes;
  j["failure"] = t.failure;
  j["created_at"] = t.created_at_ns == 0
                      ? json(nullptr)
                      : json(format_time(time_point{std::chrono::nanoseconds{t.created_at_ns}}));
  j["used_by"] = t.used_by;
  return j;
}

std::string list_text(const std::vector<api::template_info>& all) {
  std::vector<row> rows;
  for (const auto& t : all)
    rows.push_back({t.name, t.status, t.scope,
                    t.layers.empty() ? "-" : std::to_string(t.layers.size()),
                    t.total_bytes ? human_bytes(t.total_bytes) : "-",
                    std::to_string(t.used_by.size()), t.description});
  return render_table({"NAME", "STATUS", "SCOPE", "LAYERS", "SIZE", "SANDBOXES", "DESCRIPTION"},
                      rows);
}

std::string show_text(const api::template_info& t) {
  std::string env, users;
  for (const auto& e : t.env)
    env += (env.empty() ? "" : " ") + e.name + "=" + (e.secret ? "(secret)" : e.value);
  std::string cmd;
  for (const auto& c : t.command)
    cmd += (cmd.empty() ? "" : " ") + c;
  for (const auto& u : t.used_by)
    users += (users.empty() ? "" : " ") + u;
  std::vector<std::pair<std::string, std::string>> f = {
    {"name", t.name},     {"id", t.id.empty() ? "-" : t.id},
    {"status", t.status}, {"scope", t.scope + (t.tenant.empty() ? "" : " (" + t.tenant + ")")},
    {"source", t.source}, {"description", t.description},
  };
  if (!t.digest.empty())
    f.push_back({"digest", t.digest});
  for (std::size_t i = 0; i < t.layers.size(); ++i) // one line each, under "layers"
    f.push_back(
      {i == 0 ? "layers" : "", t.layers[i].sha256 + " " + human_bytes(t.layers[i].bytes)});
  if (t.total_bytes)
    f.push_back({"size", human_bytes(t.total_bytes)});
  if (!env.empty())
    f.push_back({"env", env});
  if (!cmd.empty())
    f.push_back({"command", cmd});
  if (!t.working_directory.empty())
    f.push_back({"workdir", t.working_directory});
  if (!t.user.empty())
    f.push_back({"user", t.user});
  if (!t.failure.empty())
    f.push_back({"failure", t.failure});
  f.push_back({"sandboxes", users.empty() ? "none" : users});
  return render_fields(f);
}

// A failed template is shown like any other (status and failure say it); a build or import
// that fails answers its error instead.
int show_template(context& cx, const api::template_info& t) {
  if (cx.as_json())
    cx.print(template_json(t));
  else
    cx.out(show_text(t));
  return k_exit_ok;
}

void add_name(CLI::App* c, std::string& name) {
  c->add_option("name", name, "the template's name (sandboxctl template list)")
    ->required()
    ->type_name("NAME");
}

// The bytes of `path`: the file itself, or for a directory (an OCI image layout) a tar of
// it made by tar(1) as it is read.
struct archive_input {
  int fd = -1;
  pid_t tar = -1;
  std::uint64_t size = 0; // a file's; 0 for a directory's tar
  ~archive_input() {
    if (fd >= 0)
      ::close(fd);
    if (tar > 0) {
      int status = 0;
      ::waitpid(tar, &status, 0);
    }
  }
  int read_errno = 0; // why a read failed
  // The tar's exit status, once its output has been read to the end.
  bool tar_failed() {
    if (tar <= 0)
      return false;
    int status = 0;
    ::waitpid(tar, &status, 0);
    tar = -1;
    return !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
};

std::optional<error> open_archive(const std::string& path, archive_input& in) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return make_error(errc::not_found, "cannot read " + path + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) {
    in.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (in.fd < 0)
      return make_error(errc::not_found, "cannot read " + path + ": " + std::strerror(errno));
    in.size = static_cast<std::uint64_t>(st.st_size);
    return std::nullopt;
  }
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0)
    return make_error(errc::internal, std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[1], 1);
  std::vector<std::string> args{"tar", "--format=pax", "-C", path, "-cf", "-", "."};
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  const int r = ::posix_spawnp(&in.tar, "tar", &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(p[1]);
  if (r != 0) {
    ::close(p[0]);
    in.tar = -1;
    return make_error(errc::internal, std::string("cannot run tar: ") + std::strerror(r));
  }
  in.fd = p[0];
  return std::nullopt;
}

// The bytes of `in` in 1 MiB chunks (none when nothing is open), each counted by `bar`.
api::chunk_source archive_chunks(archive_input& in, progress_bar* bar) {
  return [&in, bar](std::string& chunk) {
    if (in.fd < 0)
      return api::source_step::end;
    chunk.resize(1 << 20);
    for (;;) {
      const ssize_t n = ::read(in.fd, chunk.data(), chunk.size());
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0) {
        in.read_errno = errno;
        return api::source_step::failed;
      }
      if (n == 0)
        return in.tar_failed() ? api::source_step::failed : api::source_step::end;
      chunk.resize(static_cast<std::size_t>(n));
      if (bar)
        bar->add(static_cast<std::uint64_t>(n));
      return api::source_step::chunk;
    }
  };
}

} // namespace

void add_template_commands(command_table& t) {
  auto* group = t.add(t.app(), "template",
                      "Templates, the root file systems sandboxes start from: list, show, "
                      "build, import, rm",
                      "  sandboxctl template list\n  sandboxctl template show python", {});
  group->require_subcommand(0, 1);
  t.add(*group, "list",
        "The templates this tenant may use: its own and the global ones, stock templates not "
        "built yet included",
        "  sandboxctl template list\n  sandboxctl --json template list", [](context& cx) {
          return with_client(cx, [&](api::client& client) {
            auto all = client.list_templates();
            if (!all)
              return cx.fail(all.err());
            if (cx.as_json()) {
              json out = json::array();
              for (const auto& x : *all)
                out.push_back(template_json(x));
              cx.print(json{{"templates", out}});
            } else {
              cx.out(list_text(*all));
            }
            return k_exit_ok;
          });
        });
  auto shown = std::make_shared<std::string>();
  auto* show = t.add(*group, "show",
                     "One template: its layers, digest, defaults and the sandboxes that use it",
                     "  sandboxctl template show python", [shown](context& cx) {
                       return with_client(cx, [&](api::client& client) {
                         auto r = client.get_template(*shown);
                         if (!r)
                           return cx.fail(r.err());
                         return show_template(cx, *r);
                       });
                     });
  add_name(show, *shown);
  struct build_args {
    std::string name, spec, dockerfile, context;
    bool verbose = false, global = false;
  };
  auto b = std::make_shared<build_args>();
  auto* build = t.add(
    *group, "build",
    "Build a template: from a spec (--spec FILE, TOML) or a Dockerfile subset (--dockerfile "
    "FILE) with the files of --context DIR, showing each step and its output on stderr; or a "
    "stock template (base, debian, python, node) now, which the first create that names one "
    "builds otherwise (any tenant; admin: at once after a failure too)",
    "  sandboxctl template build my-app --dockerfile Dockerfile --context .\n"
    "  sandboxctl template build my-app --spec template.toml --context app/\n"
    "  sandboxctl template build python\n  sandboxctl template build node --verbose",
    [b](context& cx) {
      const bool from_spec = !b->spec.empty() || !b->dockerfile.empty();
      if (!from_spec && (!b->context.empty() || b->global))
        return cx.fail(make_error(errc::invalid_argument,
                                  "--context and --global belong to a build from a spec: add "
                                  "--spec FILE or --dockerfile FILE"));
      std::string spec_text;
      if (from_spec) {
        const std::string& file = b->spec.empty() ? b->dockerfile : b->spec;
        std::ifstream in(file, std::ios::binary);
        if (!in)
          return cx.fail(
            make_error(errc::not_found, "cannot read " + file + ": " + std::strerror(errno)));
        spec_text.assign(std::istreambuf_iterator<char>(in), {});
      }
      archive_input in;
      if (!b->context.empty())
        if (auto e = open_archive(b->context, in))
          return cx.fail(*e);
      return with_client(cx, [&](api::client& client) {
        std::string last_phase;
        const bool tty = ::isatty(2) == 1;
        // Stock builds: one line of phase (redrawn on a terminal), the tool's output with
        // --verbose. Spec builds: each step on its line and its output as it comes.
        const bool lines = from_spec || b->verbose || !tty;
        auto on_progress = [&](const std::string& phase, double fraction,
                               const std::string& output) {
          if (phase != last_phase || (tty && !lines)) {
            last_phase = phase;
            char pct[16] = "";
            if (fraction >= 0)
              std::snprintf(pct, sizeof pct, " %3.0f%%", 100 * fraction);
            cx.err(std::string(lines ? "" : "\r\033[K") +
                   terminal_text(b->name + ":" + pct + " " + phase) + (lines ? "\n" : ""));
          }
          if ((from_spec || b->verbose) && !output.empty())
            cx.err(output);
        };
        result<api::template_info> r = make_error(errc::internal, "no build ran");
        if (from_spec) {
          api::client::spec_build req;
          req.name = b->name;
          req.scope = b->global ? "global" : "tenant";
          req.format = b->spec.empty() ? "dockerfile" : "toml";
          req.spec = spec_text;
          req.description =
            std::filesystem::path(b->spec.empty() ? b->dockerfile : b->spec).filename().string();
          r = client.build_template_spec(req, archive_chunks(in, nullptr), on_progress);
          if (in.read_errno != 0)
            return cx.fail(make_error(errc::invalid_argument, "cannot read the build context " +
                                                                b->context + ": " +
                                                                std::strerror(in.read_errno)));
        } else {
          r = client.build_template(b->name, on_progress);
        }
        if (!lines)
          cx.err("\n");
        if (!r)
          return cx.fail(r.err());
        return show_template(cx, *r);
      });
    });
  add_name(build, b->name);
  build->add_option("--spec", b->spec, "build from this TOML spec (docs/templates.md)")
    ->type_name("FILE");
  build
    ->add_option("--dockerfile", b->dockerfile,
                 "build from this Dockerfile (FROM, RUN, COPY, ENV, WORKDIR, USER)")
    ->type_name("FILE")
    ->excludes(build->get_option("--spec"));
  build
    ->add_option("--context", b->context,
                 "the directory (or tar) COPY takes files from; none when left out")
    ->type_name("DIR");
  build->add_flag("--global", b->global,
                  "a global template built from a spec, for every tenant "
                  "(admin)");
  build->add_flag("--verbose", b->verbose, "print a stock build tool's output too");
  struct import_args {
    std::string path, name, format = "rootfs";
    bool global = false;
  };
  auto ia = std::make_shared<import_args>();
  auto* import = t.add(
    *group, "import",
    "Make a template of an archive: a root filesystem tarball (tar, tar.gz, tar.zst), or with "
    "--format image an OCI image layout (directory or tar) or a docker save tar",
    "  sandboxctl template import rootfs.tar.zst --name my-app\n"
    "  skopeo copy docker-daemon:my-app:latest oci-archive:app.tar && \\\n"
    "    sandboxctl template import app.tar --name my-app --format image",
    [ia](context& cx) {
      archive_input in;
      if (auto e = open_archive(ia->path, in))
        return cx.fail(*e);
      progress_bar bar("import " + ia->name, in.size,
                       progress_bar::stderr_is_terminal() && !cx.as_json());
      return with_client(cx, [&](api::client& client) {
        auto r = client.import_template(ia->name, ia->global ? "global" : "tenant", ia->format,
                                        std::filesystem::path(ia->path).filename().string(),
                                        archive_chunks(in, &bar));
        bar.finish();
        if (in.read_errno != 0)
          return cx.fail(make_error(errc::invalid_argument, "cannot read " + ia->path + ": " +
                                                              std::strerror(in.read_errno)));
        if (!r)
          return cx.fail(r.err());
        return show_template(cx, *r);
      });
    });
  import->add_option("path", ia->path, "the archive, or an OCI image layout's directory")
    ->required()
    ->type_name("PATH");
  import->add_option("--name", ia->name, "the template's name ([a-z0-9_-]{1,64})")
    ->required()
    ->type_name("NAME");
  import->add_option("--format", ia->format, "rootfs (default) or image")
    ->check(CLI::IsMember({"rootfs", "image"}))
    ->type_name("FORMAT");
  import->add_flag("--global", ia->global, "a global template, for every tenant (admin)");
  auto removed = std::make_shared<std::string>();
  auto* rm = t.add(*group, "rm",
                   "Delete a template no sandbox uses (its layers no other template holds are "
                   "collected)",
                   "  sandboxctl template rm my-app", [removed](context& cx) {
                     return with_client(cx, [&](api::client& client) {
                       auto r = client.delete_template(*removed);
                       if (!r)
                         return cx.fail(r.err());
                       if (cx.as_json())
                         cx.print(json{{"name", r->name}, {"id", r->id}, {"status", "deleted"}});
                       else
                         cx.out("template " + terminal_text(r->name) + " deleted\n");
                       return k_exit_ok;
                     });
                   });
  add_name(rm, *removed);
}

} // namespace sandboxd::cli
