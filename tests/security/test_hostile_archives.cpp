// Hostile archives against the template registry's imports and spec builds' contexts
// (templates/layer_writer.hpp, image_spool.hpp, image_layout.hpp, step_layers.hpp;
// docs/templates.md "Archive rules"): each archive is made by the test with Python's tarfile,
// exactly as an attacker would write it, and imported through template_registry::import_archive
// (as Templates.importArchive does) or sent as a build context to build_spec (buildSpec).
//
// Every case asserts what happened to the archive's entry (refused naming it, dropped,
// mapped, applied inside the layer) and, after all of them, that no byte landed outside
// the layer store (the canary directory and the test's own tree are as they were) and no host
// file was read into a layer (the canary's secret is in no layer).
#define BOOST_TEST_MODULE hostile_archives
#include <boost/test/unit_test.hpp>

#include "events/file_log.hpp"
#include "runtime/layer_store.hpp"
#include "templates/template_registry.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

using namespace sandboxd;
using namespace sandboxd::templates;
namespace ev = sandboxd::events;
namespace fs = std::filesystem;

namespace {

const asker tenant{"acme", "mallory", false};
constexpr const char* k_secret = "canary-secret-7f3a9c";

// Every path under `root` with its type, size and content hash (what "changed" means here).
std::map<std::string, std::string> tree_of(const fs::path& root) {
  std::map<std::string, std::string> out;
  if (!fs::exists(root))
    return out;
  for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::none);
       it != fs::recursive_directory_iterator(); ++it) {
    const auto& p = it->path();
    struct stat st {};
    ::lstat(p.c_str(), &st);
    std::ostringstream o;
    o << std::oct << st.st_mode << " " << std::dec << st.st_size << " " << st.st_nlink;
    if (S_ISREG(st.st_mode)) {
      std::ifstream in(p, std::ios::binary);
      o << " " << std::hash<std::string>{}(std::string(std::istreambuf_iterator<char>(in), {}));
    }
    out[fs::relative(p, root).string()] = o.str();
  }
  return out;
}

struct world {
  test::temp_dir dir{"hostile-archives"};
  fs::path canary = dir / "canary"; // a host directory an archive aims at
  std::unique_ptr<ev::file_log> log;
  std::shared_ptr<runtime::layer_store> layers;
  std::unique_ptr<template_registry> registry;
  int made = 0;

  world() {
    fs::create_directories(canary / "empty");
    std::ofstream(canary / "secret") << k_secret;
    log = std::make_unique<ev::file_log>(ev::file_log_options{dir / "log", 2});
    layers = std::make_shared<runtime::layer_store>(
      runtime::layer_store_options{dir / "templates", 0, true});
    registry_options o;
    o.log = log.get();
    o.layers = layers;
    o.dir = dir / "registry";
    o.limits.max_file_bytes = 1 << 20;
    o.limits.max_bytes = 8 << 20;
    o.limits.max_entries = 1000;
    registry = std::make_unique<template_registry>(std::move(o));
  }

  // A tar made by `python` (a body using t: the open TarFile, add(): add(info, data)), of
  // compression `mode` ("w", "w:gz").
  std::string archive(const std::string& body, const std::string& mode = "w") {
    const std::string path = dir / ("a" + std::to_string(++made) + ".tar");
    const std::string script = "import io, sys, tarfile\n"
                               "t = tarfile.open(sys.argv[1], '" +
                               mode +
                               "', format=tarfile.PAX_FORMAT)\n"
                               "def add(i, data=b''):\n"
                               "  i.size = len(data)\n"
                               "  t.addfile(i, io.BytesIO(data) if data else None)\n"
                               "def info(name, **kw):\n"
                               "  i = tarfile.TarInfo(name)\n"
                               "  for k, v in kw.items(): setattr(i, k, v)\n"
                               "  return i\n" +
                               body + "\nt.close()\n";
    test::check_shell("/usr/bin/python3 -c " + test::shell_quote(script) + " " +
                      test::shell_quote(path));
    return path;
  }

  result<template_state> import(const std::string& path,
                                archive_format f = archive_format::rootfs) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    BOOST_TEST_REQUIRE(fd >= 0);
    runtime::unique_fd hold(fd);
    import_request req;
    req.name = "t" + std::to_string(made);
    req.format = f;
    return registry->import_archive(tenant, req, fd_source(fd), {});
  }

  // The directory of the template's lowest layer.
  fs::path lowest(const template_state& t) {
    BOOST_TEST_REQUIRE(t.ready.has_value());
    return fs::path(layers->path()) / to_hex(t.ready->layers.front().sha256);
  }
};

std::string why(const result<template_state>& r) {
  return r.ok() ? "" : r.err().message;
}

void refused(const result<template_state>& r, errc code, const std::string& naming) {
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST(r.code() == code, r.err().message);
  BOOST_TEST(r.err().message.find(naming) != std::string::npos, r.err().message);
}

// No byte outside the layers: the canary is as it was; no layer holds the host's secret.
void nothing_escaped(world& w, const std::map<std::string, std::string>& before_canary) {
  BOOST_TEST(tree_of(w.canary) == before_canary);
  for (const auto& e : fs::recursive_directory_iterator(w.layers->path()))
    if (e.is_regular_file() && !e.is_symlink()) {
      std::ifstream in(e.path(), std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), {});
      BOOST_TEST(bytes.find(k_secret) == std::string::npos, e.path());
    }
}

} // namespace

BOOST_AUTO_TEST_SUITE(hostile_archives)

BOOST_AUTO_TEST_CASE(no_hostile_entry_reaches_outside_the_layer_or_reads_a_host_file) {
  world w;
  const auto before_canary = tree_of(w.canary);
  const std::string canary = w.canary.string();

  // `..` climbs: refused, naming the entry.
  refused(w.import(w.archive("add(info('a/../../x'), b'x')")), errc::invalid_argument, "a/../../x");
  // An absolute path is the layer's own: it lands beneath the layer.
  {
    auto r = w.import(w.archive("add(info('" + canary + "/planted'), b'p')"));
    BOOST_TEST_REQUIRE(r.ok(), why(r));
    BOOST_TEST(fs::exists(w.lowest(r.value()) / fs::path(canary).relative_path() / "planted"));
  }
  // A symlink out, then an entry written through it: refused; the symlink alone is kept as
  // it is and never followed.
  refused(w.import(w.archive("add(info('lib', type=tarfile.SYMTYPE, linkname='" + canary +
                             "/empty'))\nadd(info('lib/planted'), b'p')")),
          errc::invalid_argument, "lib/planted");
  {
    auto r = w.import(
      w.archive("add(info('escape', type=tarfile.SYMTYPE, linkname='" + canary + "/secret'))"));
    BOOST_TEST_REQUIRE(r.ok(), why(r));
    BOOST_TEST(fs::read_symlink(w.lowest(r.value()) / "escape") == canary + "/secret");
  }
  // A hard link to a host file, or to a path of the archive that is a symlink out: refused.
  refused(
    w.import(w.archive("add(info('hl', type=tarfile.LNKTYPE, linkname='" + canary + "/secret'))")),
    errc::invalid_argument, "hl");
  refused(w.import(w.archive("add(info('s', type=tarfile.SYMTYPE, linkname='" + canary +
                             "/secret'))\nadd(info('hl', type=tarfile.LNKTYPE, linkname='s'))")),
          errc::invalid_argument, "hl");
  // Devices are dropped, FIFOs kept, setuid/setgid cleared, owners mapped, only user.*
  // extended attributes kept (no overlayfs trusted.*, no file capabilities).
  {
    auto r = w.import(
      w.archive("add(info('dev/mem', type=tarfile.CHRTYPE, devmajor=1, devminor=1))\n"
                "add(info('dev/sda', type=tarfile.BLKTYPE, devmajor=8, devminor=0))\n"
                "add(info('fifo', type=tarfile.FIFOTYPE))\n"
                "add(info('suid', mode=0o6755, uid=4000000000, gid=70000), b'#!/bin/sh\\n')\n"
                "i = info('caps', pax_headers={'SCHILY.xattr.security.capability': 'x', "
                "'SCHILY.xattr.trusted.overlay.opaque': 'y', 'SCHILY.xattr.user.note': 'kept'})\n"
                "add(i, b'c')"));
    BOOST_TEST_REQUIRE(r.ok(), why(r));
    const auto l = w.lowest(r.value());
    BOOST_TEST(!fs::exists(l / "dev/mem"));
    BOOST_TEST(!fs::exists(l / "dev/sda"));
    BOOST_TEST(fs::is_fifo(l / "fifo"));
    struct stat st {};
    BOOST_TEST_REQUIRE(::lstat((l / "suid").c_str(), &st) == 0);
    BOOST_TEST((st.st_mode & 07777) == 0755u);
    BOOST_TEST(st.st_uid == 65534u);
    BOOST_TEST(st.st_gid == 65534u);
    char buf[16];
    BOOST_TEST(::lgetxattr((l / "caps").c_str(), "security.capability", buf, sizeof buf) < 0);
    BOOST_TEST(::lgetxattr((l / "caps").c_str(), "trusted.overlay.opaque", buf, sizeof buf) < 0);
    BOOST_TEST(::lgetxattr((l / "caps").c_str(), "user.note", buf, sizeof buf) == 4);
  }
  // Sizes: one file past its limit, a gzip bomb (64 MiB of zeros in 64 KiB), too many
  // entries, a name past 255 bytes, a path too deep.
  refused(w.import(w.archive("add(info('big'), b'\\0' * (2 << 20))")), errc::too_large, "big");
  refused(
    w.import(w.archive("for n in range(64): add(info('z%d' % n), b'\\0' * (1 << 20))", "w:gz")),
    errc::too_large, "z8");
  BOOST_TEST(fs::file_size(w.dir / ("a" + std::to_string(w.made) + ".tar")) < (1u << 20));
  refused(w.import(w.archive("for n in range(2000): add(info('e%d' % n))")), errc::too_large,
          "more than 1000");
  refused(w.import(w.archive("add(info('n' * 256), b'x')")), errc::invalid_argument, "255");
  refused(w.import(w.archive("add(info('/'.join(['d'] * 300)), b'x')")), errc::invalid_argument,
          "deep");
  // Duplicates: a later entry replaces the earlier one, a directory with what is in it.
  {
    auto r = w.import(w.archive("add(info('p/q'), b'first')\n"
                                "add(info('p', type=tarfile.SYMTYPE, linkname='" +
                                canary +
                                "'))\nadd(info('p', type=tarfile.DIRTYPE))\n"
                                "add(info('p/r'), b'second')"));
    BOOST_TEST_REQUIRE(r.ok(), why(r));
    const auto l = w.lowest(r.value());
    BOOST_TEST(fs::is_directory(fs::symlink_status(l / "p")));
    BOOST_TEST(!fs::exists(l / "p/q"));
    BOOST_TEST(fs::exists(l / "p/r"));
  }

  nothing_escaped(w, before_canary);
  // Every refused import left no layer behind, and no spool of its own.
  for (const auto& e : fs::directory_iterator(w.dir / "registry"))
    BOOST_TEST(e.path().filename().string().rfind("import-", 0) != 0u, e.path());
}

// A spec build's context is an archive like any other (the same rules, "build context: "
// before the refused entry), and COPY takes nothing from outside it: no source climbs out,
// no source is reached through a symlink, a symlink is copied as a symlink, never read.
BOOST_AUTO_TEST_CASE(a_hostile_build_context_is_refused_and_copy_never_leaves_it) {
  world w;
  const auto before_canary = tree_of(w.canary);
  const std::string canary = w.canary.string();
  auto build = [&](const std::string& dockerfile, const std::string& context) {
    int fd = ::open(context.c_str(), O_RDONLY | O_CLOEXEC);
    BOOST_TEST_REQUIRE(fd >= 0);
    runtime::unique_fd hold(fd);
    spec_request req;
    req.name = "s" + std::to_string(++w.made);
    req.format = spec_format::dockerfile;
    req.text = dockerfile;
    return w.registry->build_spec(tenant, req, fd_source(fd), {});
  };
  const std::string copy_all = "FROM base\nCOPY . /ctx/\n";
  refused(build(copy_all, w.archive("add(info('a/../../escape'), b'x')")), errc::invalid_argument,
          "build context: archive entry 'a/../../escape' has a '..' component");
  refused(build(copy_all, w.archive("add(info('lib', type=tarfile.SYMTYPE, linkname='" + canary +
                                    "/empty'))\nadd(info('lib/planted'), b'p')")),
          errc::invalid_argument, "lib/planted");
  refused(build(copy_all, w.archive("add(info('hl', type=tarfile.LNKTYPE, linkname='" + canary +
                                    "/secret'))")),
          errc::invalid_argument, "hl");
  // COPY sources out of the context: refused before anything is recorded.
  refused(build("FROM base\nCOPY ../secret /x\n", w.archive("add(info('f'), b'f')")),
          errc::invalid_argument, "leaves the build context");
  refused(build("FROM base\nCOPY " + canary + "/secret /x\n", w.archive("add(info('f'), b'f')")),
          errc::invalid_argument, "is absolute");
  // ... and after ENV expansion too.
  refused(build("FROM base\nENV UP=..\nCOPY $UP/secret /x\n", w.archive("add(info('f'), b'f')")),
          errc::invalid_argument, "leaves the build context");
  // A source reached through a symlink of the context (to the host) is not found.
  refused(build("FROM base\nCOPY out/secret /x\n",
                w.archive("add(info('out', type=tarfile.SYMTYPE, linkname='" + canary + "'))")),
          errc::not_found, "COPY source 'out/secret' is not in the build context");
  // A symlink copied is a symlink in the layer; its target never read.
  {
    auto r =
      build("FROM base\nCOPY link /copied\n",
            w.archive("add(info('link', type=tarfile.SYMTYPE, linkname='" + canary + "/secret'))"));
    BOOST_TEST_REQUIRE(r.ok(), why(r));
    BOOST_TEST_REQUIRE(r->ready->layers.size() == 2u);
    const auto top = fs::path(w.layers->path()) / to_hex(r->ready->layers.back().sha256);
    BOOST_TEST(fs::read_symlink(top / "copied") == canary + "/secret");
  }
  nothing_escaped(w, before_canary);
  // No context is left behind: every staging tree of the store is gone.
  for (const auto& e : fs::directory_iterator(w.layers->path()))
    BOOST_TEST(e.path().filename().string().rfind(".staging-", 0) != 0u, e.path());
}

BOOST_AUTO_TEST_CASE(a_hostile_image_is_refused_before_a_layer_is_applied) {
  world w;
  const auto layers_before = w.layers->list().size();
  // A layer whose bytes do not match the digest its manifest names.
  const std::string forged = w.archive(R"(
import hashlib, json
def blob(data):
  d = hashlib.sha256(data).hexdigest()
  add(info('blobs/sha256/' + d), data)
  return d
layer = io.BytesIO()
with tarfile.open(fileobj=layer, mode='w') as l:
  i = tarfile.TarInfo('etc/motd'); i.size = 2; l.addfile(i, io.BytesIO(b'hi'))
cfg = blob(json.dumps({'config': {}, 'rootfs': {'type': 'layers', 'diff_ids': []}}).encode())
real = hashlib.sha256(layer.getvalue()).hexdigest()
add(info('blobs/sha256/' + real), b'not the layer the digest names')
man = blob(json.dumps({'schemaVersion': 2, 'config': {'digest': 'sha256:' + cfg},
  'layers': [{'mediaType': 'application/vnd.oci.image.layer.v1.tar', 'digest': 'sha256:' + real}]}).encode())
add(info('index.json'), json.dumps({'schemaVersion': 2, 'manifests': [{'digest': 'sha256:' + man}]}).encode())
)");
  refused(w.import(forged, archive_format::image), errc::invalid_argument, "does not match");
  // A digest that is a path.
  const std::string pathy = w.archive(R"(
import json
add(info('index.json'), json.dumps({'manifests': [{'digest': 'sha256:../../../etc/passwd'}]}).encode())
)");
  refused(w.import(pathy, archive_format::image), errc::invalid_argument, "64 lowercase hex");
  // A docker archive whose layer path climbs out.
  const std::string climbing = w.archive(R"(
import json
add(info('cfg.json'), json.dumps({'rootfs': {'diff_ids': ['sha256:' + '0' * 64]}}).encode())
add(info('manifest.json'), json.dumps([{'Config': 'cfg.json', 'Layers': ['../../layer.tar']}]).encode())
)");
  refused(w.import(climbing, archive_format::image), errc::invalid_argument, "../../layer.tar");
  // A whiteout that names `..`.
  const std::string whiteout = w.archive(R"(
import hashlib, json
def blob(data):
  d = hashlib.sha256(data).hexdigest()
  add(info('blobs/sha256/' + d), data)
  return d
layer = io.BytesIO()
with tarfile.open(fileobj=layer, mode='w') as l:
  i = tarfile.TarInfo('a/.wh..'); l.addfile(i)
cfg = blob(json.dumps({'config': {}}).encode())
ld = blob(layer.getvalue())
man = blob(json.dumps({'schemaVersion': 2, 'config': {'digest': 'sha256:' + cfg},
  'layers': [{'mediaType': 'application/vnd.oci.image.layer.v1.tar', 'digest': 'sha256:' + ld}]}).encode())
add(info('index.json'), json.dumps({'schemaVersion': 2, 'manifests': [{'digest': 'sha256:' + man}]}).encode())
)");
  refused(w.import(whiteout, archive_format::image), errc::invalid_argument, "a/.wh..");
  BOOST_TEST(w.layers->list().size() == layers_before);
}

BOOST_AUTO_TEST_SUITE_END()
