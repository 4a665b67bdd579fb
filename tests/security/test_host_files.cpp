// Attacks on the host through the files a sandbox leaves on it: setuid binaries made
// inside (chmod 4755) and through write_file (mode 04755), run by an unprivileged host
// user from every host path of the layer (the merged overlay and the upper layer), both
// by path and through a descriptor (which skips the directories on the way, so that the
// mount flags alone must hold); the data directory's modes; other host users reaching
// sandbox content; a host file of mode 0600 and another sandbox's layer from inside, and
// from the host identity of another sandbox. Built once per runtime.
#define BOOST_TEST_MODULE attack_host_files
#include <boost/test/unit_test.hpp>

#include "tests/security/attack_fixture.hpp"
#include "tests/support/process.hpp"

#include <sstream>
#include <sys/stat.h>

using namespace sandboxd::runtime;
using sandboxd::test::attack_fixture;
using sandboxd::test::driver_usable;
using sandboxd::test::k_nobody;
using sandboxd::test::open_as;
using sandboxd::test::run_as;

namespace {

struct fixture : attack_fixture {
  // Makes two setuid-root (inside) copies of busybox: one by chmod inside, one through
  // write_file with mode 04755.
  void plant_setuid(const std::string& id) {
    auto r = sh(id, "cp /bin/busybox /workspace/suid-inside && chmod 4755 /workspace/suid-inside "
                    "&& chmod g+s /workspace/suid-inside && ls -l /workspace/suid-inside");
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.stderr_data);
    BOOST_TEST(r.stdout_data.substr(0, 10) == "-rwsr-sr-x", "the sandbox could not even set it");
    auto bin = d->read_file(id, "/bin/busybox");
    BOOST_TEST_REQUIRE(bin.ok(), (bin ? "" : bin.err().message));
    auto w = d->write_file(id, "/workspace/suid-api", bin.value(), 04755);
    BOOST_TEST_REQUIRE(w.ok(), (w ? "" : w.err().message));
  }

  // Every attempt of host uid 65534 to run `file` from `path`: by path it must not even
  // be reached; through a descriptor it must run without any change of identity.
  void assert_never_privileged(const std::string& path) {
    auto by_path = run_as(k_nobody, k_nobody, path, -1, {"id", "-u"});
    BOOST_TEST(by_path.exec_errno == EACCES, path << ": exec by path gave errno "
                                                  << by_path.exec_errno << ", output "
                                                  << by_path.output);
    unique_fd fd(::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    BOOST_TEST_REQUIRE(fd.get() >= 0, path << " is not there");
    struct stat st {};
    BOOST_TEST_REQUIRE(::fstat(fd.get(), &st) == 0);
    BOOST_TEST(st.st_uid != 0u, path << " is owned by host root");
    auto by_fd = run_as(k_nobody, k_nobody, "", fd.get(), {"id", "-u"});
    BOOST_TEST(by_fd.exec_errno == 0, path << ": " << by_fd.exec_errno);
    BOOST_TEST(by_fd.output == "65534\n", path << " ran as euid " << by_fd.output);
    auto groups = run_as(k_nobody, k_nobody, "", fd.get(), {"id", "-g"});
    BOOST_TEST(groups.output == "65534\n", path << " ran as egid " << groups.output);
  }
};

bool has_option(const std::string& mountinfo_line, const std::string& option) {
  std::istringstream f(mountinfo_line);
  std::string field;
  for (int i = 0; i < 6 && f >> field; ++i) {
  }
  return ("," + field + ",").find("," + option + ",") != std::string::npos;
}

// The mountinfo line of the mount on `path`, or empty.
std::string mount_line(const std::string& path) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string a, b, c, root, mp;
    f >> a >> b >> c >> root >> mp;
    if (mp == path)
      return line;
  }
  return "";
}

} // namespace

BOOST_AUTO_TEST_SUITE(host_files, *boost::unit_test::precondition(driver_usable))

BOOST_FIXTURE_TEST_CASE(setuid_files_of_a_sandbox_never_run_privileged_for_a_host_user, fixture) {
  running("suid");
  plant_setuid("suid");
  // A fresh container: no process of the sandbox (nor gVisor's gofer) holds the files
  // open for writing any more, so the host could execute them if nothing stopped it.
  BOOST_TEST_REQUIRE(d->pause("suid", pause_mode::filesystem).ok());
  BOOST_TEST_REQUIRE(d->resume("suid").ok());
  // write_file kept only the permission bits.
  BOOST_TEST(d->stat("suid", "/workspace/suid-api")->mode == 0755u);
  for (const char* f : {"suid-inside", "suid-api"}) {
    assert_never_privileged(merged("suid") + "/workspace/" + f);
    assert_never_privileged(upper("suid") + "/workspace/" + f);
  }
  // Offline the layer is the only host path; it holds as well.
  BOOST_TEST_REQUIRE(d->pause("suid", pause_mode::filesystem).ok());
  assert_never_privileged(upper("suid") + "/workspace/suid-inside");
}

BOOST_FIXTURE_TEST_CASE(every_mount_of_a_layer_is_nosuid_and_nodev, fixture) {
  running("flags");
  for (const std::string& mp :
       {merged("flags"), data + "/sandboxes/flags/lower", data + "/layers"}) {
    std::string line = mount_line(mp);
    BOOST_TEST_REQUIRE(!line.empty(), mp << " is not mounted");
    BOOST_TEST(has_option(line, "nosuid"), line);
    BOOST_TEST(has_option(line, "nodev"), line);
  }
  // The template below is read-only and shown through the sandbox's own ids.
  std::string lower = mount_line(data + "/sandboxes/flags/lower");
  BOOST_TEST(has_option(lower, "ro"), lower);
  BOOST_TEST(has_option(lower, "idmapped"), lower);
}

BOOST_FIXTURE_TEST_CASE(sandbox_content_is_not_reachable_by_other_host_users, fixture) {
  running("mine");
  BOOST_TEST_REQUIRE(d->write_file("mine", "/workspace/open.txt", "world-readable", 0644).ok());
  BOOST_TEST_REQUIRE(d->pause("mine", pause_mode::memory).ok());
  BOOST_TEST_REQUIRE(d->resume("mine").ok());
  struct expect {
    std::string path;
    mode_t mode;
  };
  for (const auto& [path, mode] : std::vector<expect>{{data, 0711},
                                                      {data + "/sandboxes", 0711},
                                                      {data + "/sandboxes/mine", 0710},
                                                      {data + "/templates", 0700},
                                                      {data + "/state", 0700},
                                                      {data + "/layers", 0700},
                                                      {data + "/layers/mine", 0700},
                                                      {data + "/removing", 0700},
                                                      {data + "/spare", 0700}}) {
    struct stat st {};
    BOOST_TEST_REQUIRE(::lstat(path.c_str(), &st) == 0, path);
    BOOST_TEST((st.st_mode & 07777) == mode,
               path << " has mode " << std::oct << (st.st_mode & 07777));
  }
  struct stat sb {};
  BOOST_TEST_REQUIRE(::stat((data + "/sandboxes/mine").c_str(), &sb) == 0);
  BOOST_TEST(sb.st_gid == id_base("mine")); // only the sandbox's own root passes through
  for (const std::string& p :
       {merged("mine") + "/workspace/open.txt", upper("mine") + "/workspace/open.txt",
        data + "/sandboxes/mine/sandbox.json", data + "/sandboxes/mine/config.json",
        data + "/templates/base/etc/passwd", data + "/layers.img"})
    BOOST_TEST(open_as(k_nobody, k_nobody, AT_FDCWD, p, O_RDONLY) == EACCES, p);
  BOOST_TEST(open_as(k_nobody, k_nobody, AT_FDCWD, data, O_RDONLY | O_DIRECTORY) == EACCES);
}

BOOST_FIXTURE_TEST_CASE(a_host_file_and_another_sandbox_stay_unreadable, fixture) {
  std::string secret = dir.path() + "/host-secret";
  std::ofstream(secret) << "host secret";
  ::chmod(secret.c_str(), 0600);
  running("a");
  running("b");
  BOOST_TEST_REQUIRE(d->write_file("a", "/workspace/a-secret", "secret of a", 0600).ok());
  // From inside b: neither the host file nor a's layer exists in its world, by any path
  // it can learn (mountinfo shows them) or by the processes it can see.
  auto r = sh("b", "cat " + secret + " " + upper("a") +
                     "/workspace/a-secret 2>&1; "
                     "cat /proc/1/root" +
                     secret +
                     " 2>&1; "
                     "find / -xdev -name a-secret 2>/dev/null; "
                     "grep -l 'secret of a' /proc/*/root/workspace/* 2>/dev/null; true");
  BOOST_TEST(r.stdout_data.find("host secret") == std::string::npos, r.stdout_data);
  BOOST_TEST(r.stdout_data.find("secret of a") == std::string::npos, r.stdout_data);
  BOOST_TEST((r.stdout_data.find("/a-secret\n") == std::string::npos), r.stdout_data);
  // And should a process of b reach a's layer by handle (an escape from its mount
  // namespace), b's host identity still cannot read it: the ranges differ.
  std::uint32_t a_base = id_base("a"), b_base = id_base("b");
  BOOST_TEST(a_base != b_base);
  unique_fd ws(::open((upper("a") + "/workspace").c_str(), O_PATH | O_DIRECTORY));
  BOOST_TEST_REQUIRE(ws.get() >= 0);
  BOOST_TEST(open_as(b_base, b_base, ws.get(), "a-secret", O_RDONLY) == EACCES);
  BOOST_TEST(open_as(a_base, a_base, ws.get(), "a-secret", O_RDONLY) == 0); // a's own root can
  unique_fd top(::open(dir.path().c_str(), O_PATH | O_DIRECTORY));
  BOOST_TEST(open_as(b_base, b_base, top.get(), "host-secret", O_RDONLY) == EACCES);
}

// The operator's check (scripts/check-boundary) passes on a live data directory and
// fails, naming the problem, when one of its guarantees is broken.
BOOST_FIXTURE_TEST_CASE(the_operators_check_passes_on_a_live_node_and_catches_a_broken_mode,
                        fixture) {
  running("live");
  BOOST_TEST_REQUIRE(d->write_file("live", "/workspace/f", "x").ok());
  std::string check =
    sandboxd::test::source_dir() + "/scripts/check-boundary " + sandboxd::test::shell_quote(data);
  auto good = sandboxd::test::run_shell(check);
  auto failures = [](const std::string& out) {
    std::string f;
    std::istringstream lines(out);
    for (std::string l; std::getline(lines, l);)
      if (l.rfind("FAIL", 0) == 0)
        f += l + "\n";
    return f;
  };
  BOOST_TEST(good.exit_code == 0, failures(good.output));
  BOOST_TEST(failures(good.output) == "");
  BOOST_TEST(good.output.find("seccomp 2") != std::string::npos, good.output);
  ::chmod((data + "/sandboxes").c_str(), 0755);
  auto bad = sandboxd::test::run_shell(check);
  ::chmod((data + "/sandboxes").c_str(), 0711);
  BOOST_TEST(bad.exit_code == 1, bad.output);
  BOOST_TEST(bad.output.find("FAIL  " + data + "/sandboxes is 755") != std::string::npos,
             bad.output);
}

BOOST_AUTO_TEST_SUITE_END()
