// Image imports through sandboxctl and a real sandboxd (crun): an OCI image the test makes
// itself with umoci (three layers: files, then whiteouts and an opaque directory, then a
// replaced file and a whited-out symlink) imported from its layout directory, and the same
// image as a docker save archive (skopeo), give exactly the tree the image means; the image's
// environment reaches execs; every layer is in the template's events, shared layers stored
// once. A root filesystem tarball imports as one layer.
#define BOOST_TEST_MODULE template_import_e2e
#include "runtime/child_process.hpp"
#include "tests/e2e/e2e_support.hpp"

#include <chrono>
#include <thread>

using namespace sandboxd::test;

namespace {

boost::test_tools::assertion_result tools_here(utf::test_unit_id id) {
  auto crun = crun_can_run(id);
  if (!crun)
    return crun;
  boost::test_tools::assertion_result r(true);
  for (const char* tool : {"umoci", "skopeo"})
    if (sandboxd::runtime::find_program(tool).empty()) {
      r = false;
      r.message() << tool << " is missing (scripts/setup installs it)";
    }
  return r;
}

daemon_process& shared() {
  static daemon_process d({"--runtime", "crun"});
  return d;
}

void run_ok(const std::string& program, const std::vector<std::string>& args) {
  auto r = run_process(program, args);
  BOOST_TEST_REQUIRE(r.exit_code == 0, program << ": " << r);
}

// Three layer tarballs written with Python's tarfile (uncompressed, as umoci raw add-layer
// takes them), in `dir`.
void make_layers(const std::string& dir) {
  const std::string script = R"(
import io, sys, tarfile
d = sys.argv[1]
def tar(name, entries):
  with tarfile.open(d + "/" + name, "w", format=tarfile.PAX_FORMAT) as t:
    for kind, path, data in entries:
      i = tarfile.TarInfo(path)
      i.mtime = 1700000000
      if kind == "dir":
        i.type = tarfile.DIRTYPE; i.mode = 0o755; t.addfile(i)
      elif kind == "link":
        i.type = tarfile.SYMTYPE; i.linkname = data; t.addfile(i)
      else:
        b = data if isinstance(data, bytes) else data.encode()
        i.size = len(b); i.mode = 0o755 if kind == "exe" else 0o644
        t.addfile(i, io.BytesIO(b))
busybox = open("/bin/busybox", "rb").read()
tar("l1.tar", [("dir", "bin", None), ("exe", "bin/busybox", busybox), ("link", "bin/sh", "busybox"),
  ("dir", "data", None), ("dir", "data/a", None), ("file", "data/a/keep", "one\n"),
  ("file", "data/a/gone", "gone\n"), ("dir", "data/opq", None), ("file", "data/opq/old1", "x\n"),
  ("file", "data/opq/old2", "y\n"), ("link", "data/link", "a/keep")])
tar("l2.tar", [("file", "data/a/.wh.gone", ""), ("dir", "data/opq", None),
  ("file", "data/opq/.wh..wh..opq", ""), ("file", "data/opq/new", "new\n"),
  ("dir", "data/b", None), ("file", "data/b/added", "two\n")])
tar("l3.tar", [("file", "data/a/keep", "three\n"), ("file", "data/.wh.link", "")])
)";
  run_ok("/usr/bin/python3", {"-c", script, dir});
}

// An OCI image layout at DIR/oci (tag t) of the three layers, with an environment.
std::string make_image(const std::string& dir) {
  make_layers(dir);
  const std::string layout = dir + "/oci";
  run_ok("/usr/bin/umoci", {"init", "--layout", layout});
  run_ok("/usr/bin/umoci", {"new", "--image", layout + ":t"});
  for (const char* l : {"l1.tar", "l2.tar", "l3.tar"})
    run_ok("/usr/bin/umoci", {"raw", "add-layer", "--image", layout + ":t", dir + "/" + l});
  run_ok("/usr/bin/umoci", {"config", "--image", layout + ":t", "--config.env", "PATH=/bin",
                            "--config.env", "GREETING=from the image", "--config.cmd", "/bin/sh"});
  return layout;
}

std::string sh(const daemon_process& d, const std::string& id, const std::string& script) {
  return ctl_ok(d, {"exec", id, "--", "/bin/sh", "-c", script});
}

// What a sandbox of template `name` sees of the image.
void expect_the_image_tree(const daemon_process& d, const std::string& name) {
  const auto id = create(d, {"--template", name, "--runtime", "crun"});
  BOOST_TEST(sh(d, id, "cd /data && busybox find . | busybox sort") ==
             ".\n./a\n./a/keep\n./b\n./b/added\n./opq\n./opq/new\n");
  BOOST_TEST(sh(d, id, "busybox cat /data/a/keep /data/b/added /data/opq/new") ==
             "three\ntwo\nnew\n");
  BOOST_TEST(sh(d, id, "echo \"$GREETING\"") == "from the image\n");
  // The sandbox's own writes go to its writable layer, above the image's.
  BOOST_TEST(sh(d, id, "echo mine > /data/a/keep && busybox cat /data/a/keep") == "mine\n");
  ctl_ok(d, {"delete", id});
}

std::vector<json> template_events(const daemon_process& d, const std::string& name) {
  ctl_result r;
  r.out = ctl_ok(d, {"--json", "events"});
  std::vector<json> out;
  for (const auto& e : r.lines())
    if (e["kind"] == "template_event" && e["payload"]["name"] == name)
      out.push_back(e["payload"]);
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(template_import_e2e, *utf::precondition(tools_here))

BOOST_AUTO_TEST_CASE(an_oci_layout_and_its_docker_archive_give_exactly_the_image_tree) {
  auto& d = shared();
  const std::string dir = d.dir().path() + "/image";
  std::filesystem::create_directories(dir);
  const auto layout = make_image(dir);

  auto t = json::parse(
    ctl_ok(d, {"--json", "template", "import", layout, "--name", "img", "--format", "image"}));
  BOOST_TEST(t["status"] == "ready");
  BOOST_TEST(t["scope"] == "tenant");
  BOOST_TEST(t["source"] == "import");
  BOOST_TEST_REQUIRE(t["layers"].size() == 4u); // the image's three, the sandboxd layer
  expect_the_image_tree(d, "img");
  std::vector<std::string> origins;
  for (const auto& e : template_events(d, "img"))
    if (e["change"] == "layer_added")
      origins.push_back(e["origin"]);
  BOOST_TEST_REQUIRE(origins.size() == 4u);
  BOOST_TEST(origins[0].rfind("image layer sha256:", 0) == 0u);
  BOOST_TEST(origins[3] == "sandboxd");

  // The same image as docker save writes it: the same layers, stored once — also when it is
  // imported in another second (a whiteout timed by the clock would change a layer's digest).
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  const std::string archive = dir + "/docker.tar";
  run_ok("/usr/bin/skopeo",
         {"copy", "--quiet", "oci:" + layout + ":t", "docker-archive:" + archive + ":img:t"});
  auto t2 = json::parse(
    ctl_ok(d, {"--json", "template", "import", archive, "--name", "img2", "--format", "image"}));
  BOOST_TEST(t2["layers"] == t["layers"], t2["layers"].dump() << " vs " << t["layers"].dump());
  BOOST_TEST(t2["digest"] == t["digest"]);
  int reused = 0;
  for (const auto& e : template_events(d, "img2"))
    reused += e["change"] == "layer_added" && e["reused"] == true;
  BOOST_TEST(reused == 4);
  expect_the_image_tree(d, "img2");
}

BOOST_AUTO_TEST_CASE(a_root_filesystem_tarball_is_one_layer_and_a_bad_image_makes_none) {
  auto& d = shared();
  const std::string dir = d.dir().path() + "/rootfs";
  std::filesystem::create_directories(dir + "/tree/bin");
  std::filesystem::copy_file("/bin/busybox", dir + "/tree/bin/busybox");
  std::filesystem::create_symlink("busybox", dir + "/tree/bin/sh");
  run_ok("/usr/bin/tar", {"-C", dir + "/tree", "-czf", dir + "/rootfs.tar.gz", "."});
  auto t = json::parse(
    ctl_ok(d, {"--json", "template", "import", dir + "/rootfs.tar.gz", "--name", "tiny"}));
  BOOST_TEST(t["layers"].size() == 2u); // the tarball's, the sandboxd layer
  const auto id = create(d, {"--template", "tiny", "--runtime", "crun"});
  BOOST_TEST(sh(d, id, "busybox ls /bin") == "busybox\nsh\n");
  ctl_ok(d, {"delete", id});

  // A root filesystem tarball is no image: refused naming what is missing, and the failed
  // template holds no layer.
  auto r = ctl(
    d, {"template", "import", dir + "/rootfs.tar.gz", "--name", "notimage", "--format", "image"});
  BOOST_TEST(r.exit_code != 0, r);
  BOOST_TEST(r.err.find("index.json") != std::string::npos, r);
  auto failed = template_events(d, "notimage");
  BOOST_TEST_REQUIRE(!failed.empty());
  BOOST_TEST(failed.back()["change"] == "failed");
  // The name is taken by the failed one until it is deleted.
  ctl_ok(d, {"template", "rm", "notimage"});
  ctl_ok(d, {"template", "rm", "tiny"});
  r = ctl(d, {"template", "show", "tiny"});
  BOOST_TEST(r.err.find("not_found") != std::string::npos, r);
}

BOOST_AUTO_TEST_SUITE_END()
