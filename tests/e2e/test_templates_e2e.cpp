// Templates an agent can work in, through sandboxctl and a real sandboxd (crun, and runsc
// where it runs): the stock `python` template runs python3, a venv with a wheel copied in,
// git and pytest; `node` runs node; a sandbox's `created` event names the exact template
// content (the layers of the template's `ready` event, debian's layer shared by python and
// node); a python sandbox keeps its files across pauses and a daemon restart; a fresh data
// directory imports the cached stock tarball and gets the very same layers, its first create
// showing the build's progress.
//
// The stock templates are built on first use with mmdebstrap and cached under
// ~/.cache/sandboxd/templates, so only a machine's first run pays for mmdebstrap.
//
// Without those tarballs the suite needs mmdebstrap and the machine's Debian archive: when
// the archive does not answer, every case is skipped, saying so.
#define BOOST_TEST_MODULE templates_e2e
#include "cli/exit_codes.hpp"
#include "tests/e2e/stock_support.hpp"

#include <unistd.h>

using namespace sandboxd::test;

namespace {

boost::test_tools::assertion_result stock_can_be_had(utf::test_unit_id id) {
  auto crun = crun_can_run(id);
  if (!crun)
    return crun;
  static const std::string why = why_no_stock_build();
  boost::test_tools::assertion_result r(why.empty());
  if (!why.empty())
    r.message() << why;
  return r;
}

boost::test_tools::assertion_result runsc_can_run(utf::test_unit_id) {
  boost::test_tools::assertion_result r(true);
  if (::geteuid() != 0) {
    r = false;
    r.message() << "real sandboxes need root";
  } else if (auto why =
               sandboxd::node::runtime_unavailable(sandboxd::events::runtime_kind::runsc)) {
    r = false;
    r.message() << "runsc cannot run sandboxes here: " << *why;
  }
  return r;
}

bool runsc_here() {
  return !sandboxd::node::runtime_unavailable(sandboxd::events::runtime_kind::runsc);
}

// One daemon for every case: crun, and runsc where it runs.
daemon_process& shared() {
  static daemon_process d({"--runtime", runsc_here() ? "crun,runsc" : "crun"});
  return d;
}

// The sandbox's output of `sh -c script` (which must succeed).
std::string sh(const daemon_process& d, const std::string& id, const std::string& script) {
  return ctl_ok(d, {"exec", id, "--", "/bin/sh", "-c", script});
}

std::vector<json> events_of(const daemon_process& d, const std::vector<std::string>& args) {
  std::vector<std::string> all{"--json", "events"};
  all.insert(all.end(), args.begin(), args.end());
  ctl_result r;
  r.out = ctl_ok(d, all);
  return r.lines();
}

// The payload of template `name`'s last event of `change` in the whole log.
json template_change(const daemon_process& d, const std::string& name, const std::string& change) {
  json found;
  for (const auto& e : events_of(d, {}))
    if (e["kind"] == "template_event" && e["payload"]["name"] == name &&
        e["payload"]["change"] == change)
      found = e["payload"];
  return found;
}

json created_of(const daemon_process& d, const std::string& id) {
  for (const auto& e : events_of(d, {id}))
    if (e["kind"] == "created")
      return e["payload"];
  return {};
}

// A wheel of package sbdemo (sbdemo.answer() is 42), made on the host with its python3.
std::string make_wheel(const std::string& dir) {
  const std::string path = dir + "/sbdemo-1.0-py3-none-any.whl";
  const std::string script = R"(
import base64, hashlib, sys, zipfile
files = {
  "sbdemo/__init__.py": "def answer():\n    return 42\n",
  "sbdemo-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: sbdemo\nVersion: 1.0\n",
  "sbdemo-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: sandboxd-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
with zipfile.ZipFile(sys.argv[1], "w") as z:
  for name, text in files.items():
    data = text.encode()
    z.writestr(name, data)
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record.append("%s,sha256=%s,%d" % (name, digest, len(data)))
  record.append("sbdemo-1.0.dist-info/RECORD,,")
  z.writestr("sbdemo-1.0.dist-info/RECORD", "\n".join(record) + "\n")
)";
  auto r = run_process("/usr/bin/python3", {"-c", script, path});
  BOOST_TEST_REQUIRE(r.exit_code == 0, r);
  return path;
}

// What `python` must do for an agent, on `runtime`: python, a venv with a wheel, git, and a
// small pytest run (its summary line last).
void python_toolchain(const std::string& runtime) {
  auto& d = shared();
  const auto id = create(d, {"--template", "python", "--runtime", runtime, "--memory", "512"});
  ctl_ok(d, {"cp-in", make_wheel(d.dir().path()), id, "/workspace/sbdemo-1.0-py3-none-any.whl"});
  const auto out = sh(d, id,
                      R"(set -e
cd /workspace
python3 -c 'print(sum([2, 3, 5]))'
python3 -m venv venv
venv/bin/pip install --no-index --quiet sbdemo-1.0-py3-none-any.whl
venv/bin/python -c 'import sbdemo; print("wheel", sbdemo.answer())'
mkdir repo && cd repo && git init -q
echo hello > a.txt && git add a.txt
git -c user.name=agent -c user.email=agent@example.com commit -q -m first
git log --format=%s
printf 'def test_sum():\n    assert sum([2, 3, 5]) == 10\n' > test_sum.py
)"
                      "python3 -m pytest -q -p no:cacheprovider test_sum.py | tail -n 1\n");
  std::istringstream lines(out);
  std::vector<std::string> l;
  for (std::string s; std::getline(lines, s);)
    l.push_back(s);
  BOOST_TEST_REQUIRE(l.size() == 4u, out);
  BOOST_TEST(l[0] == "10");
  BOOST_TEST(l[1] == "wheel 42");
  BOOST_TEST(l[2] == "first");
  BOOST_TEST(l[3].rfind("1 passed", 0) == 0u, out);
  // The same sum through `run`: the code to python3's stdin.
  BOOST_TEST(ctl_ok(d, {"run", id, "--lang", "python", "print(sum([2, 3, 5]))"}) == "10\n");
  ctl_ok(d, {"delete", id});
}

} // namespace

BOOST_AUTO_TEST_SUITE(templates_e2e, *utf::precondition(stock_can_be_had))

BOOST_AUTO_TEST_CASE(python_runs_python_a_venv_with_a_wheel_git_and_pytest_on_crun) {
  python_toolchain("crun");
}

BOOST_AUTO_TEST_CASE(python_runs_python_a_venv_with_a_wheel_git_and_pytest_on_runsc,
                     *utf::precondition(runsc_can_run)) {
  python_toolchain("runsc");
}

// node starts worker threads before it runs a line: under runsc they need clone3 to fail
// with ENOSYS, not EPERM (seccomp_profile.hpp).
BOOST_AUTO_TEST_CASE(node_runs_node_on_both_runtimes) {
  auto& d = shared();
  std::vector<std::string> runtimes{"crun"};
  if (runsc_here())
    runtimes.push_back("runsc");
  for (const auto& rt : runtimes) {
    BOOST_TEST_CONTEXT(rt) {
      const auto id = create(d, {"--template", "node", "--runtime", rt});
      BOOST_TEST(sh(d, id, "node -e 'console.log([2, 3, 5].reduce((a, b) => a + b))'") == "10\n");
      BOOST_TEST(sh(d, id, "command -v npm; command -v git") == "/usr/bin/npm\n/usr/bin/git\n");
      ctl_options script;
      script.stdin_bytes = "const n = [2, 3, 5];\nconsole.log(n.reduce((a, b) => a + b));\n";
      BOOST_TEST(ctl_ok(d, {"run", id, "--lang", "js"}, script) == "10\n");
      ctl_ok(d, {"delete", id});
    }
  }
}

// `run` on a template without the interpreter says which template has it; --json gives
// stdout, stderr and both in the order they came; an unknown language is a usage error.
BOOST_AUTO_TEST_CASE(run_names_the_missing_interpreter_and_reports_output_as_json) {
  auto& d = shared();
  const auto id = create(d, {"--template", "base", "--runtime", "crun"});
  auto missing = ctl(d, {"run", id, "--lang", "python", "print(1)"});
  BOOST_TEST(missing.exit_code == 127, missing);
  BOOST_TEST(missing.err.find("python3 is not in this sandbox") != std::string::npos, missing);
  BOOST_TEST(missing.err.find("the python template has it") != std::string::npos, missing);
  auto j = ctl(d, {"--json", "run", id, "--lang", "sh",
                   "echo one; sleep 0.2; echo two >&2; sleep 0.2; echo three; "
                   "exit 3"});
  BOOST_TEST(j.exit_code == 3, j);
  const auto doc = json::parse(j.out);
  BOOST_TEST(doc["language"] == "sh");
  BOOST_TEST(doc["exit_code"] == 3);
  BOOST_TEST(doc["stdout"] == "one\nthree\n");
  BOOST_TEST(doc["stderr"] == "two\n");
  BOOST_TEST(doc["output"] == "one\ntwo\nthree\n");
  auto bad = ctl(d, {"run", id, "--lang", "cobol", "x"});
  BOOST_TEST(bad.exit_code == sandboxd::cli::k_exit_usage, bad);
  BOOST_TEST(bad.err.find("unknown language 'cobol'; the languages are python, node, bash, sh") !=
               std::string::npos,
             bad);
  ctl_ok(d, {"delete", id});
}

BOOST_AUTO_TEST_CASE(a_sandbox_created_event_names_the_exact_template_content) {
  auto& d = shared();
  const auto id = create(d, {"--template", "python", "--runtime", "crun"});
  const auto created = created_of(d, id);
  const auto ready = template_change(d, "python", "ready");
  BOOST_TEST_REQUIRE(!ready.is_null());
  BOOST_TEST(created["template"] == "python");
  BOOST_TEST(created["template_id"] == ready["template_id"]);
  BOOST_TEST(created["template_digest"] == ready["digest"]);
  BOOST_TEST(created["template_layers"] == ready["layers"]);
  BOOST_TEST_REQUIRE(ready["layers"].size() == 3u); // debian, python's packages, sandboxd
  // debian's layer is python's and node's lowest, stored once; the sandboxd layer is on top
  // of all three.
  const auto debian = template_change(d, "debian", "ready");
  const auto node = template_change(d, "node", "ready");
  BOOST_TEST_REQUIRE(debian["layers"].size() == 2u);
  BOOST_TEST(ready["layers"][0] == debian["layers"][0]);
  BOOST_TEST(ready["layers"][2] == debian["layers"][1]);
  if (!node.is_null())
    BOOST_TEST(node["layers"][0] == debian["layers"][0]);
  // The driver stacked exactly those layers: python3 from the middle one, /etc/debian_version
  // from the lowest.
  BOOST_TEST(sh(d, id,
                "cat /etc/debian_version | cut -d. -f1; python3 -c 'import venv'; "
                "test -f /tmp/.sandboxd-keep && echo keep") == "12\nkeep\n");
  ctl_ok(d, {"delete", id});
}

BOOST_AUTO_TEST_CASE(a_python_sandbox_keeps_its_files_across_pauses_and_a_restart) {
  auto& d = shared();
  const auto id = create(d, {"--template", "python", "--runtime", "crun"});
  sh(d, id, "python3 -c \"open('/workspace/state.txt', 'w').write('kept')\"");
  ctl_ok(d, {"pause", id, "--mode", "filesystem"});
  ctl_ok(d, {"resume", id});
  BOOST_TEST(sh(d, id, "python3 -c \"print(open('/workspace/state.txt').read())\"") == "kept\n");
  ctl_ok(d, {"pause", id, "--mode", "memory"});
  ctl_ok(d, {"resume", id});
  d.stop();
  d.restart();
  BOOST_TEST(sh(d, id, "python3 -c \"print(open('/workspace/state.txt').read())\"") == "kept\n");
  ctl_ok(d, {"delete", id});
}

BOOST_AUTO_TEST_CASE(a_fresh_data_directory_imports_the_cached_tarball_into_the_same_layers) {
  // The shared daemon built (or imported) python already, so its tarballs are cached.
  const auto first = template_change(shared(), "python", "ready");
  BOOST_TEST_REQUIRE(!first.is_null());
  daemon_process fresh({"--runtime", "crun"});
  // The first create waits for python's build and shows it on stderr (stdout: the id alone);
  // the second one is instant and silent.
  auto first_create = ctl(fresh, {"create", "--template", "python", "--runtime", "crun"});
  BOOST_TEST_REQUIRE(first_create.exit_code == 0, first_create);
  BOOST_TEST(first_create.err.find("building template python on this node first") !=
               std::string::npos,
             first_create);
  BOOST_TEST(first_create.err.find("python:  92% unpacking the cached python root filesystem") !=
               std::string::npos,
             first_create);
  const auto id = first_create.out.substr(0, first_create.out.size() - 1);
  BOOST_TEST(first_create.out == id + "\n");
  auto second = ctl(fresh, {"create", "--template", "python", "--runtime", "crun"});
  BOOST_TEST(second.exit_code == 0, second);
  BOOST_TEST(second.err.empty(), second);
  ctl_ok(fresh, {"delete", second.out.substr(0, second.out.size() - 1)});
  BOOST_TEST(sh(fresh, id, "python3 -c 'print(sum([2, 3, 5]))'") == "10\n");
  const auto again = template_change(fresh, "python", "ready");
  BOOST_TEST(again["layers"] == first["layers"]); // the same trees, the same names
  BOOST_TEST(again["digest"] == first["digest"]);
  int cached = 0, built = 0;
  for (const auto& e : events_of(fresh, {}))
    if (e["kind"] == "template_event" && e["payload"]["change"] == "layer_added") {
      const std::string origin = e["payload"]["origin"];
      cached += origin == "stock (cached tarball)";
      built += origin == "stock (mmdebstrap)";
    }
  BOOST_TEST(cached == 2); // debian's and python's tarballs
  BOOST_TEST(built == 0);
  ctl_ok(fresh, {"delete", id});
}

BOOST_AUTO_TEST_CASE(an_unknown_template_is_not_found_and_makes_no_sandbox) {
  auto& d = shared();
  auto r = ctl(d, {"create", "--template", "no-such-template", "--runtime", "crun"});
  BOOST_TEST(r.exit_code != 0, r);
  BOOST_TEST(r.err.find("not_found") != std::string::npos, r);
  BOOST_TEST(r.err.find("no-such-template") != std::string::npos, r);
  BOOST_TEST(r.err.find("use one of: base, debian, node, python") != std::string::npos, r);
}

// Last: it deletes python, which the shared daemon then makes again from the cached tarballs.
BOOST_AUTO_TEST_CASE(templates_are_listed_shown_and_deleted_once_no_sandbox_uses_them) {
  auto& d = shared();
  const auto id = create(d, {"--template", "python", "--runtime", "crun"});
  auto listed = json::parse(ctl_ok(d, {"--json", "template", "list"}));
  std::map<std::string, json> by_name;
  for (const auto& t : listed["templates"])
    by_name[t["name"]] = t;
  BOOST_TEST_REQUIRE(by_name.count("python") == 1u, listed.dump());
  BOOST_TEST(by_name["python"]["status"] == "ready");
  BOOST_TEST(by_name["python"]["scope"] == "global");
  BOOST_TEST(by_name["python"]["used_by"] == json::array({id}));
  BOOST_TEST(by_name["python"]["digest"] == template_change(d, "python", "ready")["digest"]);
  BOOST_TEST(by_name.count("base") == 1u);
  BOOST_TEST(by_name.count("node") == 1u); // built by an earlier case, or listed as "stock"

  // In use: refused, naming the sandbox; debian is what python is built on.
  auto r = ctl(d, {"template", "rm", "python"});
  BOOST_TEST(r.exit_code == sandboxd::cli::exit_code_of(sandboxd::errc::conflict), r);
  BOOST_TEST(r.err.find(id) != std::string::npos, r);
  r = ctl(d, {"template", "rm", "debian"});
  BOOST_TEST(r.exit_code == sandboxd::cli::exit_code_of(sandboxd::errc::conflict), r);
  BOOST_TEST(r.err.find("is built on template debian") != std::string::npos, r);

  ctl_ok(d, {"delete", id});
  const auto before = template_change(d, "python", "ready");
  auto gone = json::parse(ctl_ok(d, {"--json", "template", "rm", "python"}));
  BOOST_TEST(gone["status"] == "deleted");
  BOOST_TEST(gone["id"] == before["template_id"]);
  BOOST_TEST(!template_change(d, "python", "deleted").is_null());
  // A stock template is there to be made again: shown as "stock", and its next use makes it
  // (from the cached tarballs: the very same layers under a new id).
  auto shown = json::parse(ctl_ok(d, {"--json", "template", "show", "python"}));
  BOOST_TEST(shown["status"] == "stock");
  const auto again = create(d, {"--template", "python", "--runtime", "crun"});
  BOOST_TEST(sh(d, again, "python3 -c 'print(sum([2, 3, 5]))'") == "10\n");
  const auto remade = template_change(d, "python", "ready");
  BOOST_TEST(remade["template_id"] != before["template_id"]);
  BOOST_TEST(remade["layers"] == before["layers"]);
  ctl_ok(d, {"delete", again});
}

BOOST_AUTO_TEST_SUITE_END()
