#include "cli/reference_markdown.hpp"

#include "cli/command_facts.hpp"
#include "cli/exit_codes.hpp"
#include "cli/json_shapes.hpp"

namespace sandboxd::cli {
namespace {

// `|` inside a table cell would end it.
std::string cell(const std::string& s) {
  std::string out;
  for (char c : s)
    out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

std::string flag_cell(const flag_fact& f) {
  std::string names;
  for (const auto& n : f.names)
    names += (names.empty() ? "" : ", ") + n;
  if (f.value.rfind("[=", 0) == 0)
    return "`" + names + f.value + "`";
  return "`" + names + (f.value.empty() ? "" : " " + f.value) + "`";
}

std::string flag_table(const std::vector<flag_fact>& flags) {
  std::string out = "| flag | what |\n| --- | --- |\n";
  for (const auto& f : flags)
    out +=
      "| " + cell(flag_cell(f)) + " | " + cell(f.help) + (f.required ? " (required)" : "") + " |\n";
  return out;
}

constexpr const char* k_intro =
  R"(sandboxctl is the command line of sandboxd: sandboxes, their files and
commands, bills, the audit log and the event stream. It talks to a running sandboxd over its
RPC API ([api.md](api.md)); every command is one call (or one stream) and exits.

## Connecting

| setting | flag | environment | default |
| --- | --- | --- | --- |
| address | `--addr` | `SANDBOXD_ADDR` | `unix:./var/sandboxd.sock` |
| token | `--token`, `--token-file` | `SANDBOXD_TOKEN`, `SANDBOXD_TOKEN_FILE` | the file `./var/dev-token` |
| CAs for TLS | `--tls-ca` | `SANDBOXD_TLS_CA` | the system's trust store |

A flag wins over the environment, the environment over the default. The defaults are what
`sandboxd` with no flags makes in its working directory (the data directory `./var`), so a
session on the same machine, from the same directory, needs no set-up. Addresses are
`unix:PATH` or `tcp:HOST:PORT` (TLS on every TCP address that is not loopback).

## Output

- For people: the new id (`create`), a table (`list`, `ls`, `ps`, `audit`, `bill`), `key:
  value` lines (`get`, `stat`), one line per event (`events`), or the bytes themselves
  (`read`, `exec`).
- `--json` (before or after the command): one JSON document on stdout and nothing else (JSON
  lines for `events`, `watch` and `replay`, one document per line); [JSON output](#json-output)
  lists every field of each. Field names are snake_case; times are
  RFC 3339 in UTC (`2026-12-01T13:59:27.045Z`); durations are seconds (`*_seconds`, 0 = off);
  digests are hex. Bytes that may not be text (exec output, file content) are a string when
  they are UTF-8 and `<name>_base64` otherwise. An error is `{"error": {"code", "message",
  "exit_code"}}`.
- Notes for people (`more rows: add --page-token …`, why an exec ended) go to stderr.
- Control bytes in output for people are escaped: every string a tenant chose (labels, file
  names, argv, template names and descriptions, and the names and paths in error messages and
  notes) is printed with each C0 control (0x00-0x1f: newline, CR and tab too), DEL (0x7f), C1
  control (U+0080-U+009F, and raw 0x80-0x9f) and byte that is not UTF-8 as `\xHH`, and a
  backslash as `\\`; other UTF-8 (`café`, `日本`) is kept. So a name holding ESC or an OSC
  sequence cannot retitle or clear the terminal, and a newline cannot fake a row (`\x0a`).
  In `events` lines a value with blanks, quotes or `=` is in double quotes (a quote inside as
  `\"`). `--json` and `bill --csv` keep the exact bytes, and so do the bytes themselves
  (`read`, `exec` and `run` output, `template build --verbose`).

## Exit codes

Errors go to stderr as one line, `sandboxctl: <code>: <message>`, where the message names
the thing and says what to do; the exit code tells the code apart:

@EXIT_CODES@
`exec` and `wait` exit with the command's own code (0-255), or 128 + N when signal N ended
it; an exec whose outcome sandboxd could not learn (it restarted meanwhile) is 206. The codes
200-210 are outside what shells and common tools exit with (0-2, 126, 127, 128-165, 255), so
an exit code in 200-210 is almost always sandboxctl's own; a command in the sandbox can still
exit with one of them itself. A script that must be sure reads the `sandboxctl: <code>:` line
on stderr (sandboxctl prints it only for its own errors) or uses `--json` (a result has
`exit_code`, an error has `error`). A command that is not found in the sandbox is the shell's 127, not a sandboxctl
error. A timed-out exec ends with 128 + 9 (SIGKILL) and a note on stderr.

## Durations and times

- Durations: a number and a unit, or several: `90s`, `15m`, `2h`, `1h30m`, `1d`, `500ms`;
  `0` turns a timeout off.
- Times: RFC 3339 (`2026-12-01T13:59:27Z`, `2026-12-01T14:59:27+01:00`), a date
  (`2026-12-01`, its midnight UTC), `now`, or a duration from now (`-1h`, `+30m`). `bill`
  widens its period to whole hours (its meters are kept by the hour).

## Exec

`exec` streams the command's stdout and stderr to sandboxctl's own as they arrive. With
`-i` it reads its stdin to the end first and hands the bytes to the command exactly (binary
safe: NUL bytes and invalid UTF-8 arrive as they are); without `-i` the command's stdin is
empty. `--timeout` kills the command and everything it started; without it the command runs
until it ends (or the sandbox stops). `exec --background` prints an exec id at once; `ps`,
`wait` and `kill` take it.

## Files

`write` and `cp-in` send the content in chunks; the file appears whole when the last chunk is
in (a reader sees the old file or the new one). `read` and `cp-out` are served while the
sandbox is paused too (from its writable layer); writes are refused (`conflict`) while it is
memory-paused. `cp-in` and `cp-out` show a progress bar on stderr for files of 8 MiB or more,
only when stderr is a terminal. `cp-out` writes `LOCAL.sandboxctl-partial` and renames it, so a
failed copy leaves nothing under the local name.

## Completion

`sandboxctl completion bash` and `sandboxctl completion zsh` print completion scripts
(commands, flags, and sandbox ids from `sandboxctl list -q`):

```sh
source <(sandboxctl completion bash)                                  # bash, this shell
sandboxctl completion zsh > "${fpath[1]}/_sandboxctl"                 # zsh, then restart it
```
)";

} // namespace

std::string reference_markdown(const command_table& t) {
  std::string out =
    "# sandboxctl\n\n"
    "<!-- Generated from the command table (cli/) by `sandboxctl generate-docs > docs/cli.md`; "
    "do not edit by hand. test_cli_commands fails when this file is stale. -->\n\n";
  std::string intro = k_intro;
  std::string codes = "| exit | code | meaning |\n| --- | --- | --- |\n";
  for (const auto& r : exit_code_table())
    codes += "| " + std::to_string(r.code) + " | `" + r.name + "` | " + cell(r.meaning) + " |\n";
  intro.replace(intro.find("@EXIT_CODES@"), std::string("@EXIT_CODES@").size(), codes);
  out += intro;

  const auto facts = command_facts(t);
  out += "\n## Commands\n\n| command | what |\n| --- | --- |\n";
  for (const auto& f : facts)
    if (!f.hidden)
      out += "| [`" + f.path + "`](#sandboxctl-" +
             [&] {
               std::string anchor;
               for (char c : f.path)
                 anchor += c == ' ' ? '-' : c;
               return anchor;
             }() +
             ") | " + cell(f.summary) + " |\n";

  out += "\n## Global flags\n\nAccepted before or after the command.\n\n" +
         flag_table(global_flag_facts(t));

  for (const auto& f : facts) {
    if (f.hidden)
      continue;
    out += "\n### sandboxctl " + f.path + "\n\n" + f.summary + ".\n\n```\n" + f.usage() + "\n```\n";
    if (!f.positionals.empty()) {
      out += "\n| argument | what |\n| --- | --- |\n";
      for (const auto& p : f.positionals)
        out += "| `" + p.name + "` | " + cell(p.help) + (p.required ? "" : " (optional)") + " |\n";
    }
    if (!f.flags.empty())
      out += "\n" + flag_table(f.flags);
    for (const auto& o : json_outputs())
      if (o.command == f.path || o.command.rfind(f.path + " --", 0) == 0)
        out += std::string("\nWith `--json`") +
               (o.command == f.path ? "" : " and `" + o.command.substr(f.path.size() + 1) + "`") +
               ": " + (o.lines ? "JSON lines, one [`" : "one [`") + o.shape + "`](#" + o.shape +
               ")" + (o.lines ? " per line" : "") + ".\n";
    if (!f.example.empty())
      out += "\nExample:\n\n```sh\n" + [&] {
        // The examples are indented by two for --help; the reference shows them flush.
        std::string e, line;
        for (std::size_t i = 0; i <= f.example.size(); ++i) {
          if (i == f.example.size() || f.example[i] == '\n') {
            e += (line.rfind("  ", 0) == 0 ? line.substr(2) : line) + "\n";
            line.clear();
          } else {
            line += f.example[i];
          }
        }
        return e;
      }() + "```\n";
  }
  return out + "\n" + json_shapes_markdown();
}

} // namespace sandboxd::cli
