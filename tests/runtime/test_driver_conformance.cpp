// The driver conformance suite: lifecycle and file operations, the same assertions
// against every driver (built once per driver; see driver_under_test.hpp). Exec, limits
// and pause semantics that need processes are in test_oci_driver.cpp.
#define BOOST_TEST_MODULE driver_conformance
#include <boost/test/unit_test.hpp>

#include "tests/runtime/driver_fixture.hpp"
#include "tests/support/temp_dir.hpp"

#include <algorithm>
#include <fstream>
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

BOOST_FIXTURE_TEST_CASE(outbound_network_is_refused, fixture) {
  create_request req;
  req.id = "net";
  req.network = network_policy::outbound;
  BOOST_TEST((d->create(req).code() == errc::invalid_argument));
  BOOST_TEST(d->list()->empty());
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

BOOST_AUTO_TEST_SUITE_END()
