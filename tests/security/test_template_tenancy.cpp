// Templates across tenants, attacked through a real sandboxd (crun) and sandboxctl with
// three tokens: acme and globex (the sandboxes scope only) and the development token
// (admin). Another tenant's template cannot be listed, shown, used or deleted, and its
// NOT_FOUND is word for word a missing name's; a tenant's template of the same name as
// another's is its own, with its own content; a tenant cannot make a global template; a
// template in use is not deleted (CONFLICT naming the sandbox). After the imports and
// deletions the read models still equal the log (projections verify) and the audit chain
// holds (audit verify). A tenant's template quota (count and bytes) is refused with
// resource_exhausted naming it, before anything is logged.
#define BOOST_TEST_MODULE template_tenancy
#include "cli/exit_codes.hpp"
#include "runtime/template_store.hpp"
#include "tests/e2e/api_e2e_support.hpp"

using namespace sandboxd::test;

namespace {

boost::test_tools::assertion_result crun_here(utf::test_unit_id id) {
  return crun_can_run(id);
}

struct world {
  temp_dir config{"tpl-tenancy"};
  daemon_process d;

  explicit world(const std::vector<std::string>& more = {}) : d(flags(config, more)) {}
  static std::vector<std::string> flags(const temp_dir& config,
                                        const std::vector<std::string>& more) {
    std::vector<std::string> f{"--runtime", "crun", "--tokens-file",
                               write_tokens_file(config.path())};
    f.insert(f.end(), more.begin(), more.end());
    return f;
  }

  // sandboxctl as `token`'s tenant.
  ctl_result as(const std::string& token, const std::vector<std::string>& args,
                const std::string& stdin_bytes = "") {
    ctl_options o;
    o.env.emplace("SANDBOXD_TOKEN", token);
    o.stdin_bytes = stdin_bytes;
    return ctl(d, args, o);
  }
  std::string ok_as(const std::string& token, const std::vector<std::string>& args) {
    auto r = as(token, args);
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, "sandboxctl " << args.front() << ": " << r);
    return r.out;
  }

  // A root filesystem tarball (busybox, and /owner.txt saying `owner`); its path.
  std::string rootfs(const std::string& owner) {
    const std::string tree = config.path() + "/tree-" + owner;
    sandboxd::runtime::write_base_tree(tree);
    std::ofstream(tree + "/owner.txt") << owner << "\n";
    const std::string tar = config.path() + "/" + owner + ".tar.gz";
    auto r = run_process("/bin/tar", {"-czf", tar, "-C", tree, "."});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r);
    return tar;
  }

  // A root filesystem tarball holding one file of `bytes` bytes; its path.
  std::string tarball_of(const std::string& name, std::size_t bytes) {
    const std::string tree = config.path() + "/tree-" + name;
    std::filesystem::create_directories(tree);
    std::ofstream(tree + "/data.bin", std::ios::binary) << std::string(bytes, 'x');
    const std::string tar = config.path() + "/" + name + ".tar";
    auto r = run_process("/bin/tar", {"-cf", tar, "-C", tree, "."});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r);
    return tar;
  }

  // The events of the template stream in the log (the whole log, as the operator reads it).
  std::size_t template_events() {
    std::size_t n = 0;
    std::istringstream lines(ok_as(d.token(), {"--json", "events"}));
    for (std::string l; std::getline(lines, l);)
      if (!l.empty() && json::parse(l).value("sandbox_id", "") == "@templates")
        ++n;
    return n;
  }

  std::vector<std::string> names_for(const std::string& token) {
    std::vector<std::string> names;
    const auto out = ok_as(token, {"--json", "template", "list"});
    const auto listed = json::parse(out); // kept: a range-for over a temporary's member dangles
    for (const auto& t : listed.at("templates"))
      names.push_back(t.at("name").get<std::string>());
    return names;
  }
};

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

} // namespace

BOOST_AUTO_TEST_SUITE(template_tenancy, *utf::precondition(crun_here))

BOOST_AUTO_TEST_CASE(a_tenant_reaches_only_its_own_and_the_global_templates) {
  world w;
  const auto& acme = k_token_acme;
  const auto& globex = k_token_globex;
  const auto admin = w.d.token();
  w.ok_as(acme, {"template", "import", w.rootfs("acme"), "--name", "app"});
  w.ok_as(admin, {"template", "import", w.rootfs("everyone"), "--name", "shared", "--global"});

  // Listing: acme sees its own and the global one; globex only the global one.
  BOOST_TEST(has(w.names_for(acme), "app"));
  BOOST_TEST(has(w.names_for(acme), "shared"));
  BOOST_TEST(!has(w.names_for(globex), "app"));
  BOOST_TEST(has(w.names_for(globex), "shared"));

  // Show, use and delete of acme's template by globex: NOT_FOUND, word for word what a
  // name nobody has answers.
  for (const std::vector<std::string>& verb :
       {std::vector<std::string>{"template", "show"}, std::vector<std::string>{"template", "rm"},
        std::vector<std::string>{"create", "--runtime", "crun", "--template"}}) {
    BOOST_TEST_CONTEXT(verb[0] << " " << verb[1]) {
      auto theirs = verb, none = verb;
      theirs.push_back("app");
      none.push_back("zzz");
      auto t = w.as(globex, theirs);
      auto n = w.as(globex, none);
      BOOST_TEST(t.exit_code == sandboxd::cli::exit_code_of(sandboxd::errc::not_found), t);
      BOOST_TEST(n.exit_code == sandboxd::cli::exit_code_of(sandboxd::errc::not_found), n);
      BOOST_TEST(replace_all(t.err, "app", "NAME") == replace_all(n.err, "zzz", "NAME"));
    }
  }
  // acme's template is still there, untouched by globex's delete.
  BOOST_TEST(json::parse(w.ok_as(acme, {"--json", "template", "show", "app"}))["status"] ==
             "ready");

  // globex's own `app` is its own: each tenant's sandbox sees its own tenant's content.
  w.ok_as(globex, {"template", "import", w.rootfs("globex"), "--name", "app"});
  for (const auto& [token, owner] :
       {std::pair{acme, std::string("acme")}, std::pair{globex, std::string("globex")}}) {
    auto id = w.ok_as(token, {"create", "--runtime", "crun", "--template", "app"});
    id.pop_back();
    BOOST_TEST(w.ok_as(token, {"exec", id, "--", "cat", "/owner.txt"}) == owner + "\n");
    // A template in use is not deleted: CONFLICT, naming the sandbox.
    auto busy = w.as(token, {"template", "rm", "app"});
    BOOST_TEST(busy.exit_code == sandboxd::cli::exit_code_of(sandboxd::errc::conflict), busy);
    BOOST_TEST(busy.err.find(id) != std::string::npos, busy);
    w.ok_as(token, {"delete", id});
    w.ok_as(token, {"template", "rm", "app"});
  }

  // A global template is the operator's to make, and to delete.
  auto global = w.as(acme, {"template", "import", w.rootfs("sneaky"), "--name", "g", "--global"});
  BOOST_TEST(global.exit_code == sandboxd::cli::exit_code_of(sandboxd::errc::permission_denied),
             global);
  BOOST_TEST(!has(w.names_for(globex), "g"));
  auto rm_global = w.as(acme, {"template", "rm", "shared"});
  BOOST_TEST(rm_global.exit_code != 0, rm_global);
  BOOST_TEST(has(w.names_for(acme), "shared"));
  w.ok_as(admin, {"template", "rm", "shared"});

  // The read models still equal the log after imports, uses and deletions, and the audit
  // chain holds.
  w.ok_as(admin, {"projections", "verify"});
  BOOST_TEST(w.ok_as(admin, {"audit", "verify"}).find("the audit chain holds") !=
             std::string::npos);
}

// A tenant (no admin scope) whose create is the first use of a stock template on the node:
// sandboxctl builds it first and shows the build on stderr, stdout holding the id alone; the
// next create is silent.
BOOST_AUTO_TEST_CASE(a_tenant_s_first_create_from_a_stock_template_shows_its_build) {
  world w;
  auto first = w.as(k_token_acme, {"create", "--runtime", "crun", "--template", "base"});
  BOOST_TEST_REQUIRE(first.exit_code == 0, first);
  BOOST_TEST(first.err.find("building template base on this node first") != std::string::npos,
             first);
  BOOST_TEST(first.err.find("base:  50% making template base from /bin/busybox") !=
               std::string::npos,
             first);
  BOOST_TEST(first.out.find('\n') == first.out.size() - 1, first);
  auto next = w.as(k_token_acme, {"create", "--runtime", "crun", "--template", "base"});
  BOOST_TEST(next.exit_code == 0, next);
  BOOST_TEST(next.err.empty(), next);
}

// A tenant's template quota, on the count of its own templates and on their bytes: an import
// past it answers resource_exhausted naming the quota, and when the tenant is at the quota
// already the refusal comes before anything is logged (no template event, nothing listed).
// Another tenant's templates do not count, a deleted template frees its place, and an archive
// that would go past the bytes left is stopped while it unpacks (its template ends failed).
BOOST_AUTO_TEST_CASE(a_tenant_at_its_template_quota_is_refused_before_anything_is_logged) {
  world w({"--quota-templates", "2", "--quota-template-mib", "3"});
  const auto& acme = k_token_acme;
  const auto& globex = k_token_globex;
  const auto exhausted = sandboxd::cli::exit_code_of(sandboxd::errc::resource_exhausted);
  const std::size_t kib64 = 64 << 10, mib = 1 << 20;

  // The count: acme's third template.
  w.ok_as(acme, {"template", "import", w.tarball_of("a", kib64), "--name", "a"});
  w.ok_as(acme, {"template", "import", w.tarball_of("b", kib64), "--name", "b"});
  auto logged = w.template_events();
  auto third = w.as(acme, {"template", "import", w.tarball_of("c", kib64), "--name", "c"});
  BOOST_TEST(third.exit_code == exhausted, third);
  BOOST_TEST(third.err.find("quota-templates 2") != std::string::npos, third);
  BOOST_TEST(w.template_events() == logged);
  BOOST_TEST(!has(w.names_for(acme), "c"));
  // Another tenant's templates count against its own quota only; a deleted one frees a place.
  w.ok_as(globex, {"template", "import", w.tarball_of("g", kib64), "--name", "c"});
  w.ok_as(acme, {"template", "rm", "a"});
  w.ok_as(acme, {"template", "import", w.tarball_of("c2", kib64), "--name", "c"});

  // The bytes: globex's templates take 3 MiB, all of its quota.
  w.ok_as(globex, {"template", "rm", "c"});
  w.ok_as(globex, {"template", "import", w.tarball_of("full", 3 * mib), "--name", "full"});
  logged = w.template_events();
  auto more = w.as(globex, {"template", "import", w.tarball_of("more", kib64), "--name", "more"});
  BOOST_TEST(more.exit_code == exhausted, more);
  BOOST_TEST(more.err.find("quota-template-mib 3") != std::string::npos, more);
  BOOST_TEST(w.template_events() == logged);
  BOOST_TEST(!has(w.names_for(globex), "more"));
  // With 1 MiB left, a 2 MiB archive is stopped while it unpacks: its template ends failed
  // (resource_exhausted naming the quota) and holds nothing.
  w.ok_as(globex, {"template", "rm", "full"});
  w.ok_as(globex, {"template", "import", w.tarball_of("two", 2 * mib), "--name", "two"});
  auto over = w.as(globex, {"template", "import", w.tarball_of("over", 2 * mib), "--name", "over"});
  BOOST_TEST(over.exit_code == exhausted, over);
  BOOST_TEST(over.err.find("quota-template-mib 3") != std::string::npos, over);
  BOOST_TEST(json::parse(w.ok_as(globex, {"--json", "template", "show", "over"}))["status"] ==
             "failed");

  w.ok_as(w.d.token(), {"projections", "verify"});
}

BOOST_AUTO_TEST_SUITE_END()
