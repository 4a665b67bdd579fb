// The driver conformance suite: lifecycle, file operations (read, write, list, stat,
// make_dir, remove_path, rename_path), the sandbox's environment, exec's stdin, output
// streaming and signal_exec: the same assertions against every driver (built once per
// driver; see driver_under_test.hpp; the hollow driver plays `cat`, `env` and `sleep`).
// Limits and pause semantics that need processes are in test_oci_driver.cpp.
#define BOOST_TEST_MODULE driver_conformance
#include <boost/test/unit_test.hpp>

#include "tests/runtime/driver_fixture.hpp"
#include "tests/support/temp_dir.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <fstream>
#include <future>
#include <mutex>
#include <sstream>
#include <sys/stat.h>

using namespace sandboxd::runtime;
using sandboxd::test::driver_fixture;
using sandboxd::test::driver_under_test;
using sandboxd::test::driver_usable;

namespace {

using fixture = driver_fixture;

std::string all_bytes() {
  std::string s;
  for (int i = 0; i < 256; ++i)
    s += static_cast<char>(i);
  return s + std::string("\0\0tail\r\n", 8);
}

bool has_entry(const dir_listing& v, const std::string& name) {
  return std::any_of(v.entries.begin(), v.entries.end(), [&](auto& e) { return e.name == name; });
}

} // namespace

BOOST_AUTO_TEST_SUITE(conformance, *boost::unit_test::precondition(driver_usable))

BOOST_FIXTURE_TEST_CASE(create_shows_the_sandbox_in_list_as_created, fixture) {
  create_request req;
  req.id = "sb-1";
  auto c = d->create(req);
  BOOST_TEST_REQUIRE(c.ok(), (c ? "" : c.err().message));
  BOOST_TEST(c->id == "sb-1");
  BOOST_TEST(c->template_name == "base");
  auto l = d->list();
  BOOST_TEST_REQUIRE(l.ok());
  BOOST_TEST_REQUIRE(l->size() == 1u);
  BOOST_TEST(l->at(0).id == "sb-1");
  BOOST_TEST((l->at(0).status == sandbox_status::created));
}

BOOST_FIXTURE_TEST_CASE(invalid_id_is_invalid_argument_and_duplicate_is_conflict, fixture) {
  create_request req;
  req.id = "../escape";
  BOOST_TEST((d->create(req).code() == errc::invalid_argument));
  req.id = "dup";
  BOOST_TEST_REQUIRE(d->create(req).ok());
  BOOST_TEST((d->create(req).code() == errc::conflict));
}

// The fixture's driver has no link range (the hollow driver no links at all): a network is
// refused. test_sandbox_link gives a driver a link range.
BOOST_FIXTURE_TEST_CASE(outbound_network_is_refused_naming_the_mode_that_works, fixture) {
  create_request req;
  req.id = "net";
  req.network = network_policy::outbound;
  auto r = d->create(req);
  BOOST_TEST_REQUIRE((r.code() == errc::invalid_argument));
  BOOST_TEST(r.err().message.find("network none") != std::string::npos, r.err().message);
  BOOST_TEST(d->list()->empty());
}

// Skips a test on a driver that runs no processes, saying so.
boost::test_tools::assertion_result runs_processes(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result r(driver_under_test::runs_processes);
  if (!r)
    r.message() << "the hollow driver runs no processes: it has no network to look at";
  return r;
}

BOOST_FIXTURE_TEST_CASE(network_none_gives_a_sandbox_loopback_only, fixture,
                        *boost::unit_test::precondition(runs_processes)) {
  create_request req;
  req.id = "lo";
  req.network = network_policy::none;
  BOOST_TEST_REQUIRE(d->create(req).ok());
  BOOST_TEST_REQUIRE(d->start("lo").ok());
  exec_request r;
  r.argv = {"cat", "/proc/net/dev"};
  auto res = d->exec("lo", r);
  BOOST_TEST_REQUIRE(res.ok(), (res ? "" : res.err().message));
  BOOST_TEST_REQUIRE(res->exit_code == 0, res->stderr_data);
  // Two header lines, then one line per interface: only lo.
  std::istringstream lines(res->stdout_data);
  std::string line;
  std::vector<std::string> interfaces;
  for (int n = 0; std::getline(lines, line); ++n)
    if (n >= 2)
      interfaces.push_back(line.substr(0, line.find(':')));
  BOOST_TEST_REQUIRE(interfaces.size() == 1u, res->stdout_data);
  BOOST_TEST(interfaces[0].find("lo") != std::string::npos, res->stdout_data);
}

BOOST_FIXTURE_TEST_CASE(lifecycle_moves_through_each_status_and_refuses_misfits, fixture) {
  create_request req;
  req.id = "life";
  BOOST_TEST_REQUIRE(d->create(req).ok());
  exec_request e;
  e.argv = {"true"};
  BOOST_TEST((d->exec("life", e).code() == errc::conflict));
  BOOST_TEST((d->resume("life").code() == errc::conflict));
  BOOST_TEST_REQUIRE(d->start("life").ok());
  BOOST_TEST((status("life") == sandbox_status::running));
  BOOST_TEST((d->start("life").code() == errc::conflict));
  BOOST_TEST((d->resume("life").code() == errc::conflict));

  BOOST_TEST_REQUIRE(d->pause("life", pause_mode::filesystem).ok());
  BOOST_TEST((status("life") == sandbox_status::paused_filesystem));
  BOOST_TEST((d->exec("life", e).code() == errc::conflict));
  BOOST_TEST((d->pause("life", pause_mode::memory).code() == errc::conflict));
  BOOST_TEST_REQUIRE(d->resume("life").ok());
  BOOST_TEST((status("life") == sandbox_status::running));

  BOOST_TEST_REQUIRE(d->pause("life", pause_mode::memory).ok());
  BOOST_TEST((status("life") == sandbox_status::paused_memory));
  BOOST_TEST((d->exec("life", e).code() == errc::conflict));
  BOOST_TEST((d->write_file("life", "/a.txt", "x").code() == errc::conflict));
  BOOST_TEST_REQUIRE(d->resume("life").ok());
  BOOST_TEST((status("life") == sandbox_status::running));

  BOOST_TEST_REQUIRE(d->remove("life").ok());
  BOOST_TEST((d->inspect("life").code() == errc::not_found));
  BOOST_TEST(d->list()->empty());
  BOOST_TEST((d->remove("life").code() == errc::not_found));
}

// runsc accepts any unambiguous prefix of a container id; sandbox ids must not leak
// that into the driver.
BOOST_FIXTURE_TEST_CASE(ids_that_prefix_each_other_are_distinct_sandboxes, fixture) {
  running("p");
  running("p1");
  BOOST_TEST_REQUIRE(d->remove("p").ok());
  BOOST_TEST((status("p1") == sandbox_status::running));
  BOOST_TEST_REQUIRE(d->pause("p1", pause_mode::filesystem).ok());
  BOOST_TEST_REQUIRE(d->resume("p1").ok());
  BOOST_TEST((status("p1") == sandbox_status::running));
  BOOST_TEST_REQUIRE(d->list()->size() == 1u);
}

BOOST_FIXTURE_TEST_CASE(remove_leaves_no_directory, fixture) {
  running("gone");
  BOOST_TEST_REQUIRE(d->write_file("gone", "/workspace/a.txt", "a").ok());
  BOOST_TEST_REQUIRE(d->remove("gone").ok());
  BOOST_TEST(!std::filesystem::exists(data + "/sandboxes/gone"));
}

BOOST_FIXTURE_TEST_CASE(state_survives_a_new_driver_on_the_same_data_dir, fixture) {
  running("keep");
  BOOST_TEST_REQUIRE(d->write_file("keep", "/workspace/k.txt", "kept").ok());
  BOOST_TEST_REQUIRE(d->pause("keep", pause_mode::filesystem).ok());
  d = driver_under_test::make(data);
  auto l = d->list();
  BOOST_TEST_REQUIRE(l->size() == 1u);
  BOOST_TEST((l->at(0).status == sandbox_status::paused_filesystem));
  BOOST_TEST(d->read_file("keep", "/workspace/k.txt").value() == "kept");
  BOOST_TEST_REQUIRE(d->resume("keep").ok());
  BOOST_TEST(d->read_file("keep", "/workspace/k.txt").value() == "kept");
}

BOOST_FIXTURE_TEST_CASE(write_then_read_is_binary_exact_and_creates_parents, fixture) {
  running("files");
  auto bytes = all_bytes();
  auto w = d->write_file("files", "/workspace/deep/er/bin.dat", bytes);
  BOOST_TEST_REQUIRE(w.ok(), (w ? "" : w.err().message));
  auto r = d->read_file("files", "/workspace/deep/er/bin.dat");
  BOOST_TEST_REQUIRE(r.ok());
  BOOST_TEST((r.value() == bytes));
  auto st = d->stat("files", "/workspace/deep/er/bin.dat");
  BOOST_TEST_REQUIRE(st.ok());
  BOOST_TEST((st->type == file_type::regular));
  BOOST_TEST(st->size == bytes.size());
  BOOST_TEST((d->stat("files", "/workspace/deep")->type == file_type::directory));
}

BOOST_FIXTURE_TEST_CASE(overwrite_replaces_whole_content_and_leaves_no_temporary, fixture) {
  running("over");
  BOOST_TEST_REQUIRE(d->write_file("over", "/workspace/f.txt", std::string(10000, 'a')).ok());
  BOOST_TEST_REQUIRE(d->write_file("over", "/workspace/f.txt", "short").ok());
  BOOST_TEST(d->read_file("over", "/workspace/f.txt").value() == "short");
  auto l = d->list_dir("over", "/workspace");
  BOOST_TEST_REQUIRE(l.ok());
  BOOST_TEST_REQUIRE(l->entries.size() == 1u);
  BOOST_TEST(!l->truncated);
  BOOST_TEST(l->entries.at(0).name == "f.txt");
  BOOST_TEST(l->entries.at(0).info.size == 5u);
}

BOOST_FIXTURE_TEST_CASE(errors_distinguish_not_found_not_a_directory_and_is_a_directory, fixture) {
  running("errs");
  BOOST_TEST_REQUIRE(d->write_file("errs", "/workspace/file", "x").ok());
  BOOST_TEST((d->read_file("errs", "/workspace/missing").code() == errc::not_found));
  BOOST_TEST((d->read_file("errs", "/workspace/file/below").code() == errc::not_a_directory));
  BOOST_TEST((d->read_file("errs", "/workspace").code() == errc::is_a_directory));
  BOOST_TEST((d->write_file("errs", "/workspace", "x").code() == errc::is_a_directory));
  BOOST_TEST((d->write_file("errs", "/workspace/file/below", "x").code() == errc::not_a_directory));
  BOOST_TEST((d->list_dir("errs", "/workspace/file").code() == errc::not_a_directory));
  BOOST_TEST((d->list_dir("errs", "/nothing").code() == errc::not_found));
  BOOST_TEST((d->read_file("nosuch", "/x").code() == errc::not_found));
}

BOOST_FIXTURE_TEST_CASE(names_with_nul_are_refused, fixture) {
  running("nul");
  std::string name("/workspace/a\0b", 14);
  BOOST_TEST((d->write_file("nul", name, "x").code() == errc::invalid_argument));
  BOOST_TEST((d->read_file("nul", name).code() == errc::invalid_argument));
  BOOST_TEST((d->stat("nul", "/workspace/a").code() == errc::not_found));
}

BOOST_FIXTURE_TEST_CASE(write_file_keeps_only_permission_bits, fixture) {
  running("modes");
  for (std::uint32_t mode : {04755u, 02755u, 01777u, 07777u, 0640u}) {
    BOOST_TEST_REQUIRE(d->write_file("modes", "/workspace/m", "x", mode).ok());
    auto st = d->stat("modes", "/workspace/m");
    BOOST_TEST_REQUIRE(st.ok());
    BOOST_TEST(st->mode == (mode & 0777u), std::oct << mode << " gave " << st->mode);
  }
}

BOOST_FIXTURE_TEST_CASE(files_over_the_size_limit_are_too_large, fixture) {
  limits l;
  l.max_file_bytes = 1000;
  running("big", l);
  BOOST_TEST(
    (d->write_file("big", "/workspace/big", std::string(1001, 'b')).code() == errc::too_large));
  BOOST_TEST((d->stat("big", "/workspace/big").code() == errc::not_found));
  BOOST_TEST(d->write_file("big", "/workspace/ok", std::string(1000, 'b')).ok());
}

BOOST_FIXTURE_TEST_CASE(files_work_while_filesystem_paused, fixture) {
  running("off");
  BOOST_TEST_REQUIRE(d->write_file("off", "/workspace/before.txt", "before").ok());
  BOOST_TEST_REQUIRE(d->pause("off", pause_mode::filesystem).ok());
  BOOST_TEST(d->read_file("off", "/workspace/before.txt").value() == "before");
  BOOST_TEST_REQUIRE(d->write_file("off", "/workspace/sub/during.txt", "during").ok());
  BOOST_TEST(d->read_file("off", "/workspace/sub/during.txt").value() == "during");
  BOOST_TEST(has_entry(d->list_dir("off", "/workspace").value(), "sub"));
  BOOST_TEST_REQUIRE(d->resume("off").ok());
  BOOST_TEST(d->read_file("off", "/workspace/sub/during.txt").value() == "during");
}

BOOST_FIXTURE_TEST_CASE(usage_counts_the_writable_layer, fixture) {
  running("use");
  auto before = d->usage("use");
  BOOST_TEST_REQUIRE(before.ok());
  BOOST_TEST_REQUIRE(d->write_file("use", "/workspace/m.bin", std::string(1 << 20, 'm')).ok());
  auto after = d->usage("use");
  BOOST_TEST(after->writable_bytes >= before->writable_bytes + (1u << 20));
  BOOST_TEST(after->writable_bytes < before->writable_bytes + (1u << 20) + 65536);
}

// The escape suite: code in the sandbox plants names aimed at host files, then the
// sandbox is paused (offline) or running; no file operation touches the host canary.
struct escape_fixture : fixture {
  std::string canary = dir.path() + "/canary.txt";
  std::string canary_dir = dir.path() + "/canary-dir";
  struct stat before {};

  escape_fixture() {
    std::ofstream(canary) << "host secret";
    std::filesystem::create_directories(canary_dir);
    ::chmod(canary.c_str(), 0600);
    ::stat(canary.c_str(), &before);
    running("esc");
    auto plant = [&](const std::string& link, const std::string& target) {
      driver_under_test::plant_symlink(*d, data, "esc", link, target);
    };
    plant("/workspace/abs", canary);
    plant("/workspace/rel", "../../../../../../../../.." + canary);
    plant("/workspace/chain1", "/workspace/chain2");
    plant("/workspace/chain2", canary);
    plant("/workspace/dirlink", canary_dir);
    plant("/workspace/dotdot", "../../../../../../../../../../..");
  }

  void assert_host_untouched() {
    struct stat now {};
    BOOST_TEST_REQUIRE(::stat(canary.c_str(), &now) == 0);
    std::ifstream in(canary);
    std::string content((std::istreambuf_iterator<char>(in)), {});
    BOOST_TEST(content == "host secret");
    BOOST_TEST(now.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
    BOOST_TEST(now.st_mtim.tv_sec == before.st_mtim.tv_sec);
    BOOST_TEST(now.st_ino == before.st_ino);
    BOOST_TEST(std::filesystem::is_empty(canary_dir));
    BOOST_TEST(!std::filesystem::exists(dir.path() + "/planted.txt"));
  }

  void attack() {
    for (std::string name : {"/workspace/abs", "/workspace/rel", "/workspace/chain1"}) {
      auto r = d->read_file("esc", name);
      BOOST_TEST((!r.ok() || r.value() != "host secret"), name);
    }
    std::string up = "/../../../../../../../../.." + canary;
    auto r = d->read_file("esc", up);
    BOOST_TEST((!r.ok() || r.value() != "host secret"));
    // Writes through the links land inside the sandbox or fail; never on the host.
    d->write_file("esc", "/workspace/chain1", "pwned");
    d->write_file("esc", "/workspace/dirlink/planted.txt", "pwned");
    d->write_file("esc", "/workspace/dotdot" + dir.path() + "/planted.txt", "pwned");
    d->write_file("esc", up, "pwned");
    auto l = d->list_dir("esc", "/workspace/dirlink");
    BOOST_TEST((!l.ok() || l->entries.size() <= 1u));
    assert_host_untouched();
  }
};

BOOST_FIXTURE_TEST_CASE(planted_links_never_reach_host_files_while_running, escape_fixture) {
  attack();
}

BOOST_FIXTURE_TEST_CASE(planted_links_never_reach_host_files_while_paused, escape_fixture) {
  BOOST_TEST_REQUIRE(d->pause("esc", pause_mode::filesystem).ok());
  attack();
  BOOST_TEST_REQUIRE(d->resume("esc").ok());
  assert_host_untouched();
}

// --- make_dir, remove_path, rename_path -----------------------------------------------

BOOST_FIXTURE_TEST_CASE(make_dir_with_parents_without_and_through_a_file, fixture) {
  running("mk");
  BOOST_TEST_REQUIRE(d->make_dir("mk", "/workspace/a/b/c", true, 0750).ok());
  auto st = d->stat("mk", "/workspace/a/b/c");
  BOOST_TEST_REQUIRE(st.ok());
  BOOST_TEST((st->type == file_type::directory));
  BOOST_TEST(st->mode == 0750u);
  BOOST_TEST(d->make_dir("mk", "/workspace/a/b/c", true).ok()); // mkdir -p: already there
  BOOST_TEST((d->make_dir("mk", "/workspace/a/b/c", false).code() == errc::conflict));
  BOOST_TEST((d->make_dir("mk", "/workspace/none/x", false).code() == errc::not_found));
  BOOST_TEST(!d->stat("mk", "/workspace/none").ok());
  BOOST_TEST_REQUIRE(d->write_file("mk", "/workspace/f", "file").ok());
  BOOST_TEST((d->make_dir("mk", "/workspace/f/sub", false).code() == errc::not_a_directory));
  BOOST_TEST((d->make_dir("mk", "/workspace/f/sub", true).code() == errc::not_a_directory));
  BOOST_TEST((d->make_dir("mk", "/", true).code() == errc::invalid_argument));
  BOOST_TEST(d->read_file("mk", "/workspace/f").value() == "file");
}

BOOST_FIXTURE_TEST_CASE(rename_moves_files_and_directories_and_replaces_a_file, fixture) {
  running("mv");
  BOOST_TEST_REQUIRE(d->write_file("mv", "/workspace/a.txt", "A").ok());
  BOOST_TEST_REQUIRE(d->rename_path("mv", "/workspace/a.txt", "/workspace/b.txt").ok());
  BOOST_TEST((d->stat("mv", "/workspace/a.txt").code() == errc::not_found));
  BOOST_TEST(d->read_file("mv", "/workspace/b.txt").value() == "A");
  // A directory with what is in it.
  BOOST_TEST_REQUIRE(d->write_file("mv", "/workspace/dir/inner/x", "X").ok());
  BOOST_TEST_REQUIRE(d->rename_path("mv", "/workspace/dir", "/workspace/moved").ok());
  BOOST_TEST(d->read_file("mv", "/workspace/moved/inner/x").value() == "X");
  BOOST_TEST((d->stat("mv", "/workspace/dir").code() == errc::not_found));
  // Over an existing file: replaced, like rename(2).
  BOOST_TEST_REQUIRE(d->write_file("mv", "/workspace/old", "old content").ok());
  BOOST_TEST_REQUIRE(d->write_file("mv", "/workspace/new", "new").ok());
  BOOST_TEST_REQUIRE(d->rename_path("mv", "/workspace/new", "/workspace/old").ok());
  BOOST_TEST(d->read_file("mv", "/workspace/old").value() == "new");
  BOOST_TEST((d->stat("mv", "/workspace/new").code() == errc::not_found));
  // To a missing parent: not_found, and the source stays.
  auto r = d->rename_path("mv", "/workspace/old", "/workspace/missing/old");
  BOOST_TEST((r.code() == errc::not_found));
  BOOST_TEST(d->read_file("mv", "/workspace/old").value() == "new");
  BOOST_TEST(
    (d->rename_path("mv", "/workspace/nothing", "/workspace/x").code() == errc::not_found));
}

BOOST_FIXTURE_TEST_CASE(remove_is_recursive_only_when_asked, fixture) {
  running("rm");
  BOOST_TEST_REQUIRE(d->write_file("rm", "/workspace/t/a/b/deep.txt", "deep").ok());
  BOOST_TEST_REQUIRE(d->write_file("rm", "/workspace/t/top.txt", "top").ok());
  BOOST_TEST_REQUIRE(d->make_dir("rm", "/workspace/t/empty", false).ok());
  // A non-empty directory without recursive: conflict, and nothing in it is gone.
  BOOST_TEST((d->remove_path("rm", "/workspace/t", false).code() == errc::conflict));
  BOOST_TEST(d->read_file("rm", "/workspace/t/a/b/deep.txt").value() == "deep");
  BOOST_TEST(d->read_file("rm", "/workspace/t/top.txt").value() == "top");
  // A file and an empty directory need no recursive.
  BOOST_TEST(d->remove_path("rm", "/workspace/t/top.txt", false).ok());
  BOOST_TEST(d->remove_path("rm", "/workspace/t/empty", false).ok());
  BOOST_TEST((d->stat("rm", "/workspace/t/empty").code() == errc::not_found));
  BOOST_TEST_REQUIRE(d->remove_path("rm", "/workspace/t", true).ok());
  BOOST_TEST((d->stat("rm", "/workspace/t").code() == errc::not_found));
  BOOST_TEST((d->remove_path("rm", "/workspace/t", true).code() == errc::not_found));
  BOOST_TEST((d->remove_path("rm", "/", true).code() == errc::invalid_argument));
  BOOST_TEST(d->stat("rm", "/workspace").ok());
}

BOOST_FIXTURE_TEST_CASE(changes_work_filesystem_paused_and_are_conflict_memory_paused, fixture) {
  running("chg");
  BOOST_TEST_REQUIRE(d->write_file("chg", "/workspace/keep/k.txt", "k").ok());
  BOOST_TEST_REQUIRE(d->pause("chg", pause_mode::filesystem).ok());
  BOOST_TEST(d->make_dir("chg", "/workspace/off/line", true).ok());
  BOOST_TEST(d->rename_path("chg", "/workspace/keep", "/workspace/kept").ok());
  BOOST_TEST_REQUIRE(d->write_file("chg", "/workspace/gone/g", "g").ok());
  BOOST_TEST(d->remove_path("chg", "/workspace/gone", true).ok());
  BOOST_TEST_REQUIRE(d->resume("chg").ok());
  BOOST_TEST(d->stat("chg", "/workspace/off/line").ok());
  BOOST_TEST(d->read_file("chg", "/workspace/kept/k.txt").value() == "k");
  BOOST_TEST((d->stat("chg", "/workspace/gone").code() == errc::not_found));
  BOOST_TEST_REQUIRE(d->pause("chg", pause_mode::memory).ok());
  BOOST_TEST((d->make_dir("chg", "/workspace/m", true).code() == errc::conflict));
  BOOST_TEST((d->rename_path("chg", "/workspace/kept", "/workspace/k2").code() == errc::conflict));
  BOOST_TEST((d->remove_path("chg", "/workspace/kept", true).code() == errc::conflict));
  BOOST_TEST(d->read_file("chg", "/workspace/kept/k.txt").value() == "k");
  BOOST_TEST(has_entry(d->list_dir("chg", "/workspace").value(), "kept"));
  BOOST_TEST_REQUIRE(d->resume("chg").ok());
}

// --- the sandbox's environment, stdin, output, signals ---------------------------------

namespace {

// Runs `argv` in the sandbox; fails the test unless the driver answered.
exec_result run(driver& d, const std::string& id, std::vector<std::string> argv,
                std::vector<std::pair<std::string, std::string>> env = {}) {
  exec_request r;
  r.argv = std::move(argv);
  r.env = std::move(env);
  auto res = d.exec(id, r);
  BOOST_TEST_REQUIRE(res.ok(), (res ? "" : res.err().message));
  return res.value();
}

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

} // namespace

BOOST_FIXTURE_TEST_CASE(the_sandbox_env_is_seen_by_every_exec_and_survives, fixture) {
  create_request req;
  req.id = "env";
  req.env = {{"GREETING", "hello world"}, {"TOKEN", "s3cr3t=value"}};
  BOOST_TEST_REQUIRE(d->create(req).ok());
  BOOST_TEST_REQUIRE(d->start("env").ok());
  auto seen = run(*d, "env", {"env"});
  BOOST_TEST(has_line(seen.stdout_data, "GREETING=hello world"), seen.stdout_data);
  BOOST_TEST(has_line(seen.stdout_data, "TOKEN=s3cr3t=value"), seen.stdout_data);
  // The exec's own env is over the sandbox's.
  auto over = run(*d, "env", {"env"}, {{"GREETING", "bye"}, {"EXTRA", "1"}});
  BOOST_TEST(has_line(over.stdout_data, "GREETING=bye"), over.stdout_data);
  BOOST_TEST(!has_line(over.stdout_data, "GREETING=hello world"), over.stdout_data);
  BOOST_TEST(has_line(over.stdout_data, "EXTRA=1"), over.stdout_data);
  BOOST_TEST(!has_line(run(*d, "env", {"env"}).stdout_data, "EXTRA=1"));
  // A filesystem pause ends every process; the environment stays with the sandbox.
  BOOST_TEST_REQUIRE(d->pause("env", pause_mode::filesystem).ok());
  BOOST_TEST_REQUIRE(d->resume("env").ok());
  BOOST_TEST(has_line(run(*d, "env", {"env"}).stdout_data, "GREETING=hello world"));
  // A new driver on the same data directory (a restarted process) keeps it too.
  d.reset();
  d = driver_under_test::make(data);
  BOOST_TEST(has_line(run(*d, "env", {"env"}).stdout_data, "TOKEN=s3cr3t=value"));
}

BOOST_FIXTURE_TEST_CASE(an_invalid_env_is_refused_without_echoing_its_value, fixture) {
  create_request req;
  req.id = "badenv";
  req.env = {{"1BAD", "x"}};
  BOOST_TEST((d->create(req).code() == errc::invalid_argument));
  req.env = {{"SECRET", std::string("hunter2\0x", 9)}};
  auto r = d->create(req);
  BOOST_TEST_REQUIRE((r.code() == errc::invalid_argument));
  BOOST_TEST(r.err().message.find("SECRET") != std::string::npos, r.err().message);
  BOOST_TEST(r.err().message.find("hunter2") == std::string::npos, r.err().message);
  BOOST_TEST(d->list()->empty());
}

BOOST_FIXTURE_TEST_CASE(stdin_pulled_in_chunks_reaches_the_process_byte_exact, fixture) {
  running("in");
  std::string all = all_bytes();
  all += std::string(1, '\0');
  std::string big(65537, 'x');
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<char>((i * 7 + 3) % 256);
  all += big;
  exec_request r;
  r.argv = {"cat"};
  size_t at = 0, pulls = 0;
  r.stdin_source = [&](std::string& chunk) {
    if (at >= all.size())
      return false;
    size_t n = std::min<size_t>(all.size() - at, 1000 + 37 * pulls++); // uneven chunks
    chunk.assign(all, at, n);
    at += n;
    return true;
  };
  auto res = d->exec("in", r);
  BOOST_TEST_REQUIRE(res.ok(), (res ? "" : res.err().message));
  BOOST_TEST(res->exit_code == 0);
  BOOST_TEST(res->stdout_data.size() == all.size());
  BOOST_TEST((res->stdout_data == all));
  BOOST_TEST(pulls > 10u);
  // Both ways at once is refused.
  r.stdin_data = "x";
  BOOST_TEST((d->exec("in", r).code() == errc::invalid_argument));
}

BOOST_FIXTURE_TEST_CASE(output_is_streamed_in_order_before_the_result, fixture) {
  running("out");
  // Each chunk of stdin is given only once the previous one came back as output: were
  // the output held until the end, the source would wait in vain.
  std::mutex mu;
  std::condition_variable cv;
  std::string streamed;
  std::atomic<bool> returned{false}, late{false};
  exec_request r;
  r.argv = {"cat"};
  int next = 0;
  std::string expected;
  r.stdin_source = [&](std::string& chunk) {
    if (next == 8)
      return false;
    std::unique_lock<std::mutex> l(mu);
    bool came =
      cv.wait_for(l, std::chrono::seconds(20), [&] { return streamed.size() == expected.size(); });
    BOOST_TEST_REQUIRE(came, "the output of chunk " << next - 1 << " did not arrive");
    chunk = "chunk-" + std::to_string(next++) + "\n";
    expected += chunk;
    return true;
  };
  r.on_output = [&](output_stream s, std::string_view data) {
    if (returned)
      late = true;
    BOOST_TEST((s == output_stream::out));
    std::lock_guard<std::mutex> g(mu);
    streamed.append(data);
    cv.notify_all();
  };
  auto res = d->exec("out", r);
  returned = true;
  BOOST_TEST_REQUIRE(res.ok(), (res ? "" : res.err().message));
  BOOST_TEST(streamed == expected);
  BOOST_TEST(res->stdout_data == expected);
  BOOST_TEST(!late);
}

BOOST_FIXTURE_TEST_CASE(signal_exec_reaches_every_process_of_a_background_exec, fixture) {
  running("sig");
  std::promise<void> ready;
  std::once_flag once;
  exec_request r;
  r.exec_id = "bg";
  if (driver_under_test::runs_processes)
    r.argv = {"sh", "-c", "sleep 1000 & (sleep 1000 &) ; echo ready; wait"};
  else
    r.argv = {"sleep", "1000"};
  r.on_output = [&](output_stream, std::string_view data) {
    if (data.find("ready") != std::string_view::npos)
      std::call_once(once, [&] { ready.set_value(); });
  };
  auto running_exec = std::async(std::launch::async, [&] { return d->exec("sig", r); });
  if (driver_under_test::runs_processes) {
    BOOST_TEST_REQUIRE(
      (ready.get_future().wait_for(std::chrono::seconds(60)) == std::future_status::ready));
  } else {
    for (int i = 0; i < 500 && !d->signal_exec("sig", "bg", 0).ok(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  BOOST_TEST(d->signal_exec("sig", "bg", 0).ok());
  // A second exec with the same id while the first runs is refused.
  exec_request twin;
  twin.exec_id = "bg";
  twin.argv = {"true"};
  BOOST_TEST((d->exec("sig", twin).code() == errc::conflict));
  BOOST_TEST((d->signal_exec("sig", "other", SIGTERM).code() == errc::not_found));
  BOOST_TEST_REQUIRE(d->signal_exec("sig", "bg", SIGTERM).ok());
  BOOST_TEST_REQUIRE(
    (running_exec.wait_for(std::chrono::seconds(60)) == std::future_status::ready));
  auto res = running_exec.get();
  BOOST_TEST_REQUIRE(res.ok(), (res ? "" : res.err().message));
  BOOST_TEST(res->signal == SIGTERM);
  BOOST_TEST(res->exit_code == -1);
  BOOST_TEST((d->signal_exec("sig", "bg", SIGTERM).code() == errc::not_found));
  if (driver_under_test::runs_processes) {
    // Neither sleep outlived its exec, the one that left the tree included.
    auto ps = run(*d, "sig",
                  {"sh", "-c", "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done"});
    BOOST_TEST(ps.stdout_data.find("sleep 1000") == std::string::npos, ps.stdout_data);
  }
}

BOOST_AUTO_TEST_SUITE_END()
