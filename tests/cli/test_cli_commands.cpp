// sandboxctl's command table as CLI11 parses it (global flags on either side of the command,
// `--` before an exec's command, optional values, the runner chosen), every command with
// help and an example; the reference docs/cli.md generated from the same table (the file in
// the repository must be current); the bash completion script run in bash, and the zsh one
// loaded by zsh.
#define BOOST_TEST_MODULE cli_commands
#include <boost/test/unit_test.hpp>

#include "cli/command_facts.hpp"
#include "cli/command_table.hpp"
#include "cli/completion.hpp"
#include "cli/json_shapes.hpp"
#include "cli/reference_markdown.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sys/stat.h>

using namespace sandboxd::cli;
using sandboxd::test::run_shell;
using sandboxd::test::shell_quote;
namespace utf = boost::unit_test;

namespace {

// Parses `args` (without the program name) into a fresh table.
std::unique_ptr<command_table> parsed(std::vector<std::string> args) {
  auto t = std::make_unique<command_table>();
  std::reverse(args.begin(), args.end()); // CLI11 takes them last first
  t->app().parse(args);
  return t;
}

std::vector<std::string> results(command_table& t, const std::string& command,
                                 const std::string& option) {
  return t.app().get_subcommand(command)->get_option(option)->results();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

boost::test_tools::assertion_result zsh_installed(utf::test_unit_id) {
  boost::test_tools::assertion_result r(run_shell("command -v zsh").exit_code == 0);
  r.message() << "zsh is not installed (scripts/setup installs it)";
  return r;
}

} // namespace

BOOST_AUTO_TEST_CASE(global_flags_go_before_or_after_the_command) {
  auto t = parsed({"--json", "get", "sb-1"});
  BOOST_TEST(t->globals().json);
  BOOST_TEST(command_table::path_of(t->chosen_command()) == "sandboxctl get");
  BOOST_TEST(t->chosen() != nullptr);
  t = parsed({"get", "sb-1", "--json", "--addr", "unix:/x"});
  BOOST_TEST(t->globals().json);
  BOOST_TEST(t->globals().connection.addr == "unix:/x");
  BOOST_TEST(results(*t, "get", "id") == std::vector<std::string>{"sb-1"});
}

BOOST_AUTO_TEST_CASE(exec_takes_everything_after_the_double_dash_as_the_command) {
  auto t = parsed(
    {"exec", "sb-1", "-i", "--env", "A=1", "--env", "B=2", "--", "sh", "-c", "exit 42", "--json"});
  BOOST_TEST(results(*t, "exec", "command") ==
             (std::vector<std::string>{"sh", "-c", "exit 42", "--json"}));
  BOOST_TEST(!t->globals().json); // after --, it is the command's
  BOOST_TEST(results(*t, "exec", "-i").size() == 1u);
  BOOST_TEST(results(*t, "exec", "--env") == (std::vector<std::string>{"A=1", "B=2"}));
  BOOST_CHECK_THROW(parsed({"exec", "sb-1", "ls", "-la"}), CLI::ParseError);
  BOOST_CHECK_THROW(parsed({"exec", "sb-1"}), CLI::ParseError);
}

BOOST_AUTO_TEST_CASE(auto_pause_takes_an_optional_mode) {
  auto t = parsed({"create", "--auto-pause"});
  BOOST_TEST(results(*t, "create", "--auto-pause").size() == 1u);
  t = parsed({"create", "--auto-pause=memory", "--label", "a=b", "--label", "c=d"});
  BOOST_TEST(results(*t, "create", "--auto-pause") == std::vector<std::string>{"memory"});
  BOOST_TEST(results(*t, "create", "--label").size() == 2u);
}

BOOST_AUTO_TEST_CASE(audit_runs_alone_or_with_verify_and_completion_needs_a_shell) {
  auto t = parsed({"audit", "--sandbox", "sb-1"});
  BOOST_TEST(command_table::path_of(t->chosen_command()) == "sandboxctl audit");
  BOOST_TEST(t->chosen() != nullptr);
  t = parsed({"audit", "verify"});
  BOOST_TEST(command_table::path_of(t->chosen_command()) == "sandboxctl audit verify");
  BOOST_TEST(t->chosen() != nullptr);
  BOOST_CHECK_THROW(parsed({"completion"}), CLI::ParseError);
  t = parsed({});
  BOOST_TEST(t->chosen() == nullptr);
  BOOST_CHECK_THROW(parsed({"nosuch"}), CLI::ParseError);
  BOOST_CHECK_THROW(parsed({"get", "sb-1", "--nosuch"}), CLI::ParseError);
  BOOST_CHECK_THROW(parsed({"events", "--from-seq", "3", "--from-offset", "1:2", "sb-1"}),
                    CLI::ParseError);
}

BOOST_AUTO_TEST_CASE(every_command_the_issue_names_exists_with_help_and_an_example) {
  command_table t;
  std::set<std::string> have;
  for (const auto& f : command_facts(t)) {
    have.insert(f.path);
    if (f.hidden)
      continue;
    BOOST_TEST(!f.summary.empty(), f.path);
    BOOST_TEST(f.example.find("sandboxctl ") != std::string::npos, f.path << " has no example");
  }
  for (const char* c : {"create",        "get",        "list",
                        "set-timeout",   "pause",      "resume",
                        "delete",        "exec",       "ps",
                        "kill",          "wait",       "write",
                        "read",          "ls",         "stat",
                        "mkdir",         "rm",         "mv",
                        "cp-in",         "cp-out",     "events",
                        "watch",         "bill",       "audit",
                        "audit verify",  "completion", "completion bash",
                        "completion zsh"})
    BOOST_TEST(have.count(c) == 1u, c);
  // --help of a command shows its example.
  auto* exec = t.app().get_subcommand("exec");
  BOOST_TEST(exec->help().find("Example:\n  sandboxctl exec") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(every_command_documents_the_json_it_prints) {
  command_table t;
  std::set<std::string> paths;
  for (const auto& f : command_facts(t)) {
    paths.insert(f.path);
    if (f.hidden)
      continue;
    const bool group_only = !f.subcommands.empty() && f.path != "audit";
    BOOST_TEST((group_only || json_output_of(f.path) != nullptr),
               "sandboxctl " << f.path << " --json is not documented in cli/json_shapes.cpp");
  }
  std::set<std::string> shapes, used;
  for (const auto& s : json_shapes())
    BOOST_TEST(shapes.insert(s.name).second, s.name << " twice");
  for (const auto& o : json_outputs()) {
    BOOST_TEST(paths.count(o.command.substr(0, o.command.find(" --"))) == 1u,
               o.command << " is no command");
    used.insert(o.shape);
  }
  used.insert("error_document");
  const std::regex ref("<([a-z_]+)>");
  for (const auto& s : json_shapes())
    for (const auto& f : s.fields)
      for (std::sregex_iterator m(f.type.begin(), f.type.end(), ref), end; m != end; ++m)
        used.insert((*m)[1]);
  for (const auto& u : used)
    BOOST_TEST(shapes.count(u) == 1u, "shape " << u << " is used but not defined");
  for (const auto& s : shapes)
    BOOST_TEST(used.count(s) == 1u, "shape " << s << " is defined but never printed");
}

BOOST_AUTO_TEST_CASE(a_document_that_differs_from_its_shape_is_told_how) {
  using nlohmann::json;
  const json limits = {
    {"memory_mib", 512}, {"cpu_millicores", 1000}, {"pids", 256}, {"disk_mib", 1024}};
  json row = {{"id", "sb-0a1b2c3d4e5f"},
              {"state", "paused"},
              {"template", "base"},
              {"limits", limits},
              {"labels", {{"team", "a"}}},
              {"pause_mode", nullptr},
              {"writable_bytes", 4096},
              {"created_at", "2026-12-01T13:59:27.045Z"},
              {"updated_at", "2026-12-01T14:00:00Z"},
              {"sequence", 7}};
  json page = {{"sandboxes", json::array({row})}, {"next_page_token", ""}};
  BOOST_TEST(shape_problems(page, "sandbox_list").empty());

  auto only = [](const json& doc, const std::string& shape) {
    auto p = shape_problems(doc, shape);
    return p.size() == 1 ? p.front() : "(" + std::to_string(p.size()) + " problems)";
  };
  json missing = row;
  missing.erase("sequence");
  BOOST_TEST(only(missing, "sandbox_row") == "sequence: missing");
  json extra = row;
  extra["secret"] = "x";
  BOOST_TEST(only(extra, "sandbox_row") == "secret: not documented in sandbox_row");
  json wrong = row;
  wrong["sequence"] = "7";
  BOOST_TEST(only(wrong, "sandbox_row") == "sequence: expected integer, got \"7\"");
  json null_id = row;
  null_id["id"] = nullptr;
  BOOST_TEST(only(null_id, "sandbox_row") == "id: expected string, got null");
  json bad_time = row;
  bad_time["created_at"] = "yesterday";
  BOOST_TEST(only(bad_time, "sandbox_row") == "created_at: expected time, got \"yesterday\"");
  json nested = page;
  nested["sandboxes"][0]["limits"].erase("pids");
  BOOST_TEST(only(nested, "sandbox_list") == "sandboxes[0].limits.pids: missing");
  // An optional field may be absent, and is checked when present.
  json file = {
    {"path", "/workspace/a"},          {"type", "regular"}, {"size", 1}, {"mode", "0644"},
    {"mtime", "2026-12-01T13:59:27Z"}, {"sha256", "ab"}};
  BOOST_TEST(shape_problems(file, "file_content").empty());
  file["content_base64"] = 3;
  BOOST_TEST(only(file, "file_content") == "content_base64: expected string, got 3");
}

BOOST_AUTO_TEST_CASE(docs_cli_md_is_generated_from_the_command_table) {
  command_table t;
  const std::string generated = reference_markdown(t);
  const std::string path = sandboxd::test::source_dir() + "/docs/cli.md";
  const std::string checked_in = read_file(path);
  BOOST_TEST((generated == checked_in),
             path << " is stale: regenerate it with `build/apps/sandboxctl generate-docs > "
                     "docs/cli.md`");
  for (const char* section :
       {"## Exit codes", "| 201 | `not_found` |", "| 200 | `usage` |", "### sandboxctl exec",
        "### sandboxctl audit verify", "`--auto-pause[=filesystem\\|memory]`",
        "sandboxctl exec [flags] ID -- CMD [ARGS...]", "## JSON output", "### sandbox_row",
        "With `--json`: one [`sandbox`](#sandbox)."})
    BOOST_TEST(generated.find(section) != std::string::npos, section);
}

BOOST_AUTO_TEST_CASE(the_bash_completion_completes_commands_flags_choices_and_ids) {
  command_table t;
  sandboxd::test::temp_dir dir("cli-completion");
  std::ofstream(dir / "completion.bash") << bash_completion(t);
  // A stand-in sandboxctl for the ids (`list -q`); the script calls ${COMP_WORDS[0]}.
  std::ofstream(dir / "sandboxctl") << "#!/bin/sh\n[ \"$1 $2\" = \"list -q\" ] && printf "
                                       "'sb-aaa\\nsb-abc\\nsb-zzz\\n'\n";
  ::chmod((dir / "sandboxctl").c_str(), 0755);
  auto complete = [&](const std::string& line) {
    // The words of `line`, the last one being completed ("" after a trailing blank).
    const std::string script = "source " + shell_quote(dir / "completion.bash") +
                               "; read -ra COMP_WORDS <<< " + shell_quote(line) + "; [[ " +
                               shell_quote(line) + " == *' ' ]] && COMP_WORDS+=('');" +
                               " COMP_WORDS[0]=" + shell_quote(dir / "sandboxctl") +
                               "; COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _sandboxctl;"
                               " printf '%s\\n' \"${COMPREPLY[@]}\"";
    auto r = run_shell("bash -c " + shell_quote(script) + " 2>&1");
    BOOST_TEST(r.exit_code == 0, line << ": " << r.output);
    return r.output;
  };
  BOOST_TEST(complete("sandboxctl pa") == "pause\n");
  BOOST_TEST(complete("sandboxctl --addr unix:/x ge") == "get\n");
  BOOST_TEST(complete("sandboxctl pause sb-1 --mode ") == "filesystem\nmemory\n");
  BOOST_TEST(complete("sandboxctl create --runtime ") == "runsc\ncrun\n");
  BOOST_TEST(complete("sandboxctl bill --by d") == "day\n");
  BOOST_TEST(complete("sandboxctl get sb-a") == "sb-aaa\nsb-abc\n");
  BOOST_TEST(complete("sandboxctl cp-in /nonexistent-x sb-z") == "sb-zzz\n");
  BOOST_TEST(complete("sandboxctl audit v") == "verify\n");
  BOOST_TEST(complete("sandboxctl completion ") == "bash\nzsh\n");
  BOOST_TEST(complete("sandboxctl exec sb-1 --time") == "--timeout\n");
  BOOST_TEST(complete("sandboxctl audit verify --te") == "--tenant\n");
  const auto globals = complete("sandboxctl get sb-1 --to");
  BOOST_TEST(globals == "--token\n--token-file\n");
}

// Drives an interactive zsh through zpty: types a line and TAB, and records every match the
// completion system hands to compadd.
constexpr const char* k_zsh_driver = R"(zmodload zsh/zpty
dir=$1 line=$2
rm -f $dir/hits $dir/ready
zpty z "PATH=$dir:\$PATH zsh -f -i"
zpty -w z "PS1='> '; fpath=($dir \$fpath); autoload -U compinit; compinit -u -d $dir/zcd"
zpty -w z "compadd() { builtin compadd -O __h \"\$@\"; print -rl -- \$__h >> $dir/hits; builtin compadd \"\$@\" }"
zpty -w z "print -r -- ready > $dir/ready"
for i in {1..200}; do [[ -f $dir/ready ]] && break; sleep 0.05; done
zpty -w -n z "$line"$'\t'
for i in {1..200}; do [[ -f $dir/hits ]] && break; sleep 0.05; done
sleep 0.3
zpty -d z
[[ -f $dir/hits ]] && sort -u $dir/hits | grep -v '^$'
exit 0
)";

BOOST_AUTO_TEST_CASE(the_zsh_completion_completes_in_zsh, *utf::precondition(zsh_installed)) {
  command_table t;
  sandboxd::test::temp_dir dir("cli-completion");
  std::ofstream(dir / "_sandboxctl") << zsh_completion(t);
  std::ofstream(dir / "driver.zsh") << k_zsh_driver;
  std::ofstream(dir / "sandboxctl") << "#!/bin/sh\n[ \"$1 $2\" = \"list -q\" ] && printf "
                                       "'sb-aaa\\nsb-abc\\nsb-zzz\\n'\n";
  ::chmod((dir / "sandboxctl").c_str(), 0755);
  auto syntax = run_shell("zsh -n " + shell_quote(dir / "_sandboxctl") + " 2>&1");
  BOOST_TEST(syntax.exit_code == 0, syntax.output);
  auto complete = [&](const std::string& line) {
    auto r = run_shell("timeout 30 zsh -f " + shell_quote(dir / "driver.zsh") + " " +
                       shell_quote(dir.path()) + " " + shell_quote(line) + " 2>&1");
    BOOST_TEST(r.exit_code == 0, line << ": " << r.output);
    return r.output;
  };
  BOOST_TEST(complete("sandboxctl pa") == "pause\n");
  BOOST_TEST(complete("sandboxctl pause sb-1 --mode ") == "filesystem\nmemory\n");
  BOOST_TEST(complete("sandboxctl get sb-a") == "sb-aaa\nsb-abc\n");
  BOOST_TEST(complete("sandboxctl audit v") == "verify\n");
  BOOST_TEST(complete("sandboxctl create --runt") == "--runtime\n");
  BOOST_TEST(complete("sandboxctl cp-in /nonexistent-x sb-z") == "sb-zzz\n");
}
