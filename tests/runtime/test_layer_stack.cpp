// Template layers under real sandboxes (built once for crun, once for runsc): a layer is a
// directory named by its digest and stored once, mounted read-only; no two files of a
// stack share an inode number; a sandbox's root is its
// template's layers (whiteouts and opaque directories honoured) under its own writable
// layer; the layers are shared, never copied or changed by a sandbox; pauses and removal
// mount and unmount the stack and leave nothing mounted.
#define BOOST_TEST_MODULE layer_stack
#include <boost/test/unit_test.hpp>

#include "runtime/layer_store.hpp"
#include "runtime/template_store.hpp"
#include "tests/runtime/driver_fixture.hpp"

#include <fcntl.h>
#include <fstream>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

using namespace sandboxd::runtime;
using sandboxd::test::driver_fixture;
using sandboxd::test::driver_under_test;
using sandboxd::test::driver_usable;

namespace {

void write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

struct fixture {
  sandboxd::test::temp_dir dir{"layers"};
  bool searchable = ::chmod(dir.path().c_str(), 0711) == 0;
  std::string data = dir.path() + "/data";
  sandboxd::test::guardian cleanup{driver_fixture::crash_cleanup(dir.path())};
  std::shared_ptr<layer_store> store =
    std::make_shared<layer_store>(layer_store_options{dir.path() + "/store"});
  std::unique_ptr<oci_driver> d;
  std::string lowest, upper;

  fixture() {
    oci_options o;
    o.runtime = driver_under_test::kind;
    o.data_dir = data;
    o.template_layers = store;
    d = std::make_unique<oci_driver>(o);
    // The lowest layer: base, with /home/old.txt and /etc/motd.
    auto a = store->begin();
    std::string pa = store->path() + "/" + a.name;
    write_base_tree(pa);
    write(pa + "/home/old.txt", "old\n");
    write(pa + "/etc/motd", "from the lowest layer\n");
    lowest = store->commit(std::move(a)).summary.sha256;
    // Above it, in overlay format: /etc/motd whited out, /home opaque, a new file.
    auto b = store->begin();
    std::string pb = store->path() + "/" + b.name;
    std::filesystem::create_directories(pb + "/etc");
    std::filesystem::create_directories(pb + "/home");
    std::filesystem::create_directories(pb + "/opt");
    BOOST_TEST_REQUIRE(::mknod((pb + "/etc/motd").c_str(), S_IFCHR | 0, makedev(0, 0)) == 0);
    BOOST_TEST_REQUIRE(::setxattr((pb + "/home").c_str(), "trusted.overlay.opaque", "y", 1, 0) ==
                       0);
    write(pb + "/home/only.txt", "only\n");
    write(pb + "/opt/b.txt", "from the upper layer\n");
    upper = store->commit(std::move(b)).summary.sha256;
  }
  ~fixture() {
    if (auto all = d->list())
      for (auto& s : all.value())
        d->remove(s.id);
    d.reset();
  }

  void running(const std::string& id, std::vector<std::string> layers) {
    create_request req;
    req.id = id;
    req.template_name = "layered";
    req.layers = std::move(layers);
    auto c = d->create(req);
    BOOST_TEST_REQUIRE(c.ok(), (c ? "" : c.err().message));
    auto s = d->start(id);
    BOOST_TEST_REQUIRE(s.ok(), (s ? "" : s.err().message));
  }

  exec_result sh(const std::string& id, const std::string& script) {
    exec_request r;
    r.argv = {"/bin/sh", "-c", script};
    r.timeout = std::chrono::seconds(60);
    auto res = d->exec(id, r);
    BOOST_TEST_REQUIRE(res.ok(), (res ? "" : res.err().message));
    return res.value();
  }

  // Mounts below the test directory that are not the two layer pools.
  int stack_mounts() {
    std::ifstream in("/proc/self/mountinfo");
    std::string line;
    int n = 0;
    while (std::getline(in, line))
      n += line.find(data + "/sandboxes/") != std::string::npos;
    return n;
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(layer_stack, *boost::unit_test::precondition(driver_usable))

BOOST_FIXTURE_TEST_CASE(the_root_is_the_layers_stacked_with_whiteouts_and_opaque_dirs, fixture) {
  running("sb1", {lowest, upper});
  auto r = sh("sb1", "cat /opt/b.txt; test -e /etc/motd && echo motd-visible; ls /home; "
                     "stat -c %u /bin/busybox; test -x /bin/sh && echo shell");
  BOOST_TEST(r.exit_code == 0, r.stderr_data);
  BOOST_TEST(r.stdout_data == "from the upper layer\nonly.txt\n0\nshell\n");
  // The lowest layer alone shows what the upper one hides.
  running("sb2", {lowest});
  auto l = sh("sb2", "cat /etc/motd; ls /home; test -e /opt/b.txt || echo no-b");
  BOOST_TEST(l.stdout_data == "from the lowest layer\nold.txt\nno-b\n");
}

BOOST_FIXTURE_TEST_CASE(sandboxes_share_layers_and_never_change_them, fixture) {
  const auto bytes_before = store->bytes(lowest);
  running("sb1", {lowest, upper});
  running("sb2", {lowest, upper});
  auto w = sh("sb1", "echo mine > /etc/motd2; rm /bin/ls; echo x > /home/only.txt; "
                     "echo work > /workspace/w.txt");
  BOOST_TEST(w.exit_code == 0, w.stderr_data);
  auto other = sh("sb2", "test -e /etc/motd2 || echo clean; test -e /bin/ls && echo ls; "
                         "cat /home/only.txt");
  BOOST_TEST(other.stdout_data == "clean\nls\nonly\n");
  // The layers still digest to their names and took no bytes for the sandboxes.
  for (const auto& l : {lowest, upper}) {
    auto fd = store->open(l);
    BOOST_TEST_REQUIRE(bool(fd));
    unique_fd rd(::openat(fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    BOOST_TEST(digest_layer(rd.get()).sha256 == l);
  }
  BOOST_TEST(store->bytes(lowest) == bytes_before);
  // The layers under a sandbox's overlay are read-only mounts, root's writes included.
  int fd = ::open((data + "/sandboxes/sb1/lower/0/etc/new").c_str(), O_CREAT | O_WRONLY, 0644);
  BOOST_TEST(fd < 0);
  BOOST_TEST(errno == EROFS);
}

BOOST_FIXTURE_TEST_CASE(files_of_different_layers_are_different_files, fixture) {
  // A third layer of 60 files: with a numbering of its own per layer (one btrfs subvolume
  // each) they would take the inode numbers of the lowest layer's busybox and applets on
  // one device, and gVisor would serve one file's bytes for another; tar and cp -a would
  // take them for hard links.
  auto c = store->begin();
  std::string pc = store->path() + "/" + c.name;
  std::filesystem::create_directories(pc + "/opt/many");
  for (int i = 0; i < 60; ++i)
    write(pc + "/opt/many/f" + std::to_string(i), "file " + std::to_string(i) + "\n");
  const auto many = store->commit(std::move(c)).summary.sha256;
  running("sb1", {lowest, upper, many});
  auto r = sh("sb1", "find / -xdev ! -type d -exec stat -c '%d:%i %n' {} + | sort | "
                     "awk '{ if ($1 == k) print p \" = \" $2; k = $1; p = $2 }'; "
                     "cat /opt/many/f59 /opt/b.txt");
  BOOST_TEST(r.exit_code == 0, r.stderr_data);
  // No two paths with one (st_dev, st_ino), and each file reads as itself.
  BOOST_TEST(r.stdout_data == "file 59\nfrom the upper layer\n");
}

BOOST_FIXTURE_TEST_CASE(pauses_keep_the_stack_and_removal_unmounts_it, fixture) {
  running("sb1", {lowest, upper});
  sh("sb1", "echo kept > /workspace/k.txt");
  BOOST_TEST_REQUIRE(d->pause("sb1", pause_mode::filesystem).ok());
  BOOST_TEST(stack_mounts() == 0); // a filesystem-paused sandbox holds no mount
  auto offline = d->read_file("sb1", "/opt/b.txt");
  BOOST_TEST_REQUIRE(offline.ok(), (offline ? "" : offline.err().message));
  BOOST_TEST(offline.value() == "from the upper layer\n");
  BOOST_TEST_REQUIRE(d->resume("sb1").ok());
  BOOST_TEST(sh("sb1", "cat /workspace/k.txt /opt/b.txt").stdout_data ==
             "kept\nfrom the upper layer\n");
  BOOST_TEST_REQUIRE(d->pause("sb1", pause_mode::memory).ok());
  BOOST_TEST_REQUIRE(d->resume("sb1").ok());
  BOOST_TEST(sh("sb1", "cat /workspace/k.txt").stdout_data == "kept\n");
  BOOST_TEST(stack_mounts() > 0);
  BOOST_TEST_REQUIRE(d->remove("sb1").ok());
  d->drain_removals();
  BOOST_TEST(stack_mounts() == 0);
}

BOOST_FIXTURE_TEST_CASE(a_layer_missing_from_the_store_is_not_found, fixture) {
  create_request req;
  req.id = "sb1";
  req.template_name = "gone";
  req.layers = {lowest, std::string(64, 'a')};
  auto c = d->create(req);
  BOOST_TEST_REQUIRE(!c.ok());
  BOOST_TEST(c.err().code == sandboxd::errc::not_found);
  BOOST_TEST(c.err().message.find(std::string(64, 'a')) != std::string::npos);
  req.layers = {"../../etc"};
  auto bad = d->create(req);
  BOOST_TEST_REQUIRE(!bad.ok());
  BOOST_TEST(!d->inspect("sb1").ok());
}

BOOST_FIXTURE_TEST_CASE(the_same_tree_is_stored_once, fixture) {
  auto again = store->begin();
  std::string p = store->path() + "/" + again.name;
  std::filesystem::create_directories(p + "/etc");
  std::filesystem::create_directories(p + "/home");
  std::filesystem::create_directories(p + "/opt");
  BOOST_TEST_REQUIRE(::mknod((p + "/etc/motd").c_str(), S_IFCHR | 0, makedev(0, 0)) == 0);
  BOOST_TEST_REQUIRE(::setxattr((p + "/home").c_str(), "trusted.overlay.opaque", "y", 1, 0) == 0);
  write(p + "/home/only.txt", "only\n");
  write(p + "/opt/b.txt", "from the upper layer\n");
  // Same content, same modes, same owners; the mtimes are whole seconds apart at most.
  const auto stored = store->open(upper);
  struct timespec times[2] = {{0, UTIME_OMIT}, {0, 0}};
  for (const char* rel : {"opt/b.txt", "home/only.txt", "etc/motd", "etc", "home", "opt", "."}) {
    struct stat st {};
    BOOST_TEST_REQUIRE(::fstatat(stored.get(), rel, &st, AT_SYMLINK_NOFOLLOW) == 0);
    times[1] = st.st_mtim;
    BOOST_TEST_REQUIRE(::utimensat(again.fd.get(), rel, times, AT_SYMLINK_NOFOLLOW) == 0);
  }
  const auto before = store->list().size();
  auto c = store->commit(std::move(again));
  BOOST_TEST(c.reused);
  BOOST_TEST(c.summary.sha256 == upper);
  BOOST_TEST(store->list().size() == before);
}

BOOST_AUTO_TEST_SUITE_END()
