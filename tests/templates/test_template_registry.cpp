// The template registry (templates/template_registry.hpp) over a real file log and a layer
// store of plain directories: a stock template is built once on first use, however many
// ask at once; every change is an event and a restart folds the same catalog; a build a
// crash interrupted is recorded as failed; a template in use or held cannot be deleted;
// another tenant's template is not found; deleting collects the layers no template holds; an
// import's layer is named as its tree read back.
// `base` (the host's busybox) stands for the stock builds: mmdebstrap's suites are covered by
// tests/e2e/test_templates_e2e.cpp.
#define BOOST_TEST_MODULE template_registry
#include <boost/test/unit_test.hpp>

#include "events/file_log.hpp"
#include "runtime/layer_store.hpp"
#include "runtime/template_store.hpp"
#include "templates/template_registry.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <atomic>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <thread>

using namespace sandboxd;
using namespace sandboxd::templates;
namespace ev = sandboxd::events;
namespace fs = std::filesystem;

namespace sandboxd::templates {
// Boost.Test prints a status it compares.
inline std::ostream& boost_test_print_type(std::ostream& o, template_status s) {
  return o << to_string(s);
}
} // namespace sandboxd::templates

namespace {

boost::test_tools::assertion_result busybox_here(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result r(true);
  if (auto why = runtime::base_tree_unavailable()) {
    r = false;
    r.message() << *why;
  }
  return r;
}

const asker acme{"acme", "alice", false};
const asker globex{"globex", "gus", false};
const asker admin{"ops", "root", true};

struct world {
  test::temp_dir dir{"registry"};
  std::unique_ptr<ev::file_log> log;
  std::shared_ptr<runtime::layer_store> layers;
  std::unique_ptr<template_registry> registry;

  world() { open(); }

  void open() {
    registry.reset();
    log.reset();
    log = std::make_unique<ev::file_log>(ev::file_log_options{dir / "log", 4});
    layers = std::make_shared<runtime::layer_store>(
      runtime::layer_store_options{dir / "templates", 0, true});
    registry_options o;
    o.log = log.get();
    o.layers = layers;
    o.dir = dir / "registry";
    o.stock.cache_dir = ""; // no Debian suite is built here
    registry = std::make_unique<template_registry>(std::move(o));
  }

  // Every template event in the log, in order.
  std::vector<ev::template_event> events() {
    std::vector<ev::template_event> out;
    const auto p = log->partition_for(std::string(ev::template_stream_key));
    for (std::int64_t at = 0;;) {
      auto r = log->read(p, at, 1000);
      BOOST_TEST_REQUIRE(r.ok());
      if (r.records.empty())
        return out;
      for (const auto& rec : r.records) {
        at = rec.offset + 1;
        auto d = ev::decode(rec.value);
        BOOST_TEST_REQUIRE(d.ok());
        if (const auto* t = std::get_if<ev::template_event>(&d.get().body))
          out.push_back(*t);
      }
    }
  }

  // A root filesystem tarball of one file, made with tar(1), imported as `name` by `who`.
  result<template_state> import(const asker& who, const std::string& name,
                                const std::string& text) {
    const std::string tree = dir / ("tree-" + name);
    fs::create_directories(tree + "/etc");
    std::ofstream(tree + "/etc/motd") << text;
    const std::string tar = dir / (name + ".tar");
    test::check_shell("tar -C " + test::shell_quote(tree) + " -cf " + test::shell_quote(tar) +
                      " .");
    int fd = ::open(tar.c_str(), O_RDONLY | O_CLOEXEC);
    BOOST_TEST_REQUIRE(fd >= 0);
    runtime::unique_fd hold(fd);
    import_request req;
    req.name = name;
    req.scope = who.admin ? ev::template_scope::global : ev::template_scope::tenant;
    return registry->import_archive(who, req, fd_source(fd), {});
  }
};

std::size_t count_changes(const std::vector<ev::template_event>& es, const std::string& name,
                          std::string_view change) {
  std::size_t n = 0;
  for (const auto& e : es)
    n += e.name == name && ev::change_name(e.change) == change;
  return n;
}

} // namespace

BOOST_AUTO_TEST_SUITE(template_registry_suite)

BOOST_AUTO_TEST_CASE(a_stock_template_is_built_once_on_first_use_however_many_ask,
                     *boost::unit_test::precondition(busybox_here)) {
  world w;
  std::atomic<int> ok{0};
  std::vector<std::thread> askers;
  for (int i = 0; i < 4; ++i)
    askers.emplace_back([&] {
      auto h = w.registry->acquire(acme, "base", {});
      ok += h.ok() && h.value() != nullptr;
    });
  for (auto& t : askers)
    t.join();
  BOOST_TEST(ok == 4);
  const auto es = w.events();
  BOOST_TEST(count_changes(es, "base", "created") == 1u);
  BOOST_TEST(count_changes(es, "base", "layer_added") == 1u);
  BOOST_TEST(count_changes(es, "base", "ready") == 1u);
  // Ready now: acquire_ready holds it without building.
  auto again = w.registry->acquire_ready(globex, "base");
  BOOST_TEST_REQUIRE(again.ok());
  BOOST_TEST_REQUIRE(again.value() != nullptr);
  const auto& ref = again.value()->ref();
  BOOST_TEST_REQUIRE(ref.layers.size() == 1u);
  BOOST_TEST(w.layers->has(to_hex(ref.layers[0])));
  BOOST_TEST(w.events().size() == es.size());
}

BOOST_AUTO_TEST_CASE(a_restart_folds_the_same_catalog_and_fails_an_interrupted_build,
                     *boost::unit_test::precondition(busybox_here)) {
  world w;
  BOOST_TEST_REQUIRE(w.registry->acquire(acme, "base", {}).ok());
  BOOST_TEST_REQUIRE(w.import(acme, "app", "hello\n").ok());
  const catalog before = w.registry->snapshot();
  // A build that never finished: its created is in the log, nothing after it.
  template_state t;
  t.id = "tpl_00000000deadbeef";
  t.name = "half";
  t.scope = ev::template_scope::tenant;
  auto e = next_event(before, t, "acme", "alice", ev::time_point{}, ev::template_created{});
  ev::log_record rec{std::string(ev::template_stream_key), ev::encode(e)};
  BOOST_TEST_REQUIRE(w.log->append({rec}).get().ok());
  w.open();
  const catalog after = w.registry->snapshot();
  for (const auto& [id, s] : before.by_id)
    BOOST_TEST((after.by_id.at(id) == s));
  const auto& half = after.by_id.at(t.id);
  BOOST_TEST(half.status == template_status::failed);
  BOOST_TEST_REQUIRE(half.failure.has_value());
  BOOST_TEST(half.failure->message.find("stopped while template half") != std::string::npos);
  // Without its snapshot the registry folds the log alone to the same catalog.
  w.registry.reset();
  fs::remove(w.dir / "registry/registry.snapshot");
  w.open();
  BOOST_TEST((w.registry->snapshot() == after));
}

BOOST_AUTO_TEST_CASE(a_tenant_uses_only_global_templates_and_its_own) {
  world w;
  BOOST_TEST_REQUIRE(w.import(acme, "app", "acme's\n").ok());
  BOOST_TEST_REQUIRE(w.import(admin, "tools", "everyone's\n").ok());
  auto mine = w.registry->acquire_ready(acme, "app");
  BOOST_TEST_REQUIRE(mine.ok());
  BOOST_TEST(mine.value() != nullptr);
  auto theirs = w.registry->acquire_ready(globex, "app");
  BOOST_TEST_REQUIRE(!theirs.ok());
  BOOST_TEST(theirs.code() == errc::not_found);
  BOOST_TEST(w.registry->acquire_ready(globex, "tools").ok());
  auto del = w.registry->remove(globex, "app");
  BOOST_TEST_REQUIRE(!del.ok());
  BOOST_TEST(del.code() == errc::not_found);
  std::vector<std::string> listed;
  for (const auto& t : w.registry->list(globex))
    listed.push_back(t.name);
  BOOST_TEST((listed == std::vector<std::string>{"tools"}));
  // A global template is the operator's to make.
  import_request req;
  req.name = "sneaky";
  req.scope = ev::template_scope::global;
  std::string empty;
  auto g = w.registry->import_archive(acme, req, memory_source(empty), {});
  BOOST_TEST_REQUIRE(!g.ok());
  BOOST_TEST(g.code() == errc::permission_denied);
}

BOOST_AUTO_TEST_CASE(a_template_in_use_or_held_is_not_deleted_and_deleting_collects_its_layers) {
  world w;
  auto app = w.import(acme, "app", "only app has this\n");
  BOOST_TEST_REQUIRE(app.ok());
  BOOST_TEST_REQUIRE(w.import(acme, "other", "other\n").ok());
  const auto app_layers = app->ready->layers;
  BOOST_TEST_REQUIRE(app_layers.size() == 2u); // the archive, the sandboxd layer
  {
    auto held = w.registry->acquire_ready(acme, "app");
    BOOST_TEST_REQUIRE(held.ok());
    auto r = w.registry->remove(acme, "app");
    BOOST_TEST_REQUIRE(!r.ok());
    BOOST_TEST(r.code() == errc::conflict);
    BOOST_TEST(r.err().message.find("being created") != std::string::npos);
  }
  w.registry->note_use("sb-1", app->id, true);
  auto used = w.registry->remove(acme, "app");
  BOOST_TEST_REQUIRE(!used.ok());
  BOOST_TEST(used.code() == errc::conflict);
  BOOST_TEST(used.err().message.find("sb-1") != std::string::npos);
  w.registry->note_use("sb-1", app->id, false);
  auto gone = w.registry->remove(acme, "app");
  BOOST_TEST_REQUIRE(gone.ok(), (gone ? "" : gone.err().message));
  BOOST_TEST(gone->status == template_status::deleted);
  // Its own layer is collected; the sandboxd layer, which `other` holds too, is kept.
  BOOST_TEST(!w.layers->has(to_hex(app_layers[0].sha256)));
  BOOST_TEST(w.layers->has(to_hex(app_layers[1].sha256)));
  BOOST_TEST(w.registry->acquire_ready(acme, "app").code() == errc::not_found);
  BOOST_TEST(count_changes(w.events(), "app", "deleted") == 1u);
}

BOOST_AUTO_TEST_CASE(a_refused_archive_fails_its_template_and_leaves_no_layer) {
  world w;
  const auto before = w.layers->list().size();
  // A tar whose only entry climbs out of the layer.
  const std::string tree = w.dir / "evil";
  fs::create_directories(tree);
  std::ofstream(tree + "/x") << "x";
  const std::string tar = w.dir / "evil.tar";
  test::check_shell("tar -C " + test::shell_quote(tree) + " -P --transform=s,^x,../x, -cf " +
                    test::shell_quote(tar) + " x");
  int fd = ::open(tar.c_str(), O_RDONLY | O_CLOEXEC);
  runtime::unique_fd hold(fd);
  import_request req;
  req.name = "evil";
  auto r = w.registry->import_archive(acme, req, fd_source(fd), {});
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST(r.code() == errc::invalid_argument);
  BOOST_TEST(r.err().message.find("../x") != std::string::npos, r.err().message);
  BOOST_TEST(!fs::exists(w.dir / "templates/x"));
  BOOST_TEST(w.layers->list().size() == before);
  const auto es = w.events();
  BOOST_TEST(count_changes(es, "evil", "failed") == 1u);
  BOOST_TEST(count_changes(es, "evil", "ready") == 0u);
}

// A spec of COPY, ENV and WORKDIR needs no runtime: its layers come from the build context.
BOOST_AUTO_TEST_CASE(a_copy_spec_builds_its_layers_and_a_rebuild_after_deletion_copies_nothing,
                     *boost::unit_test::precondition(busybox_here)) {
  world w;
  const std::string ctx = w.dir / "ctx";
  fs::create_directories(ctx + "/app/bin");
  std::ofstream(ctx + "/app/hello.txt") << "hello\n";
  std::ofstream(ctx + "/app/bin/tool") << "#!/bin/sh\necho tool\n";
  fs::permissions(ctx + "/app/bin/tool", fs::perms(0755));
  test::check_shell("tar -C " + test::shell_quote(ctx) + " -cf " +
                    test::shell_quote(w.dir / "ctx.tar") + " .");
  auto build = [&](const std::string& name) {
    int fd = ::open((w.dir / "ctx.tar").c_str(), O_RDONLY | O_CLOEXEC);
    runtime::unique_fd hold(fd);
    spec_request req;
    req.name = name;
    req.format = spec_format::dockerfile;
    req.text = "FROM base\nENV HOME_DIR=/srv\nWORKDIR $HOME_DIR/app\nCOPY app/ ./\n"
               "COPY app/hello.txt /etc/hello\n";
    return w.registry->build_spec(acme, req, fd_source(fd), {});
  };
  auto first = build("copied");
  BOOST_TEST_REQUIRE(first.ok(), (first ? "" : first.err().message));
  BOOST_TEST(first->status == template_status::ready);
  BOOST_TEST((first->created.source == ev::template_source::spec));
  BOOST_TEST_REQUIRE(first->ready->layers.size() == 3u); // base's, then one per COPY
  BOOST_TEST(first->ready->working_directory == "/srv/app");
  const fs::path top = fs::path(w.layers->path()) / to_hex(first->ready->layers[1].sha256);
  BOOST_TEST(fs::exists(top / "srv/app/hello.txt"));
  BOOST_TEST(fs::exists(top / "srv/app/bin/tool"));
  BOOST_TEST(((fs::status(top / "srv/app/bin/tool").permissions() & fs::perms::owner_exec) !=
              fs::perms::none));
  BOOST_TEST_REQUIRE(first->steps.size() == 2u);
  for (const auto& s : first->steps) {
    BOOST_TEST_REQUIRE(s.finished.has_value());
    BOOST_TEST(!s.finished->cached);
    BOOST_TEST(s.started.cache_key.has_value());
  }
  BOOST_TEST(first->steps[0].started.instruction == "COPY app/ ./");
  BOOST_TEST(first->steps[0].started.index == 3u); // FROM is 0, ENV 1, WORKDIR 2

  // Deleted, then built again unchanged: the cache kept its step layers; no step copies.
  BOOST_TEST_REQUIRE(w.registry->remove(acme, "copied").ok());
  BOOST_TEST(w.layers->has(to_hex(first->ready->layers[1].sha256)));
  auto again = build("copied");
  BOOST_TEST_REQUIRE(again.ok(), (again ? "" : again.err().message));
  BOOST_TEST(again->id != first->id);
  BOOST_TEST((again->ready->digest == first->ready->digest));
  for (const auto& s : again->steps) {
    BOOST_TEST_REQUIRE(s.finished.has_value());
    BOOST_TEST(s.finished->cached);
  }
  // Another tenant's identical build reuses nothing of acme's.
  int fd = ::open((w.dir / "ctx.tar").c_str(), O_RDONLY | O_CLOEXEC);
  runtime::unique_fd hold(fd);
  spec_request req;
  req.name = "copied";
  req.format = spec_format::dockerfile;
  req.text = "FROM base\nENV HOME_DIR=/srv\nWORKDIR $HOME_DIR/app\nCOPY app/ ./\n"
             "COPY app/hello.txt /etc/hello\n";
  auto theirs = w.registry->build_spec(globex, req, fd_source(fd), {});
  BOOST_TEST_REQUIRE(theirs.ok());
  for (const auto& s : theirs->steps)
    BOOST_TEST(!s.finished->cached);
}

BOOST_AUTO_TEST_CASE(a_bad_spec_records_nothing_a_run_without_runtime_fails_and_tenancy_holds,
                     *boost::unit_test::precondition(busybox_here)) {
  world w;
  const auto before = w.events().size();
  spec_request req;
  req.name = "bad";
  req.format = spec_format::dockerfile;
  req.text = "FROM base\nADD x /x\n";
  std::string none;
  auto r = w.registry->build_spec(acme, req, memory_source(none), {});
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST(r.code() == errc::invalid_argument);
  BOOST_TEST(r.err().message.find("line 2: ADD is not supported") != std::string::npos);
  BOOST_TEST(w.events().size() == before);
  req.text = "FROM base\nRUN true\n";
  r = w.registry->build_spec(acme, req, memory_source(none), {});
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST(r.code() == errc::unavailable);
  const auto es = w.events();
  BOOST_TEST(count_changes(es, "bad", "step_finished") == 1u);
  BOOST_TEST(count_changes(es, "bad", "failed") == 1u);
  // Tenancy as for imports: another tenant's template is no FROM (exactly like a missing
  // one), and a global template is the operator's to build.
  BOOST_TEST_REQUIRE(w.import(globex, "theirs", "globex's\n").ok());
  req.name = "mine";
  req.text = "FROM theirs\nENV A=b\n";
  r = w.registry->build_spec(acme, req, memory_source(none), {});
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST(r.code() == errc::not_found);
  BOOST_TEST(r.err().message.find("FROM theirs: template theirs does not exist") !=
             std::string::npos);
  req.text = "FROM base\nENV A=b\n";
  req.scope = ev::template_scope::global;
  r = w.registry->build_spec(acme, req, memory_source(none), {});
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST(r.code() == errc::permission_denied);
  BOOST_TEST(count_changes(w.events(), "mine", "created") == 0u);
}

// An import's layer is named by its tree as stored: the digest the commit computed from the
// contents the writer hashed as it wrote them equals the digest of the stored tree read back
// (files of several buffers, an empty one, a hard link, a path the archive wrote twice, a
// symlink), and so do the bytes it recorded.
BOOST_AUTO_TEST_CASE(an_imported_layer_is_named_as_its_tree_read_back) {
  world w;
  const std::string tree = w.dir / "tree-mixed";
  fs::create_directories(tree + "/usr/lib");
  std::string big(300'000, '\0');
  for (std::size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<char>(i * 131 % 251);
  std::ofstream(tree + "/usr/lib/big", std::ios::binary) << big;
  std::ofstream(tree + "/usr/lib/empty");
  std::ofstream(tree + "/usr/lib/twice") << "first";
  test::check_shell("cd " + test::shell_quote(tree) +
                    " && ln usr/lib/big usr/lib/big.link && ln -s big usr/lib/big.sym");
  const std::string tar = w.dir / "mixed.tar";
  test::check_shell("tar -C " + test::shell_quote(tree) + " -cf " + test::shell_quote(tar) +
                    " . && echo second > " + test::shell_quote(tree + "/usr/lib/twice") +
                    " && tar -C " + test::shell_quote(tree) + " -rf " + test::shell_quote(tar) +
                    " ./usr/lib/twice");
  int fd = ::open(tar.c_str(), O_RDONLY | O_CLOEXEC);
  runtime::unique_fd hold(fd);
  import_request req;
  req.name = "mixed";
  auto t = w.registry->import_archive(acme, req, fd_source(fd), {});
  BOOST_TEST_REQUIRE(t.ok(), (t.ok() ? "" : t.err().message));
  const auto& layer = t->ready->layers.front();
  const std::string hex = to_hex(layer.sha256);
  auto stored = w.layers->open(hex);
  BOOST_TEST_REQUIRE(bool(stored));
  runtime::unique_fd dir(::openat(stored.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  const auto read_back = runtime::digest_layer(dir.get());
  BOOST_TEST(read_back.sha256 == hex);
  BOOST_TEST(layer.bytes == w.layers->bytes(hex));
  BOOST_TEST(layer.bytes == 2 * big.size() + std::string("second\n").size() + 3); // + "big"
}

BOOST_AUTO_TEST_SUITE_END()
