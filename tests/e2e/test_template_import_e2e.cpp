// Image imports through sandboxctl and a real sandboxd (crun): an OCI image the test makes
// itself with umoci (three layers: files, then whiteouts and an opaque directory, then a
// replaced file and a whited-out symlink) imported from its layout directory, and the same
// image as a docker save archive (skopeo), give exactly the tree the image means; the image's
// environment reaches execs; every layer is in the template's events, shared layers stored
// once. A root filesystem tarball imports as one layer. A template built from a Dockerfile
// (COPY from a context directory, ENV, WORKDIR, two RUN steps on crun) gives sandboxes its
// files and environment, an unchanged rebuild after its deletion runs no step (every
// step_finished cached), a changed context file runs its COPY and the steps after it again; a
// failing RUN fails the template with its exit code; COPY sources out of the context and a
// traversing context tar are refused; a build a crash interrupted is failed at the next start.
#define BOOST_TEST_MODULE template_import_e2e
#include "runtime/child_process.hpp"
#include "tests/e2e/e2e_support.hpp"

#include <chrono>
#include <fstream>
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

// --- builds from a spec (docs/templates.md "Build from a spec"; RUN steps on crun) ----------

namespace {

void write_file(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// The spec build's context and Dockerfile in `dir`: COPY of a directory (with an executable),
// ENV with an expansion, WORKDIR, a RUN that writes, one that deletes what the first wrote
// (a whiteout across step layers) and prints, USER last.
void make_spec(const std::string& dir) {
  write_file(dir + "/ctx/app/hello.txt", "hello from the context\n");
  write_file(dir + "/ctx/app/bin/tool", "#!/bin/sh\necho tool ran\n");
  std::filesystem::permissions(dir + "/ctx/app/bin/tool", std::filesystem::perms(0755));
  write_file(dir + "/Dockerfile", "FROM base\n"
                                  "ENV GREETING=\"hello spec\" APP_HOME=/srv/app\n"
                                  "WORKDIR $APP_HOME\n"
                                  "COPY app/ ./\n"
                                  "RUN mkdir /data && echo one > /data/a && echo two > /data/b \\\n"
                                  "    && echo \"built with $GREETING in $(pwd)\" > built.txt\n"
                                  "RUN rm /data/a && echo step output $((6 * 7))\n"
                                  "USER nobody\n");
}

struct build_run {
  json info;
  std::string err; // progress and step output
  std::vector<json> events;
};

build_run build_spec(const daemon_process& d, const std::string& dir, const std::string& name) {
  auto r = ctl(d, {"--json", "template", "build", name, "--dockerfile", dir + "/Dockerfile",
                   "--context", dir + "/ctx"});
  BOOST_TEST_REQUIRE(r.exit_code == 0, r);
  build_run b{r.doc(), r.err, {}};
  for (const auto& e : template_events(d, name))
    if (e["template_id"] == b.info["id"])
      b.events.push_back(e);
  return b;
}

std::vector<json> changes(const build_run& b, const std::string& change) {
  std::vector<json> out;
  for (const auto& e : b.events)
    if (e["change"] == change)
      out.push_back(e);
  return out;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_spec_build_runs_its_steps_and_an_unchanged_rebuild_runs_none) {
  auto& d = shared();
  const std::string dir = d.dir().path() + "/spec";
  make_spec(dir);
  auto first = build_spec(d, dir, "spec1");
  const auto& t = first.info;
  BOOST_TEST(t["status"] == "ready");
  BOOST_TEST(t["source"] == "spec");
  BOOST_TEST(t["scope"] == "tenant");
  BOOST_TEST(t["working_directory"] == "/srv/app");
  BOOST_TEST(t["user"] == "nobody");
  BOOST_TEST(t["env"]["GREETING"] == "hello spec");
  BOOST_TEST_REQUIRE(t["layers"].size() == 4u); // base's, COPY's, the two RUNs'
  BOOST_TEST(first.err.find("step output 42") != std::string::npos, first.err);
  BOOST_TEST(first.err.find("step 5/6: RUN rm /data/a") != std::string::npos, first.err);

  // The steps: three that ran (COPY and the two RUNs), each with the layer it made.
  const auto started = changes(first, "step_started");
  BOOST_TEST_REQUIRE(started.size() == 3u);
  BOOST_TEST(started[0]["instruction"] == "COPY app/ ./");
  BOOST_TEST(started[2]["instruction"] == "RUN rm /data/a && echo step output $((6 * 7))");
  BOOST_TEST(started[2]["index"] == 5);
  const auto finished = changes(first, "step_finished");
  BOOST_TEST_REQUIRE(finished.size() == 3u);
  for (const auto& f : finished) {
    BOOST_TEST(f["outcome"] == "completed");
    BOOST_TEST(!f.contains("cached"), f.dump());
    BOOST_TEST(f.contains("layer"), f.dump());
  }
  BOOST_TEST(changes(first, "created")[0]["source"] == "spec");

  // A sandbox of it sees the copied files, what the steps did and the environment.
  const auto id = create(d, {"--template", "spec1", "--runtime", "crun"});
  BOOST_TEST(sh(d, id, "cat /srv/app/hello.txt /srv/app/built.txt") ==
             "hello from the context\nbuilt with hello spec in /srv/app\n");
  BOOST_TEST(sh(d, id, "/srv/app/bin/tool") == "tool ran\n");
  BOOST_TEST(sh(d, id, "busybox ls /data") == "b\n"); // the second step's whiteout
  BOOST_TEST(sh(d, id, "busybox stat -c '%u:%g %a' /srv/app/hello.txt /srv/app/built.txt") ==
             "0:0 644\n0:0 644\n");
  BOOST_TEST(sh(d, id, "echo \"$GREETING|$APP_HOME\"") == "hello spec|/srv/app\n");
  // An exec that names no working directory starts in the template's WORKDIR (and its
  // exec_started says so); one that names a directory starts there.
  BOOST_TEST(sh(d, id, "pwd") == "/srv/app\n");
  BOOST_TEST(ctl_ok(d, {"exec", id, "--cwd", "/data", "--", "pwd"}) == "/data\n");
  ctl_ok(d, {"delete", id});

  // Deleted and built again unchanged: every step from the cache, nothing ran (no output),
  // the same layers and digest.
  ctl_ok(d, {"template", "rm", "spec1"});
  auto again = build_spec(d, dir, "spec1");
  BOOST_TEST(again.info["id"] != t["id"]);
  BOOST_TEST(again.info["digest"] == t["digest"]);
  BOOST_TEST(again.info["layers"] == t["layers"]);
  BOOST_TEST(again.err.find("step output 42") == std::string::npos, again.err);
  const auto cached = changes(again, "step_finished");
  BOOST_TEST_REQUIRE(cached.size() == 3u);
  for (const auto& f : cached)
    BOOST_TEST(f["cached"] == true, f.dump());
  for (const auto& l : changes(again, "layer_added"))
    BOOST_TEST(l["reused"] == true, l.dump());

  // A changed file of the context: its COPY and every step after it run again.
  write_file(dir + "/ctx/app/hello.txt", "changed\n");
  auto changed = build_spec(d, dir, "spec2");
  const auto ran = changes(changed, "step_finished");
  BOOST_TEST_REQUIRE(ran.size() == 3u);
  for (const auto& f : ran)
    BOOST_TEST(!f.contains("cached"), f.dump());
  BOOST_TEST(changed.err.find("step output 42") != std::string::npos, changed.err);
  ctl_ok(d, {"template", "rm", "spec1"});
  ctl_ok(d, {"template", "rm", "spec2"});
  // The read models still equal the log and the audit chain (a row per step event) holds.
  ctl_ok(d, {"projections", "verify"});
  BOOST_TEST(ctl_ok(d, {"audit", "verify"}).find("the audit chain holds") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_failing_run_step_fails_the_template_with_its_exit_code) {
  auto& d = shared();
  const std::string dir = d.dir().path() + "/failing";
  write_file(dir + "/Dockerfile", "FROM base\nRUN echo before && exit 7\nRUN echo never\n");
  auto r = ctl(d, {"template", "build", "fails", "--dockerfile", dir + "/Dockerfile"});
  BOOST_TEST(r.exit_code != 0, r);
  BOOST_TEST(
    r.err.find("step 1 (RUN echo before && exit 7) exited with status 7") != std::string::npos, r);
  BOOST_TEST(r.err.find("before") != std::string::npos, r); // its output came first
  std::vector<json> finished;
  json failed;
  for (const auto& e : template_events(d, "fails")) {
    if (e["change"] == "step_finished")
      finished.push_back(e);
    if (e["change"] == "failed")
      failed = e;
  }
  BOOST_TEST_REQUIRE(finished.size() == 1u); // the second step never started
  BOOST_TEST(finished[0]["outcome"] == "failed");
  BOOST_TEST(finished[0]["exit_code"] == 7);
  BOOST_TEST_REQUIRE(!failed.is_null());
  auto shown = json::parse(ctl_ok(d, {"--json", "template", "show", "fails"}));
  BOOST_TEST(shown["status"] == "failed");
  BOOST_TEST(shown["failure"].get<std::string>().find("exited with status 7") != std::string::npos);
  ctl_ok(d, {"template", "rm", "fails"});
}

BOOST_AUTO_TEST_CASE(a_copy_out_of_the_context_and_a_traversing_context_are_refused) {
  auto& d = shared();
  const std::string dir = d.dir().path() + "/hostile";
  write_file(dir + "/ctx/ok", "ok\n");
  write_file(dir + "/up", "FROM base\nCOPY ../secret /x\n");
  auto r =
    ctl(d, {"template", "build", "up", "--dockerfile", dir + "/up", "--context", dir + "/ctx"});
  BOOST_TEST(r.exit_code != 0, r);
  BOOST_TEST(r.err.find("Dockerfile line 2: COPY source '../secret' leaves the build context") !=
               std::string::npos,
             r);
  write_file(dir + "/abs", "FROM base\nCOPY /etc/passwd /x\n");
  r = ctl(d, {"template", "build", "abs", "--dockerfile", dir + "/abs"});
  BOOST_TEST(r.err.find("'/etc/passwd' is absolute") != std::string::npos, r);
  // Refused before anything was recorded: neither name exists.
  BOOST_TEST(template_events(d, "up").empty());
  BOOST_TEST(template_events(d, "abs").empty());
  // A context tar (sent as it is) whose entry climbs out.
  run_ok("/usr/bin/python3", {"-c",
                              "import io, sys, tarfile\n"
                              "t = tarfile.open(sys.argv[1], 'w')\n"
                              "i = tarfile.TarInfo('a/../../escape'); i.size = 1\n"
                              "t.addfile(i, io.BytesIO(b'x'))\n"
                              "t.close()\n",
                              dir + "/evil.tar"});
  write_file(dir + "/all", "FROM base\nCOPY . /ctx/\n");
  r = ctl(
    d, {"template", "build", "evil", "--dockerfile", dir + "/all", "--context", dir + "/evil.tar"});
  BOOST_TEST(r.exit_code != 0, r);
  BOOST_TEST(r.err.find("build context: archive entry 'a/../../escape' has a '..' component") !=
               std::string::npos,
             r);
  BOOST_TEST(!std::filesystem::exists(d.data() + "/escape"));
  ctl_ok(d, {"template", "rm", "evil"});
}

BOOST_AUTO_TEST_CASE(a_build_a_crash_interrupted_is_failed_at_the_next_start) {
  auto& d = shared(); // killed and started again on its data directory: the other cases' too
  const std::string dir = d.dir().path() + "/slow";
  write_file(dir + "/Dockerfile", "FROM base\nRUN echo started && sleep 600\n");
  ctl_result building;
  std::thread client([&] {
    building = ctl(d, {"template", "build", "slow", "--dockerfile", dir + "/Dockerfile"});
  });
  // The step's build sandbox exists: the build is under way.
  const std::string sandboxes = d.data() + "/runtimes/crun/sandboxes";
  auto build_sandboxes = [&] {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(sandboxes))
      if (e.path().filename().string().rfind("build-", 0) == 0)
        out.push_back(e.path().filename().string());
    return out;
  };
  BOOST_TEST_REQUIRE(eventually([&] { return !build_sandboxes().empty(); }, 60s));
  d.kill9();
  client.join();
  BOOST_TEST(building.exit_code != 0, building);
  d.restart();
  // Its outcome is recorded, never assumed; its build sandbox went as an orphan.
  auto shown = json::parse(ctl_ok(d, {"--json", "template", "show", "slow"}));
  BOOST_TEST(shown["status"] == "failed");
  BOOST_TEST(shown["failure"].get<std::string>().find(
               "stopped while template slow was being made") != std::string::npos);
  BOOST_TEST(build_sandboxes().empty());
  ctl_ok(d, {"template", "rm", "slow"});
}

BOOST_AUTO_TEST_SUITE_END()
