// README.md's first session, run literally: its first shell block must be the start command
// (`scripts/start`: sandboxd on embedded defaults with its data in ./var), which the test
// stands for with a fresh sandboxd on <dir>/var; its second the test command; its third, the
// session, runs as written in bash (-e -o pipefail: every command must succeed) from <dir>,
// where ./var is that daemon's data directory and ./build the build tree, so sandboxctl's
// defaults find the daemon. If the README drifts from sandboxctl, this fails. The session
// uses the stock python template (after test_templates_e2e, which builds it on a machine's
// first run).
#define BOOST_TEST_MODULE first_session
#include "tests/e2e/stock_support.hpp"

using namespace sandboxd::test;

namespace {

// The ```sh blocks of a markdown page, in order.
std::vector<std::string> shell_blocks(const std::string& markdown) {
  std::vector<std::string> blocks;
  std::istringstream in(markdown);
  std::string line, block;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside && line == "```sh") {
      inside = true;
      block.clear();
    } else if (inside && line == "```") {
      inside = false;
      blocks.push_back(block);
    } else if (inside) {
      block += line + "\n";
    }
  }
  return blocks;
}

boost::test_tools::assertion_result a_runtime_can_run(utf::test_unit_id) {
  boost::test_tools::assertion_result r(true);
  if (::geteuid() != 0) {
    r = false;
    r.message() << "real sandboxes need root";
  } else if (auto why_crun = nd::runtime_unavailable(ev::runtime_kind::crun)) {
    if (auto why_runsc = nd::runtime_unavailable(ev::runtime_kind::runsc)) {
      r = false;
      r.message() << "no runtime can run sandboxes here: runsc: " << *why_runsc
                  << "; crun: " << *why_crun;
    }
  } else if (auto why = why_no_stock_build(); !why.empty()) {
    r = false;
    r.message() << "the session's python template cannot be had: " << why;
  }
  return r;
}

// The daemon of the session.
daemon_process& fresh() {
  static daemon_process d({});
  return d;
}

} // namespace

BOOST_AUTO_TEST_CASE(the_first_session_runs_as_written, *utf::precondition(a_runtime_can_run)) {
  const auto blocks = shell_blocks(read_text(source_dir() + "/README.md"));
  BOOST_REQUIRE_EQUAL(blocks.size(), 3u);
  // The start command the daemon below stands for: embedded defaults with ./var, and
  // sandboxctl built beside the daemon.
  BOOST_TEST(blocks[0] == "scripts/start\n");
  BOOST_TEST(blocks[1] == "scripts/test\n");
  const auto start = read_text(source_dir() + "/scripts/start");
  BOOST_TEST(start.find("--data-dir ./var") != std::string::npos);
  BOOST_TEST(start.find("--target sandboxd sandboxctl") != std::string::npos);
  auto& d = fresh();
  // <dir>/var is the daemon's data directory and <dir>/build the build tree, as in a checkout
  // where scripts/start ran.
  const std::string dir = d.dir().path();
  std::filesystem::create_directory_symlink(d.data(), dir + "/var");
  std::filesystem::create_directory_symlink(binary_dir(), dir + "/build");
  std::ofstream(dir + "/session.sh") << blocks[2];

  ctl_options o;
  o.cwd = dir;
  o.env = {{"SANDBOXD_ADDR", ""}, {"SANDBOXD_TOKEN", ""}, {"SANDBOXD_TOKEN_FILE", ""}};
  auto r = run_process("/bin/bash", {"-e", "-o", "pipefail", dir + "/session.sh"}, o);
  BOOST_TEST(r.exit_code == 0, r);
  for (const char* shown :
       {"state:             running", "\n10\n", "hello from Linux", "the command exited with 3",
        "first notes", "notes.txt", "written while paused", "refused: exit 202", "still running",
        "  created  dev  ", "  paused  system  mode=memory", "bill of tenant dev", "\ntotal ",
        "the audit chain holds", " deleted\n"})
    BOOST_TEST(r.out.find(shown) != std::string::npos, "'" << shown << "' not in:\n" << r.out);
}
