// The exec commands: exec (foreground or --background), run (code in a language), ps, kill,
// wait.
#include "api/code_language.hpp"
#include "cli/command_support.hpp"
#include "cli/command_table.hpp"
#include "cli/commands.hpp"
#include "cli/exec_view.hpp"
#include "cli/exit_codes.hpp"
#include "cli/terminal_text.hpp"
#include "cli/value_args.hpp"

#include <cerrno>
#include <cstring>
#include <functional>

namespace sandboxd::cli {
namespace {

// How a finished exec leaves sandboxctl: a note on stderr when it did not simply exit, and
// its own exit code (an outcome the daemon could not learn is `unavailable`).
int finish(context& cx, const api::exec_result& r, std::chrono::nanoseconds timeout) {
  if (r.interrupted)
    return cx.fail(
      make_error(errc::unavailable, "sandboxd restarted while exec " + r.exec_id +
                                      " ran: its outcome is unknown; check the sandbox's files "
                                      "before running it again"));
  if (auto why = exec_ending_note(r, timeout); !why.empty())
    cx.note("exec " + r.exec_id + " " + why);
  return exit_code_of(r);
}

// --env and --timeout into `o`; 0, or the exit code of a usage error.
int env_and_timeout(context& cx, const std::vector<std::string>& env, const std::string& timeout,
                    api::exec_options& o) {
  if (int e = env_flags(cx, "--env", env, false, o.env))
    return e;
  auto t = duration_flag(cx, "--timeout", timeout);
  if (!t)
    return t.exit;
  o.timeout = t.value->value_or(std::chrono::nanoseconds{0});
  return 0;
}

// Runs an exec in the foreground: its output streams to sandboxctl's own, or with --json is
// kept for the one document (stdout, stderr, and with `combined` both as they came in
// `output`), which `more` may add to.
int foreground(context& cx, api::client& client, const std::string& id, const api::exec_options& o,
               bool combined, const std::function<void(json&)>& more = {}) {
  std::string out, err, both;
  api::output_callback on_output = [&](api::output_stream s, std::string_view bytes) {
    if (cx.as_json()) {
      (s == api::output_stream::err ? err : out).append(bytes);
      if (combined)
        both.append(bytes);
    } else if (s == api::output_stream::err) {
      cx.err(bytes);
    } else {
      cx.out(bytes);
    }
  };
  auto r = client.exec(id, o, on_output);
  if (!r)
    return cx.fail(r.err());
  if (cx.as_json()) {
    auto doc = exec_result_json(*r);
    if (more)
      more(doc);
    put_bytes(doc, "stdout", out);
    put_bytes(doc, "stderr", err);
    if (combined)
      put_bytes(doc, "output", both);
    cx.print(doc);
  }
  return finish(cx, *r, o.timeout);
}

void add_exec(command_table& t) {
  struct args {
    std::string id;
    std::vector<std::string> command, env;
    std::string cwd, timeout;
    bool stdin_ = false, background = false;
    std::uint64_t max_output = 0;
  };
  auto a = std::make_shared<args>();
  auto* c =
    t.add(t.app(), "exec",
          "Run a command in a sandbox; its output streams back and sandboxctl exits with its code",
          "  sandboxctl exec sb-0a1b2c3d4e5f -- python3 -c 'print(6*7)'\n"
          "  tar c src | sandboxctl exec -i sb-0a1b2c3d4e5f -- tar x -C /workspace\n"
          "  sandboxctl exec --timeout 30s --cwd /workspace sb-0a1b2c3d4e5f -- make test",
          [a](context& cx) -> int {
            api::exec_options o;
            o.argv = a->command;
            o.cwd = a->cwd;
            o.max_output_bytes = a->max_output;
            if (int e = env_and_timeout(cx, a->env, a->timeout, o))
              return e;
            if (a->stdin_ && a->background)
              return cx.usage("-i and --background do not go together: a background exec gets no "
                              "stdin from sandboxctl");
            if (a->stdin_ && !read_all_fd(0, o.stdin_bytes))
              return cx.fail(make_error(errc::unavailable,
                                        std::string("cannot read stdin: ") + std::strerror(errno)));
            return with_client(cx, [&](api::client& client) -> int {
              if (a->background) {
                auto e = client.start(a->id, o);
                if (!e)
                  return cx.fail(e.err());
                if (cx.as_json())
                  cx.print(exec_info_json(*e));
                else
                  cx.out(terminal_text(e->exec_id) + "\n");
                return k_exit_ok;
              }
              return foreground(cx, client, a->id, o, false);
            });
          });
  c->add_option("id", a->id, "the sandbox's id")->required()->type_name("ID");
  c->add_option("command", a->command, "the command and its arguments, after --")
    ->required()
    ->type_name("CMD");
  c->add_option("--env,-e", a->env, "an environment variable for this command (repeatable)")
    ->type_name("K=V");
  c->add_option("--cwd,-w", a->cwd, "working directory (default: the template's, else /)")
    ->type_name("DIR");
  c->add_option("--timeout", a->timeout,
                "kill the command and everything it started after this long (default: none)")
    ->type_name("DURATION");
  c->add_flag("--stdin,-i", a->stdin_,
              "pass sandboxctl's stdin to the command, byte for byte (read to its end first)");
  c->add_flag("--background,-d", a->background,
              "start it and print its exec id (see ps, wait, kill); its output is not kept");
  c->add_option("--max-output", a->max_output,
                "bytes of stdout and of stderr to pass on (default: the node's cap)")
    ->type_name("BYTES");
}

void add_run(command_table& t) {
  struct args {
    std::string id, language, code, cwd, timeout;
    std::vector<std::string> env;
  };
  auto a = std::make_shared<args>();
  auto* c =
    t.add(t.app(), "run",
          "Run code in a sandbox with its language's interpreter (" + api::code_language_names() +
            "); sandboxctl exits with its code",
          "  sandboxctl run sb-0a1b2c3d4e5f --lang python 'print(sum([2, 3, 5]))'\n"
          "  sandboxctl run sb-0a1b2c3d4e5f --lang node < script.js\n"
          "  sandboxctl run --json sb-0a1b2c3d4e5f --lang sh 'echo out; echo err >&2'",
          [a](context& cx) -> int {
            auto lang = api::code_language_of(a->language);
            if (!lang)
              return cx.usage("--lang: " + lang.err().message);
            api::exec_options o;
            o.argv = lang->argv;
            o.cwd = a->cwd;
            if (int e = env_and_timeout(cx, a->env, a->timeout, o))
              return e;
            if (a->code.empty() || a->code == "-") { // the code is sandboxctl's stdin
              if (!read_all_fd(0, o.stdin_bytes))
                return cx.fail(make_error(errc::unavailable, std::string("cannot read stdin: ") +
                                                               std::strerror(errno)));
            } else {
              o.stdin_bytes = a->code;
            }
            return with_client(cx, [&](api::client& client) -> int {
              return foreground(cx, client, a->id, o, true,
                                [&](json& doc) { doc["language"] = lang->name; });
            });
          });
  c->add_option("id", a->id, "the sandbox's id")->required()->type_name("ID");
  c->add_option("--lang,-l", a->language, "the language: " + api::code_language_names())
    ->required()
    ->type_name("LANG");
  c->add_option("code", a->code, "the code (default, or -: read from stdin)")->type_name("CODE");
  c->add_option("--env,-e", a->env, "an environment variable for the code (repeatable)")
    ->type_name("K=V");
  c->add_option("--cwd,-w", a->cwd, "working directory (default: the template's, else /)")
    ->type_name("DIR");
  c->add_option("--timeout", a->timeout,
                "kill the interpreter and everything it started after this long (default: none)")
    ->type_name("DURATION");
}

void add_ps(command_table& t) {
  auto id = std::make_shared<std::string>();
  auto* c = t.add(t.app(), "ps", "List the execs running in a sandbox",
                  "  sandboxctl ps sb-0a1b2c3d4e5f", [id](context& cx) {
                    return with_client(cx, [&](api::client& client) {
                      auto execs = client.execs(*id);
                      if (!execs)
                        return cx.fail(execs.err());
                      if (cx.as_json()) {
                        json list = json::array();
                        for (const auto& e : *execs)
                          list.push_back(exec_info_json(e));
                        cx.print(json{{"execs", std::move(list)}});
                      } else {
                        cx.out(exec_table(*execs));
                      }
                      return k_exit_ok;
                    });
                  });
  c->add_option("id", *id, "the sandbox's id")->required()->type_name("ID");
}

struct exec_ref {
  std::string id, exec_id;
  void add_to(CLI::App* c) {
    c->add_option("id", id, "the sandbox's id")->required()->type_name("ID");
    c->add_option("exec_id", exec_id, "the exec's id (exec --background, ps)")
      ->required()
      ->type_name("EXEC_ID");
  }
};

void add_kill(command_table& t) {
  struct args {
    exec_ref ref;
    std::string signal = "TERM";
  };
  auto a = std::make_shared<args>();
  auto* c = t.add(t.app(), "kill", "Send a signal to an exec and everything it started",
                  "  sandboxctl kill sb-0a1b2c3d4e5f ex-3 --signal KILL", [a](context& cx) {
                    auto sig = parse_signal(a->signal);
                    if (!sig)
                      return cx.usage("--signal: " + sig.err().message);
                    return with_client(cx, [&](api::client& client) {
                      auto r = client.kill_exec(a->ref.id, a->ref.exec_id, *sig);
                      if (!r)
                        return cx.fail(r.err());
                      if (cx.as_json())
                        cx.print(json{{"exec_id", a->ref.exec_id}, {"signal", *sig}});
                      else
                        cx.out("sent " + signal_name(*sig) + " to exec " +
                               terminal_text(a->ref.exec_id) + "\n");
                      return k_exit_ok;
                    });
                  });
  a->ref.add_to(c);
  c->add_option("--signal,-s", a->signal, "TERM (default), KILL, INT, HUP, ... or a number")
    ->type_name("SIGNAL");
}

void add_wait(command_table& t) {
  auto ref = std::make_shared<exec_ref>();
  auto* c = t.add(t.app(), "wait", "Wait for a background exec to end and exit with its code",
                  "  EX=$(sandboxctl exec --background sb-0a1b2c3d4e5f -- make all)\n"
                  "  sandboxctl wait sb-0a1b2c3d4e5f \"$EX\"",
                  [ref](context& cx) {
                    return with_client(cx, [&](api::client& client) {
                      auto r = client.wait_exec(ref->id, ref->exec_id);
                      if (!r)
                        return cx.fail(r.err());
                      if (cx.as_json())
                        cx.print(exec_result_json(*r));
                      return finish(cx, *r, std::chrono::nanoseconds{0});
                    });
                  });
  ref->add_to(c);
}

} // namespace

void add_exec_commands(command_table& t) {
  add_exec(t);
  add_run(t);
  add_ps(t);
  add_kill(t);
  add_wait(t);
}

} // namespace sandboxd::cli
