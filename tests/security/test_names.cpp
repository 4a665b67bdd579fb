// Attacks through names: template names and sandbox ids spelled to leave their
// directory (`..` chains, /proc/self/root, absolute paths, NUL, mount-option and flag
// syntax), and symlinks planted in the templates directory pointing outside it, at a
// nested directory, or at another link. Every one must be refused before anything is
// mounted or created, and the refused sandbox must not exist afterwards. Built once per
// driver; the hollow driver checks names the same way without templates on disk.
#define BOOST_TEST_MODULE attack_names
#include <boost/test/unit_test.hpp>

#include "tests/runtime/driver_fixture.hpp"

#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace sandboxd::runtime;
using sandboxd::test::driver_fixture;
using sandboxd::test::driver_under_test;
using sandboxd::test::driver_usable;

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> hostile_names = {
  "../../../../../../../../../../proc/self/root",
  "../../../../../../../../../..",
  "/proc/self/root",
  "/",
  "/etc",
  "..",
  ".",
  "base/../../../../..",
  "base/",
  "proc/self/root",
  std::string("base\0/../../..", 14),
  std::string("base\0", 5),
  "base,lowerdir=/",
  "base:/",
  "-rf",
  "_x",
  "Base",
  "base tpl",
  "base\n",
  std::string(65, 'a'),
  "",
};

struct fixture : driver_fixture {
  // Every mount below the data directory but the layer pool (mounted while the driver
  // lives), as /proc/self/mountinfo says.
  std::string mounts_below_data() {
    std::ifstream in("/proc/self/mountinfo");
    std::string line, out;
    while (std::getline(in, line))
      if (line.find(data) != std::string::npos &&
          line.find(" " + data + "/layers ") == std::string::npos)
        out += line + "\n";
    return out;
  }

  void assert_refused(const outcome<sandbox_info>& c, errc code, const std::string& what) {
    BOOST_TEST(!c.ok(), what << " was accepted");
    if (!c.ok())
      BOOST_TEST((c.code() == code), what << ": " << c.err().message);
    BOOST_TEST(d->list()->empty(), what);
    BOOST_TEST(!fs::exists(data + "/sandboxes/victim"), what);
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(names, *boost::unit_test::precondition(driver_usable))

BOOST_FIXTURE_TEST_CASE(hostile_template_names_are_invalid_and_make_nothing, fixture) {
  for (const auto& name : hostile_names) {
    create_request req;
    req.id = "victim";
    req.template_name = name;
    assert_refused(d->create(req), errc::invalid_argument, "template '" + name + "'");
  }
  if (driver_under_test::runs_processes) {
    BOOST_TEST(mounts_below_data() == "");
    // Nothing was made in the templates directory but base's own build, if any.
    for (auto& e : fs::directory_iterator(data + "/templates"))
      BOOST_TEST(e.path().filename().string().starts_with("base"), e.path());
  }
}

BOOST_FIXTURE_TEST_CASE(hostile_sandbox_ids_are_invalid_in_every_call, fixture) {
  running("good");
  for (const auto& id : hostile_names) {
    create_request req;
    req.id = id;
    auto c = d->create(req);
    BOOST_TEST((c.code() == errc::invalid_argument), "create '" << id << "'");
    exec_request e;
    e.argv = {"true"};
    BOOST_TEST((d->exec(id, e).code() == errc::invalid_argument), id);
    BOOST_TEST((d->start(id).code() == errc::invalid_argument), id);
    BOOST_TEST((d->pause(id, pause_mode::filesystem).code() == errc::invalid_argument), id);
    BOOST_TEST((d->resume(id).code() == errc::invalid_argument), id);
    BOOST_TEST((d->read_file(id, "/etc/passwd").code() == errc::invalid_argument), id);
    BOOST_TEST((d->write_file(id, "/x", "x").code() == errc::invalid_argument), id);
    BOOST_TEST((d->list_dir(id, "/").code() == errc::invalid_argument), id);
    BOOST_TEST((d->stat(id, "/").code() == errc::invalid_argument), id);
    BOOST_TEST((d->usage(id).code() == errc::invalid_argument), id);
    BOOST_TEST((d->inspect(id).code() == errc::invalid_argument), id);
    BOOST_TEST((d->remove(id).code() == errc::invalid_argument), id);
  }
  // The one real sandbox is untouched by all of it.
  BOOST_TEST_REQUIRE(d->list()->size() == 1u);
  BOOST_TEST((status("good") == sandbox_status::running));
}

// Links in the templates directory are resolved by handle and accepted only when they
// name a <name>-<hash16> directory directly beside them.
struct planted_fixture : fixture {
  std::string templates = data + "/templates";
  std::string base_dir; // base-<hash16>
  std::string secret = dir.path() + "/host-secret";

  planted_fixture() {
    running("first"); // builds base
    base_dir = fs::read_symlink(templates + "/base").string();
    std::ofstream(secret) << "host secret";
    ::chmod(secret.c_str(), 0600);
    fs::create_directories(dir.path() + "/outside/etc");
    std::ofstream(dir.path() + "/outside/etc/passwd") << "root:x:0:0::/:/bin/sh\n";
  }

  void link(const std::string& name, const std::string& target) {
    fs::create_symlink(target, templates + "/" + name);
  }

  void assert_link_refused(const std::string& name) {
    std::string before = mounts_below_data();
    create_request req;
    req.id = "victim";
    req.template_name = name;
    auto c = d->create(req);
    BOOST_TEST(!c.ok(), "template " << name << " was accepted");
    if (!c.ok())
      BOOST_TEST((c.code() == errc::permission_denied), name << ": " << c.err().message);
    BOOST_TEST(!fs::exists(data + "/sandboxes/victim"), name);
    BOOST_TEST(mounts_below_data() == before, name);
    BOOST_TEST(d->list()->size() == 1u, name);
  }
};

BOOST_FIXTURE_TEST_CASE(planted_template_links_outside_or_nested_are_refused, planted_fixture,
                        *boost::unit_test::precondition([](boost::unit_test::test_unit_id) {
                          boost::test_tools::assertion_result r(driver_under_test::runs_processes);
                          r.message() << "the hollow driver reads no template from disk";
                          return r;
                        })) {
  link("root", "/");
  link("procroot", "/proc/self/root");
  link("dotdot", "../../../../../../../../../..");
  link("outside", dir.path() + "/outside");
  link("relative-out", "../../outside");
  link("nested", base_dir + "/etc");
  link("nested2", base_dir + "/..");
  link("base2", base_dir); // a valid directory, but not base2-<hash>
  link("chain", "base");   // a link to a link
  // A well-formed target that is itself a symlink to the host's root.
  link("fake", "fake-0123456789abcdef");
  link("fake-0123456789abcdef", "/");
  // A well-formed target that is a file, and a real directory where a link belongs.
  link("file", "file-0123456789abcdef");
  std::ofstream(templates + "/file-0123456789abcdef") << "x";
  fs::create_directories(templates + "/plain/etc");
  for (const char* name : {"root", "procroot", "dotdot", "outside", "relative-out", "nested",
                           "nested2", "base2", "chain", "fake", "file", "plain"})
    assert_link_refused(name);
  // The real template still works beside them.
  create_request ok;
  ok.id = "second";
  auto c = d->create(ok);
  BOOST_TEST_REQUIRE(c.ok(), (c ? "" : c.err().message));
}

// A refused create of an existing id, and a run of made-up ids, leave the driver as it
// was: the files of the real sandbox are intact and it still runs.
BOOST_FIXTURE_TEST_CASE(refused_names_do_not_touch_an_existing_sandbox, fixture) {
  running("keep");
  BOOST_TEST_REQUIRE(d->write_file("keep", "/workspace/k", "kept").ok());
  create_request req;
  req.id = "keep";
  req.template_name = "../../../../../../../..";
  BOOST_TEST((d->create(req).code() == errc::invalid_argument));
  req.template_name = "base";
  BOOST_TEST((d->create(req).code() == errc::conflict));
  for (int i = 0; i < 1000; ++i)
    BOOST_TEST_REQUIRE((d->inspect("made-up-" + std::to_string(i)).code() == errc::not_found));
  BOOST_TEST(d->read_file("keep", "/workspace/k").value() == "kept");
  BOOST_TEST((status("keep") == sandbox_status::running));
}

BOOST_AUTO_TEST_SUITE_END()
