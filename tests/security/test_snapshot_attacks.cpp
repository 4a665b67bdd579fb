// Snapshots attacked through a real sandboxd (crun) with two tenants' tokens (docs/snapshots.md):
//   - another tenant's snapshot is NOT_FOUND for every call that names one (get, delete, a
//     create from it), word for word what an id nobody has answers, and is not listed; a
//     snapshot of another tenant's sandbox is NOT_FOUND and takes nothing;
//   - a forged snapshot id (a path, traversal, another form) is INVALID_ARGUMENT for every call,
//     before anything is looked up or logged;
//   - a snapshot is never writable in place: the subvolume is read-only to the kernel (root's
//     own writes fail with EROFS), a fork's writes and a change of the source after the snapshot
//     leave its tree exactly as it was, and the pool's snapshot directory is root's alone.
#define BOOST_TEST_MODULE snapshot_attacks
#include "tests/e2e/api_e2e_support.hpp"

#include "base/sha256.hpp"
#include "runtime/tree_walk.hpp"

#include <sys/stat.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

using namespace sandboxd;
using namespace sandboxd::test;
using sandboxd::errc;

namespace {

struct world {
  temp_dir config{"snap-attacks"};
  daemon_process d{{"--runtime", "crun", "--tokens-file", write_tokens_file(config.path())}};
};

world& shared() {
  static world w;
  return w;
}

// Every entry of a tree (names, types, modes, owners, sizes, contents), walked by handle.
std::string tree_listing(const std::string& dir) {
  std::string out;
  const int parent = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  BOOST_REQUIRE(parent >= 0);
  runtime::tree_visitor v;
  v.on_leaf = [&](int p, const std::string& name, const struct stat& st) {
    out += name + " " + std::to_string(st.st_mode) + " " + std::to_string(st.st_uid) + " " +
           std::to_string(st.st_size);
    if (S_ISREG(st.st_mode)) {
      const int fd = ::openat(p, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      std::string content(static_cast<std::size_t>(st.st_size), '\0');
      BOOST_REQUIRE(fd >= 0 && ::read(fd, content.data(), content.size()) == st.st_size);
      ::close(fd);
      out += " " + to_hex(sha256_of(content));
    }
    out += "\n";
  };
  v.on_dir_done = [&](int, const std::string& name) { out += name + "/\n"; };
  runtime::walk_tree(parent, "upper", v);
  ::close(parent);
  return out;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

} // namespace

BOOST_AUTO_TEST_SUITE(snapshot_attacks, *utf::precondition(crun_can_run))

BOOST_AUTO_TEST_CASE(another_tenants_snapshot_is_not_found_for_every_call) {
  auto& d = shared().d;
  auto acme = connect(d, k_token_acme);
  auto globex = connect(d, k_token_globex);
  auto sb = must(acme.create(crun_sandbox()), "create");
  must_shell(acme, sb.id, "echo secret > /secret.txt");
  auto snap = must(acme.snapshot(sb.id, "acme's"), "snapshot");
  const std::string nobodys = "snap-0123456789abcdef";

  auto same_not_found = [&](const auto& theirs, const auto& none, const std::string& what) {
    auto t = must_fail(theirs, errc::not_found, what + " of acme's snapshot");
    auto n = must_fail(none, errc::not_found, what + " of a missing snapshot");
    BOOST_TEST(replace_all(t.message, snap.id, "ID") == replace_all(n.message, nobodys, "ID"));
  };
  same_not_found(globex.get_snapshot(snap.id), globex.get_snapshot(nobodys), "get");
  same_not_found(globex.delete_snapshot(snap.id), globex.delete_snapshot(nobodys), "delete");
  api::create_options theirs, none;
  theirs.from_snapshot = snap.id;
  none.from_snapshot = nobodys;
  same_not_found(globex.create(theirs), globex.create(none), "create from");
  must_fail(globex.fork(sb.id), errc::not_found, "fork of acme's sandbox");
  must_fail(globex.snapshot(sb.id), errc::not_found, "snapshot of acme's sandbox");
  BOOST_TEST(must(globex.list_snapshots(), "globex list").empty());
  BOOST_TEST(must(globex.list_snapshots(sb.id), "globex list of acme's sandbox").empty());

  // acme's snapshot is untouched and still its own; globex made no sandbox and no snapshot.
  BOOST_TEST(must(acme.get_snapshot(snap.id), "acme get").name == "acme's");
  BOOST_TEST(must(acme.list_snapshots(), "acme list").size() == 1u);
  must(acme.delete_snapshot(snap.id), "acme deletes its own");
  must_fail(acme.get_snapshot(snap.id), errc::not_found, "deleted");
  must(acme.remove(sb.id), "delete");
}

BOOST_AUTO_TEST_CASE(forged_snapshot_ids_are_refused_before_anything_is_looked_up) {
  auto& d = shared().d;
  auto acme = connect(d, k_token_acme);
  const auto before = must(acme.list_snapshots(), "list").size();
  for (const std::string& forged :
       {std::string("../../etc"), std::string("snap-../../../etc/passwd"),
        std::string("/tmp/sandboxd-test"), std::string("snap-0123"),
        std::string("snap-0123456789ABCDEF"), std::string("snap-0123456789abcdef/.."),
        std::string("snap-0123456789abcde\n"), std::string(".snapshots"), std::string(1000, 'a'),
        std::string("snap-0123456789abcdef\0x", 23)}) {
    BOOST_TEST_CONTEXT("id of " << forged.size() << " bytes") {
      auto g = must_fail(acme.get_snapshot(forged), errc::invalid_argument, "get");
      BOOST_TEST(g.message.find("snap- and 16 hex digits") != std::string::npos, g.message);
      must_fail(acme.delete_snapshot(forged), errc::invalid_argument, "delete");
      api::create_options o;
      o.from_snapshot = forged;
      must_fail(acme.create(o), errc::invalid_argument, "create from");
    }
  }
  BOOST_TEST(must(acme.list_snapshots(), "list").size() == before);
}

BOOST_AUTO_TEST_CASE(a_snapshot_cannot_be_written_in_place) {
  auto& d = shared().d;
  auto acme = connect(d, k_token_acme);
  auto sb = must(acme.create(crun_sandbox()), "create");
  must_shell(acme, sb.id, "mkdir -p /data && echo one > /data/a.txt && ln -s /etc /data/link");
  auto snap = must(acme.snapshot(sb.id), "snapshot");
  const std::string dir = pool_snapshots(d, "crun");
  const std::string at = dir + "/" + snap.id;
  const auto listing = tree_listing(at);
  BOOST_TEST(listing.find("a.txt") != std::string::npos, listing);

  // The pool's snapshot directory: root's alone.
  struct stat st {};
  BOOST_TEST_REQUIRE(::stat(dir.c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 07777) == 0700u);
  BOOST_TEST(st.st_uid == 0u);

  // Read-only to the kernel: not even root writes, creates, renames or removes in it.
  errno = 0;
  BOOST_TEST(::open((at + "/upper/data/a.txt").c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC) < 0);
  BOOST_TEST(errno == EROFS);
  errno = 0;
  BOOST_TEST(::open((at + "/upper/new.txt").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644) < 0);
  BOOST_TEST(errno == EROFS);
  BOOST_TEST(::unlink((at + "/upper/data/a.txt").c_str()) != 0);
  BOOST_TEST(::rename((at + "/upper/data/a.txt").c_str(), (at + "/upper/b.txt").c_str()) != 0);
  BOOST_TEST(::chmod((at + "/upper/data/a.txt").c_str(), 04777) != 0);

  // Every API path that writes: the source's changes after it, a fork's changes (files,
  // directories, a rename, a removal, through the symlink), a fork of the fork. The
  // snapshot's tree is exactly what it was.
  must_shell(acme, sb.id, "echo two > /data/a.txt && rm -f /data/link && mkdir /data/more");
  must(write_all(acme, sb.id, "/data/a.txt", "three"), "write to the source");
  api::create_options o;
  o.from_snapshot = snap.id;
  auto fork = must(acme.create(o), "fork");
  must(write_all(acme, fork.id, "/data/a.txt", "fork"), "write in the fork");
  must(acme.rename(fork.id, "/data/a.txt", "/data/b.txt"), "rename in the fork");
  must(acme.make_dir(fork.id, "/data/sub", true), "mkdir in the fork");
  must_shell(acme, fork.id, "echo x > /data/link/through-link || true; rm -rf /data");
  auto fork2 = must(acme.fork(fork.id), "fork of the fork");
  must_shell(acme, fork2.id, "echo y > /y.txt");
  BOOST_TEST(tree_listing(at) == listing);

  // A sandbox cannot name a snapshot's path: the fork's root is its own layer.
  auto r = must_shell(acme, fork.id, "ls /.snapshots 2>&1; ls / | grep -c snap || true");
  BOOST_TEST(r.out.find(snap.id) == std::string::npos, r.out);

  for (const auto& id : {fork2.id, fork.id, sb.id})
    must(acme.remove(id), "delete");
  for (const auto& s : must(acme.list_snapshots(), "list"))
    must(acme.delete_snapshot(s.id), "delete snapshot");
}

BOOST_AUTO_TEST_SUITE_END()
