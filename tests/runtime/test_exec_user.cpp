// exec_user: a template's or a request's user resolved against a sandbox's /etc/passwd and
// /etc/group as OCI images resolve theirs, and every id kept inside the sandbox's 65536.
#define BOOST_TEST_MODULE exec_user
#include <boost/test/unit_test.hpp>

#include "runtime/exec_user.hpp"

using namespace sandboxd::runtime;
using sandboxd::errc;

namespace {

const char* passwd = "root:x:0:0:root:/root:/bin/sh\n"
                     "# a comment\n"
                     "broken line\n"
                     "app:x:1000:1000:App:/home/app:/bin/sh\n"
                     "nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
                     "big:x:70000:70000::/home/big:/bin/sh\n"
                     "nohome:x:1001:1001::relative:/bin/sh\n"
                     "app:x:2000:2000:second app, ignored:/x:/bin/sh";
const char* group = "root:x:0:\n"
                    "staff:x:50:app,other\n"
                    "dev:x:60:other,app\n"
                    "app:x:1000:app\n"
                    "huge:x:80000:app\n"
                    "nogroup:x:65534:\n";

exec_user resolved(const char* spec) {
  auto u = resolve_exec_user(spec, passwd, group);
  BOOST_TEST_REQUIRE(u.ok(), (u ? "" : u.err().message));
  return u.value();
}

} // namespace

BOOST_AUTO_TEST_CASE(root_needs_no_lookup) {
  for (const char* s : {"", "root", "0", "0:0", "root:root"})
    BOOST_TEST(is_root_user(s), s);
  for (const char* s : {"app", "1000", "0:50", "root:staff", " root"})
    BOOST_TEST(!is_root_user(s), s);
}

BOOST_AUTO_TEST_CASE(a_name_takes_uid_gid_home_and_member_groups) {
  auto u = resolved("app");
  BOOST_TEST(u.uid == 1000u);
  BOOST_TEST(u.gid == 1000u);
  BOOST_TEST(u.home == "/home/app");
  // Groups that list it, without its primary gid, without an id outside the sandbox.
  BOOST_TEST((u.groups == std::vector<std::uint32_t>{50, 60}));
  auto n = resolved("nobody");
  BOOST_TEST(n.uid == 65534u);
  BOOST_TEST(n.gid == 65534u);
  BOOST_TEST(n.home == "/nonexistent");
  BOOST_TEST(n.groups.empty());
}

BOOST_AUTO_TEST_CASE(numeric_ids_need_no_entry) {
  auto u = resolved("1234");
  BOOST_TEST(u.uid == 1234u);
  BOOST_TEST(u.gid == 0u);
  BOOST_TEST(u.home == "/");
  auto k = resolved("1000"); // an entry there: its gid, home and groups
  BOOST_TEST(k.gid == 1000u);
  BOOST_TEST(k.home == "/home/app");
  BOOST_TEST(k.groups.size() == 2u);
  auto g = resolved("1234:4321");
  BOOST_TEST(g.uid == 1234u);
  BOOST_TEST(g.gid == 4321u);
}

BOOST_AUTO_TEST_CASE(a_group_replaces_the_primary_gid_and_the_member_groups) {
  auto u = resolved("app:staff");
  BOOST_TEST(u.uid == 1000u);
  BOOST_TEST(u.gid == 50u);
  BOOST_TEST(u.groups.empty());
  BOOST_TEST(resolved("nobody:60").gid == 60u);
  BOOST_TEST(resolved("nohome").home == "/"); // a relative home is none
}

BOOST_AUTO_TEST_CASE(names_that_are_not_there_are_refused_naming_them) {
  auto u = resolve_exec_user("ghost", passwd, group);
  BOOST_TEST_REQUIRE((u.code() == errc::invalid_argument));
  BOOST_TEST(u.err().message.find("'ghost'") != std::string::npos, u.err().message);
  BOOST_TEST(u.err().message.find("/etc/passwd") != std::string::npos, u.err().message);
  auto g = resolve_exec_user("app:wheel", passwd, group);
  BOOST_TEST_REQUIRE((g.code() == errc::invalid_argument));
  BOOST_TEST(g.err().message.find("'wheel'") != std::string::npos, g.err().message);
  // No /etc/passwd at all: a name is not there, a number still works.
  BOOST_TEST((resolve_exec_user("app", "", "").code() == errc::invalid_argument));
  BOOST_TEST(resolve_exec_user("7", "", "").ok());
}

BOOST_AUTO_TEST_CASE(ids_outside_the_sandbox_user_namespace_are_refused) {
  for (const char* s :
       {"65536", "4294967295", "4294967296", "big", "app:80000", "app:huge", "1:99999999999"}) {
    auto u = resolve_exec_user(s, passwd, group);
    BOOST_TEST((u.code() == errc::invalid_argument), s);
  }
  BOOST_TEST(resolved("65535").uid == 65535u);
}

BOOST_AUTO_TEST_CASE(malformed_specs_are_refused) {
  for (const char* s : {":", "app:", ":staff", "a:b:c", "ap p", "app\n", "-1", "app,staff"}) {
    auto u = resolve_exec_user(s, passwd, group);
    BOOST_TEST((u.code() == errc::invalid_argument), s);
  }
  auto nul = resolve_exec_user(std::string("app\0x", 5), passwd, group);
  BOOST_TEST((nul.code() == errc::invalid_argument));
  BOOST_TEST(
    (resolve_exec_user(std::string(300, 'a'), passwd, group).code() == errc::invalid_argument));
}
