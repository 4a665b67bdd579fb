// console_world — what every console test shares, made once per test binary on first use
// (the suite's budget allows one daemon and one browser): a sandboxd with the web console on
// a loopback TLS address, crun and hollow runtimes, a tokens file with two plain tenants
// (acme, globex) beside the development token (tenant dev, admin), and a clock file the
// test moves, so the sandbox's history spans days; one headless Chromium; and a scenario
// driven through sandboxctl as a tenant would:
//
//   acme's sandbox `sb` (crun): created with labels holding markup, execs (exit 0 with an
//   argv holding a <script>, exit 3), a file written at a path holding markup, a write
//   refused for a ".." path (its message quotes the path), a filesystem pause with an exec
//   refused meanwhile, a resume, a memory pause, a resume, a read — spread over five days;
//   acme's `live` (hollow), paused and resumed by the live-update test;
//   globex's `other` (hollow), which acme must not see.
//
// Screenshots go to $SANDBOXD_BINARY_DIR/console-screenshots.
#pragma once

#include "tests/console/cdp_browser.hpp"
#include "tests/e2e/api_e2e_support.hpp"

#include <httplib.h>

#include <regex>

namespace sandboxd::test {

inline constexpr std::int64_t k_hour = 3'600'000'000'000;
inline constexpr std::int64_t k_day = 24 * k_hour;

struct console_world {
  temp_dir cfg{"console"};
  std::string clock_path = cfg / "clock";
  std::int64_t t0 = 0; // the scenario's start, a whole hour ten days ago
  std::int64_t now = 0;
  std::unique_ptr<daemon_process> d;
  std::string url; // https://127.0.0.1:PORT/
  int port = 0;
  std::unique_ptr<cdp_browser> browser;
  std::string sb, live, other;
  std::string screenshots;

  console_world() {
    const auto wall = std::chrono::system_clock::now().time_since_epoch();
    t0 = (std::chrono::duration_cast<std::chrono::nanoseconds>(wall).count() / k_hour) * k_hour -
         10 * k_day;
    set_clock(t0);
    check_shell("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
                "-days 2 -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 "
                "-keyout " +
                shell_quote(cfg / "key.pem") + " -out " + shell_quote(cfg / "cert.pem") + " 2>&1");
    port = free_port();
    d = std::make_unique<daemon_process>(std::vector<std::string>{
      "--runtime", "crun,hollow", "--default-runtime", "crun", "--tokens-file",
      write_tokens_file(cfg.path()), "--console-addr", "127.0.0.1:" + std::to_string(port),
      "--tls-cert", cfg / "cert.pem", "--tls-key", cfg / "key.pem", "--test-clock-file", clock_path,
      // The 10,000-sandbox list is more than a tenant's fair share.
      "--quota-memory-mib=0", "--quota-cpu-millicores=0", "--quota-pids=0", "--quota-disk-mib=0"});
    std::smatch m;
    const std::string log = d->log();
    if (!std::regex_search(log, m, std::regex("console: (https://127\\.0\\.0\\.1:[0-9]+/)")))
      throw std::runtime_error("sandboxd logged no console address:\n" + log);
    url = m[1];
    const char* bin = std::getenv("SANDBOXD_BINARY_DIR");
    screenshots = std::string(bin ? bin : ".") + "/console-screenshots";
    std::filesystem::create_directories(screenshots);
    browser =
      std::make_unique<cdp_browser>(std::vector<std::string>{"--ignore-certificate-errors"});
    scenario();
  }

  void set_clock(std::int64_t ns) {
    now = ns;
    {
      std::ofstream f(clock_path + ".next");
      f << ns << "\n";
    }
    std::filesystem::rename(clock_path + ".next", clock_path);
  }
  void at(std::int64_t offset) { set_clock(t0 + offset); }

  ctl_result as(const std::string& token, const std::vector<std::string>& args,
                std::string stdin_bytes = {}) {
    ctl_options o;
    o.env["SANDBOXD_TOKEN"] = token;
    o.stdin_bytes = std::move(stdin_bytes);
    return ctl(*d, args, o);
  }
  std::string ok_as(const std::string& token, const std::vector<std::string>& args,
                    std::string stdin_bytes = {}) {
    auto r = as(token, args, std::move(stdin_bytes));
    if (r.exit_code != 0)
      throw std::runtime_error("sandboxctl " + args.front() + " failed: " + r.out + r.err);
    return r.out;
  }
  static std::string id_of(std::string out) {
    while (!out.empty() && out.back() == '\n')
      out.pop_back();
    return out;
  }

  void scenario() {
    const auto& A = k_token_acme;
    at(0);
    sb = id_of(ok_as(A, {"create", "--memory", "256", "--label",
                         "note=<img src=x onerror=\"window.__xss=1\">", "--label", "team=<b>ml</b>",
                         "--label", "<i>k</i>=v"}));
    at(1 * k_hour);
    ok_as(A, {"exec", sb, "--", "echo", "<script>window.__xss=2</script>"});
    at(2 * k_hour);
    if (as(A, {"exec", sb, "--", "sh", "-c", "exit 3"}).exit_code != 3)
      throw std::runtime_error("exit 3 did not exit 3");
    at(3 * k_hour);
    ok_as(A, {"write", sb, "/workspace/<svg onload=window.__xss=3>.txt"}, "hello\n");
    at(4 * k_hour);
    if (as(A, {"write", sb, "/workspace/<iframe src=x>/../escape"}, "x").exit_code == 0)
      throw std::runtime_error("a .. path was written");
    at(1 * k_day);
    ok_as(A, {"pause", sb, "--mode", "filesystem"});
    at(1 * k_day + k_hour);
    if (as(A, {"exec", sb, "--", "true"}).exit_code == 0)
      throw std::runtime_error("an exec on a paused sandbox ran");
    at(2 * k_day);
    ok_as(A, {"resume", sb});
    at(2 * k_day + k_hour);
    ok_as(A, {"exec", sb, "--", "echo", "again"});
    at(3 * k_day);
    ok_as(A, {"pause", sb, "--mode", "memory"});
    at(4 * k_day);
    ok_as(A, {"resume", sb});
    at(4 * k_day + k_hour);
    ok_as(A, {"read", sb, "/workspace/<svg onload=window.__xss=3>.txt"});
    at(5 * k_day);
    live = id_of(ok_as(A, {"create", "--runtime", "hollow", "--label", "purpose=live"}));
    other = id_of(
      ok_as(k_token_globex, {"create", "--runtime", "hollow", "--label", "owner=globex-only"}));
    at(5 * k_day + k_hour);
  }

  // A page signed in with `token` (the sign-in page filled and sent, as a person does).
  std::unique_ptr<cdp_page> signed_in_page(const std::string& token) {
    auto p = browser->new_page();
    p->navigate(url);
    p->wait_for("location.hash.startsWith('#/login') && document.querySelector('#token')",
                "the sign-in page");
    p->type("#token", token);
    p->click("#signin");
    p->wait_for("document.querySelector('#sandbox-rows') !== null", "the Sandboxes page");
    return p;
  }

  // An HTTPS client of the console (the test certificate is not checked).
  std::unique_ptr<httplib::SSLClient> http() const {
    auto c = std::make_unique<httplib::SSLClient>("127.0.0.1", port);
    c->enable_server_certificate_verification(false);
    c->set_read_timeout(30, 0);
    return c;
  }
  // The session cookie of a sign-in with `token` ("name=value").
  std::string session_cookie(const std::string& token) const {
    auto c = http();
    auto r = c->Post("/api/login", {{"Origin", "https://127.0.0.1:" + std::to_string(port)}},
                     json{{"token", token}}.dump(), "application/json");
    if (!r || r->status != 200)
      throw std::runtime_error("sign-in failed: " + (r ? r->body : std::string("no answer")));
    const auto set = r->get_header_value("Set-Cookie");
    return set.substr(0, set.find(';'));
  }

  void shot(cdp_page& p, const std::string& name) {
    p.screenshot(screenshots + "/" + name + ".png");
    BOOST_TEST_MESSAGE("screenshot: " << screenshots << "/" << name << ".png");
  }
};

// The world, made by the first test that needs it.
console_world& world();

inline boost::test_tools::assertion_result console_can_run(utf::test_unit_id id) {
  auto r = crun_can_run(id);
  if (!r)
    return r;
  if (auto why = chromium_unavailable()) {
    boost::test_tools::assertion_result no(false);
    no.message() << *why;
    return no;
  }
  return r;
}

} // namespace sandboxd::test
