// Attacks through the tree-changing calls (make_dir, remove_path, rename_path) and on the
// sandbox's environment: `..` and absolute symlinks aimed at host directories, a
// recursive removal of a tree holding a link to a host directory, code in the sandbox
// swapping a directory for a symlink to `/` or to another sandbox's layer while the
// calls run; and a secret environment value, which must be in no file under the data
// directory but the sandbox's own 0600 record and in no error message. Built once per
// runtime.
#define BOOST_TEST_MODULE attack_tree_changes
#include <boost/test/unit_test.hpp>

#include "tests/security/attack_fixture.hpp"

#include <chrono>
#include <csignal>
#include <filesystem>
#include <future>
#include <random>
#include <sys/stat.h>

using namespace sandboxd::runtime;
using sandboxd::test::attack_fixture;
using sandboxd::test::driver_under_test;
using sandboxd::test::driver_usable;
namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// Host canaries next to the data directory: a directory with a file in it, which no
// call on a sandbox may remove, rename, or create anything in.
struct fixture : attack_fixture {
  std::string host_dir = dir.path() + "/host-dir";
  std::string victim = host_dir + "/victim.txt";

  fixture() {
    fs::create_directories(host_dir);
    std::ofstream(victim) << "host data";
  }

  void assert_host_untouched() {
    BOOST_TEST(slurp(victim) == "host data");
    std::vector<std::string> names;
    for (auto& e : fs::directory_iterator(host_dir))
      names.push_back(e.path().filename().string());
    BOOST_TEST(names.size() == 1u, "the host directory holds " << names.size() << " entries");
    for (const char* n : {"/stolen", "/created", "/newdir", "/moved"})
      BOOST_TEST(!fs::exists(dir.path() + n), n);
  }

  // Every call aimed at the host through links planted in sandbox `id`.
  void attack(const std::string& id) {
    const std::string up = "/../../../../../../../../..";
    // Nothing reached through a link or `..` is removed.
    d->remove_path(id, "/workspace/abs/victim.txt", false);
    d->remove_path(id, "/workspace/dotdot" + victim, false);
    d->remove_path(id, up + victim, false);
    d->remove_path(id, up + host_dir, true);
    // Nothing is renamed away from the host, or onto it.
    d->rename_path(id, "/workspace/abs/victim.txt", "/workspace/stolen");
    d->rename_path(id, up + victim, "/workspace/stolen");
    BOOST_TEST_REQUIRE(d->write_file(id, "/workspace/mine", "sandbox").ok());
    d->rename_path(id, "/workspace/mine", "/workspace/abs/created");
    d->rename_path(id, "/workspace/mine", up + dir.path() + "/created");
    d->rename_path(id, "/workspace/mine", "/workspace/dotdot" + dir.path() + "/moved");
    // Nothing is created there.
    d->make_dir(id, "/workspace/abs/newdir", true);
    d->make_dir(id, up + dir.path() + "/newdir", true);
    d->make_dir(id, "/workspace/dotdot" + host_dir + "/newdir", false);
    assert_host_untouched();
    // A tree holding a link to the host directory: the link goes, the target stays.
    BOOST_TEST_REQUIRE(d->make_dir(id, "/workspace/tree/sub", true).ok());
    BOOST_TEST_REQUIRE(d->write_file(id, "/workspace/tree/sub/f", "f").ok());
    BOOST_TEST_REQUIRE(d->rename_path(id, "/workspace/abs", "/workspace/tree/sub/link").ok());
    auto removed = d->remove_path(id, "/workspace/tree", true);
    BOOST_TEST(removed.ok(), (removed ? "" : removed.err().message));
    BOOST_TEST((d->stat(id, "/workspace/tree").code() == errc::not_found));
    assert_host_untouched();
  }

  void plant_links(const std::string& id) {
    driver_under_test::plant_symlink(*d, data, id, "/workspace/abs", host_dir);
    driver_under_test::plant_symlink(*d, data, id, "/workspace/dotdot",
                                     "../../../../../../../../../../..");
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(tree_changes, *boost::unit_test::precondition(driver_usable))

BOOST_FIXTURE_TEST_CASE(links_and_dotdot_never_reach_the_host_while_running, fixture) {
  running("run");
  plant_links("run");
  attack("run");
}

BOOST_FIXTURE_TEST_CASE(links_and_dotdot_never_reach_the_host_while_paused, fixture) {
  running("off");
  plant_links("off");
  BOOST_TEST_REQUIRE(d->pause("off", pause_mode::filesystem).ok());
  attack("off");
  BOOST_TEST_REQUIRE(d->resume("off").ok());
  assert_host_untouched();
}

// Code in sandbox "swap" turns /workspace/race/d from a directory into a symlink to `/`
// and to sandbox "other"'s merged root (its host path) and back, as fast as it can,
// while the driver removes, renames and makes directories through that name.
BOOST_FIXTURE_TEST_CASE(a_directory_swapped_for_symlinks_while_calls_run_changes_nothing_outside,
                        fixture) {
  running("swap");
  running("other");
  BOOST_TEST_REQUIRE(d->write_file("other", "/workspace/keep/precious", "other's").ok());
  const std::string other_root = merged("other");
  exec_request loop;
  loop.exec_id = "swapper";
  loop.timeout = std::chrono::seconds(90); // ends it should the test fail before the signal
  loop.argv = {"/bin/sh", "-c",
               "cd /workspace && mkdir -p race && while true; do "
               "mkdir -p race/d/sub && echo x > race/d/sub/f; "
               "rm -rf race/d; ln -s / race/d; rm -f race/d; "
               "ln -s \"$1\" race/d; rm -f race/d; "
               "ln -s \"$1/workspace\" race/d; rm -f race/d; done",
               "sh", other_root};
  auto swapper = std::async(std::launch::async, [&] { return d->exec("swap", loop); });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(8);
  int calls = 0;
  while (std::chrono::steady_clock::now() < until) {
    d->remove_path("swap", "/workspace/race/d", true);
    d->remove_path("swap", "/workspace/race/d/workspace/keep", true);
    d->remove_path("swap", "/workspace/race/d/sub/f", false);
    d->rename_path("swap", "/workspace/race/d/sub", "/workspace/moved-sub");
    d->rename_path("swap", "/workspace/race/d/workspace/keep/precious", "/workspace/stolen");
    d->make_dir("swap", "/workspace/race/d/tmp/created", true);
    d->make_dir("swap", "/workspace/race/d/workspace/keep/created", true);
    calls += 7;
  }
  for (int i = 0; i < 100 && !d->signal_exec("swap", "swapper", 0).ok(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  BOOST_TEST(d->signal_exec("swap", "swapper", SIGKILL).ok());
  BOOST_TEST_REQUIRE((swapper.wait_for(std::chrono::seconds(60)) == std::future_status::ready));
  BOOST_TEST(calls > 20);
  // The other sandbox's files are as they were, and nothing was made in them.
  BOOST_TEST(d->read_file("other", "/workspace/keep/precious").value() == "other's");
  auto keep = d->list_dir("other", "/workspace/keep");
  BOOST_TEST_REQUIRE(keep.ok());
  BOOST_TEST(keep->entries.size() == 1u);
  BOOST_TEST((d->stat("other", "/tmp/created").code() == errc::not_found));
  BOOST_TEST(slurp(merged("other") + "/workspace/keep/precious") == "other's");
  // The host's root (read-only in this test's jail anyway) and the test directory got
  // nothing either.
  BOOST_TEST(!fs::exists("/tmp/created"));
  BOOST_TEST(!fs::exists("/moved-sub"));
  assert_host_untouched();
}

BOOST_FIXTURE_TEST_CASE(a_secret_env_value_is_only_in_the_sandbox_record, fixture) {
  std::mt19937_64 rng{std::random_device{}()};
  const std::string secret = "sbxsecret" + std::to_string(rng()) + std::to_string(rng());
  create_request req;
  req.id = "sec";
  req.env = {{"API_TOKEN", secret}};
  BOOST_TEST_REQUIRE(d->create(req).ok());
  BOOST_TEST_REQUIRE(d->start("sec").ok());
  auto e = sh("sec", "echo \"$API_TOKEN\" | wc -c; echo done");
  BOOST_TEST(e.stdout_data.find(std::to_string(secret.size() + 1)) != std::string::npos,
             e.stdout_data);
  // Through pauses and a second exec, with the process running while the files are read.
  BOOST_TEST_REQUIRE(d->pause("sec", pause_mode::filesystem).ok());
  BOOST_TEST_REQUIRE(d->resume("sec").ok());
  exec_request bg;
  bg.exec_id = "bg";
  bg.argv = {"/bin/sh", "-c", "echo started; sleep 1000"};
  bg.timeout = std::chrono::seconds(90); // ends it should the test fail before the signal
  std::promise<void> started;
  std::once_flag once;
  bg.on_output = [&](output_stream, std::string_view) {
    std::call_once(once, [&] { started.set_value(); });
  };
  auto running_bg = std::async(std::launch::async, [&] { return d->exec("sec", bg); });
  BOOST_TEST_REQUIRE(
    (started.get_future().wait_for(std::chrono::seconds(60)) == std::future_status::ready));
  // Errors of the driver about the sandbox and its environment never quote the value.
  std::vector<std::string> messages;
  auto dup = d->create(req);
  BOOST_TEST_REQUIRE(!dup.ok());
  messages.push_back(dup.err().message);
  create_request bad = req;
  bad.id = "sec2";
  bad.env = {{"API_TOKEN", secret + std::string(1, '\0')}};
  messages.push_back(d->create(bad).err().message);
  bad.env = {{"API_TOKEN", secret + "\xff"}};
  messages.push_back(d->create(bad).err().message);
  exec_request wrong;
  wrong.argv = {"env"};
  wrong.cwd = "relative";
  messages.push_back(d->exec("sec", wrong).err().message);
  for (const auto& m : messages)
    BOOST_TEST(m.find(secret) == std::string::npos, m);
  // Every file under the data directory (the layer pool's image, gigabytes of mostly
  // holes, aside: the layers are read through their mounted directories).
  std::vector<std::string> holders, unreadable;
  for (auto it =
         fs::recursive_directory_iterator(data, fs::directory_options::skip_permission_denied);
       it != fs::recursive_directory_iterator(); ++it) {
    std::error_code ec;
    if (!it->is_regular_file(ec) || it->is_symlink(ec) || it->path().filename() == "layers.img")
      continue;
    std::string content;
    try {
      content = slurp(it->path());
    } catch (const std::exception&) {
      unreadable.push_back(it->path().string());
    }
    if (content.find(secret) != std::string::npos)
      holders.push_back(it->path().string());
  }
  // Only runsc's network namespace handle (a bind of an nsfs file, no data) cannot be read.
  for (const auto& u : unreadable)
    BOOST_TEST(u == data + "/state/runsc/null-netns", u);
  // The record is sandbox.json and the slot its updates are swapped through.
  const std::string dir_of_record = data + "/sandboxes/sec/";
  BOOST_TEST(!holders.empty());
  for (const auto& h : holders) {
    BOOST_TEST((h == dir_of_record + "sandbox.json" || h == dir_of_record + ".sandbox.json.next"),
               h);
    struct stat st {};
    BOOST_TEST_REQUIRE(::stat(h.c_str(), &st) == 0);
    BOOST_TEST((st.st_mode & 0777) == 0600u, h);
    BOOST_TEST(st.st_uid == 0u, h);
  }
  auto killed = d->signal_exec("sec", "bg", SIGKILL);
  BOOST_TEST(killed.ok(), (killed ? "" : killed.err().message));
  BOOST_TEST_REQUIRE((running_bg.wait_for(std::chrono::seconds(60)) == std::future_status::ready));
}

BOOST_AUTO_TEST_SUITE_END()
