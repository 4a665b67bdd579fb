// Terminal control bytes from a tenant, attacked through a real sandboxd (hollow runtime,
// embedded PostgreSQL) and sandboxctl: a sandbox labelled, and a file named, with an OSC
// sequence that retitles the terminal (ESC ] 0 ; ... BEL) and a newline followed by a fake
// row. `list`, `get`, `events` (the sandbox's history and the operator's whole-log view), `ls`
// and an error naming the path print them escaped (cli/terminal_text.hpp): no ESC or BEL
// byte reaches the terminal and the newline starts no line of its own. --json still
// returns the exact bytes.
#define BOOST_TEST_MODULE terminal_escapes
#include "tests/e2e/e2e_support.hpp"

#include "tests/projections/postgres_installed.hpp"

#include <algorithm>

using namespace sandboxd::test;

namespace {

const std::string k_hostile = "\x1b]0;pwned\x07\nfake row";
const std::string k_shown = "\\x1b]0;pwned\\x07\\x0afake row"; // as terminal_text shows it

// Human output that carries `k_hostile` only escaped: no ESC or BEL anywhere, no line that
// the hostile newline started, and the escaped form present (so the string was printed).
void expect_escaped(const std::string& what, const std::string& text) {
  BOOST_TEST_CONTEXT(what << ":\n" << text) {
    BOOST_TEST(text.find('\x1b') == std::string::npos);
    BOOST_TEST(text.find('\x07') == std::string::npos);
    BOOST_TEST(text.find("\nfake row") == std::string::npos);
    BOOST_TEST(text.find(k_shown) != std::string::npos);
  }
}

} // namespace

BOOST_AUTO_TEST_CASE(labels_and_file_names_with_control_bytes_are_printed_escaped,
                     *utf::precondition(postgres_installed)) {
  daemon_process d({"--runtime", "hollow"});
  const auto id = create(d, {"--label", "title=" + k_hostile, "--label", "case=escapes"});
  const std::string path = "/" + k_hostile;
  ctl_ok(d, {"write", id, path}, {"content"});

  // list reads the read models: the row is there once the projector has the create.
  ctl_result listed;
  BOOST_REQUIRE(eventually(
    [&] {
      listed = ctl(d, {"list", "--label", "case=escapes"});
      return listed.exit_code == 0 && listed.out.find(id) != std::string::npos;
    },
    30s));
  expect_escaped("list", listed.out);
  BOOST_TEST(std::count(listed.out.begin(), listed.out.end(), '\n') == 2, listed); // header, row
  expect_escaped("get", ctl_ok(d, {"get", id}));

  const auto history = ctl_ok(d, {"events", id});
  expect_escaped("events ID", history);
  BOOST_TEST(history.find("op=write path=\"/" + k_shown + "\"") != std::string::npos, history);
  const auto log = ctl_ok(d, {"events"}); // the whole log, the operator's view
  expect_escaped("events", log);
  for (std::istringstream in(log); !in.eof();) {
    std::string line;
    std::getline(in, line);
    BOOST_TEST((line.empty() || line.rfind("20", 0) == 0), "a line that is not an event: " << line);
  }

  const auto ls = ctl_ok(d, {"ls", id, "/"});
  expect_escaped("ls", ls);
  BOOST_TEST(std::count(ls.begin(), ls.end(), '\n') == 2, ls); // header, the one file

  // An error naming the path, on stderr.
  auto missing = ctl(d, {"stat", id, path + "-missing"});
  BOOST_TEST(missing.exit_code != 0, missing);
  BOOST_TEST(missing.err.find('\x1b') == std::string::npos, missing);
  BOOST_TEST(missing.err.find('\x07') == std::string::npos, missing);
  BOOST_TEST(std::count(missing.err.begin(), missing.err.end(), '\n') == 1, missing);

  // --json: the exact bytes.
  const auto rows = json::parse(ctl_ok(d, {"--json", "list", "--label", "case=escapes"}));
  BOOST_TEST_REQUIRE(rows.at("sandboxes").size() == 1u);
  BOOST_TEST(rows["sandboxes"][0]["labels"]["title"].get<std::string>() == k_hostile);
  const auto entries = json::parse(ctl_ok(d, {"--json", "ls", id, "/"})).at("entries");
  BOOST_TEST(std::any_of(entries.begin(), entries.end(),
                         [](const json& e) { return e.at("name") == k_hostile; }),
             entries.dump());
  bool label_seen = false, path_seen = false;
  for (const auto& e : ctl(d, {"--json", "events", id}).lines()) {
    const auto& p = e.at("payload");
    label_seen |= p.contains("labels") && p["labels"].value("title", "") == k_hostile;
    path_seen |= p.contains("path") && p["path"] == path;
  }
  BOOST_TEST(label_seen);
  BOOST_TEST(path_seen);
}
