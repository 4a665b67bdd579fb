// console_bench — the web console's two figures (docs/console.md, issue targets):
//   list_first_page_ms   the first page (50 rows) of a tenant's Sandboxes list of N sandboxes
//                        (default 10,000), server-side: the console's own Server-Timing for
//                        GET /api/sandboxes (target <= 100 ms); the wall time of the same
//                        request from a client on loopback beside it;
//   timeline_render_ms   a sandbox of E events (default 5,000) opened in headless Chromium:
//                        from the timeline's JSON arriving to the page drawn (two frames
//                        after), as the page measures it (target <= 1,000 ms); the JSON's
//                        server time and fetch beside it.
// Reference in the same run: the same list query's plain SQL time is not reachable from here,
// so the list figure is given beside the console's time for GET /api/session (a request that
// reads nothing: the HTTP and session overhead), and the timeline beside its fetch.
// sandboxd runs as a process of its own: hollow runtime (control-plane scale), embedded file
// log and PostgreSQL, console on a loopback port (plain HTTP). Sandboxes are made through the
// RPC API by eight clients at once; the events are stats (one logged read each).
// Usage: console_bench [--json] [--sandboxes N] [--events E] [--samples S] [--log FILE]
// (--log: the daemon's log copied to FILE at the end)
#include "api/client.hpp"
#include "tests/console/cdp_browser.hpp"
#include "tests/support/guardian.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <fstream>
#include <regex>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace {

using steady = std::chrono::steady_clock;
using json = nlohmann::json;
using namespace sandboxd;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

double ms_since(steady::time_point t0) {
  return std::chrono::duration<double, std::milli>(steady::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double server_ms(const httplib::Result& r) {
  std::smatch m;
  const std::string h = r ? r->get_header_value("Server-Timing") : "";
  return std::regex_search(h, m, std::regex("app;dur=([0-9.]+)")) ? std::stod(m[1]) : -1;
}

class daemon_process {
public:
  explicit daemon_process(int port) : dir_("console-bench") {
    ::chmod(dir_.path().c_str(), 0711);
    data_ = dir_.path() + "/data";
    const std::string console = "127.0.0.1:" + std::to_string(port);
    pid_ = ::fork();
    if (pid_ == 0) {
      const int log = ::open((dir_.path() + "/sandboxd.log").c_str(), O_WRONLY | O_CREAT, 0644);
      ::dup2(log, 1);
      ::dup2(log, 2);
      ::execl(SANDBOXD_BIN, SANDBOXD_BIN, "--data-dir", data_.c_str(), "--runtime", "hollow",
              "--console-addr", console.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    guardian_ = std::make_unique<test::guardian>(
      "kill -9 " + std::to_string(pid_) + " 2>/dev/null; rm -rf " + test::shell_quote(dir_.path()));
    const auto until = steady::now() + std::chrono::minutes(3);
    while (read_text(dir_.path() + "/sandboxd.log").find("sandboxd ready") == std::string::npos) {
      if (steady::now() > until || ::waitpid(pid_, nullptr, WNOHANG) == pid_)
        throw std::runtime_error("sandboxd did not start:\n" +
                                 read_text(dir_.path() + "/sandboxd.log"));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    token_ = read_text(data_ + "/dev-token");
    while (!token_.empty() && token_.back() == '\n')
      token_.pop_back();
  }
  ~daemon_process() {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
    if (!keep_log.empty())
      std::ofstream(keep_log) << read_text(dir_.path() + "/sandboxd.log");
    guardian_.reset();
  }
  std::string keep_log; // where the daemon's log is copied at the end (--log)
  std::string address() const { return "unix:" + data_ + "/sandboxd.sock"; }
  const std::string& token() const { return token_; }
  std::string pg_conninfo() const {
    return "host=" + data_ + "/postgres/sock port=5432 user=postgres dbname=sandboxd";
  }

private:
  test::temp_dir dir_;
  std::string data_, token_;
  pid_t pid_ = -1;
  std::unique_ptr<test::guardian> guardian_;
};

} // namespace

int main(int argc, char** argv) {
  bool as_json = false;
  int sandboxes = 10'000, events = 5'000, samples = 20;
  std::string log_copy;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json")
      as_json = true;
    else if (a == "--sandboxes" && i + 1 < argc)
      sandboxes = std::max(100, std::atoi(argv[++i]));
    else if (a == "--events" && i + 1 < argc)
      events = std::max(10, std::atoi(argv[++i]));
    else if (a == "--samples" && i + 1 < argc)
      samples = std::max(3, std::atoi(argv[++i]));
    else if (a == "--log" && i + 1 < argc)
      log_copy = argv[++i];
    else {
      std::fprintf(stderr, "usage: console_bench [--json] [--sandboxes N] [--events E] "
                           "[--samples S] [--log FILE]\n");
      return 2;
    }
  }
  if (auto why = test::chromium_unavailable()) {
    std::fprintf(stderr, "console_bench: %s\n", why->c_str());
    return 1;
  }
  const int port = test::free_port();
  daemon_process d(port);
  d.keep_log = log_copy;

  // The sandboxes and the big sandbox's events, eight clients at once.
  const auto t0 = steady::now();
  std::string big;
  {
    auto c = api::client::connect({d.address(), d.token()});
    if (!c)
      return std::fprintf(stderr, "console_bench: %s\n", c.err().message.c_str()), 1;
    auto sb = c->create({});
    if (!sb)
      return std::fprintf(stderr, "console_bench: create: %s\n", sb.err().message.c_str()), 1;
    big = sb->id;
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t)
    clients.emplace_back([&, t] {
      auto c = api::client::connect({d.address(), d.token()});
      if (!c) {
        ++failures;
        return;
      }
      for (int i = t; i < sandboxes - 1; i += 8)
        failures += !c->create({}).ok();
      for (int i = t; i < events; i += 8)
        failures += !c->stat(big, "/").ok();
    });
  for (auto& t : clients)
    t.join();
  if (failures)
    return std::fprintf(stderr, "console_bench: %d calls failed\n", failures.load()), 1;
  const double made_s = ms_since(t0) / 1000;

  httplib::Client http("127.0.0.1", port);
  auto login = http.Post("/api/login", json{{"token", d.token()}}.dump(), "application/json");
  if (!login || login->status != 200)
    return std::fprintf(stderr, "console_bench: sign-in failed\n"), 1;
  const auto set = login->get_header_value("Set-Cookie");
  const httplib::Headers cookie{{"Cookie", set.substr(0, set.find(';'))}};
  // The projector catches up: the list's first page is full and its count is all.
  std::size_t listed = 0;
  for (int i = 0; i < 600; ++i) {
    auto r = http.Get("/api/node", cookie);
    bool caught_up = r && r->status == 200;
    if (caught_up)
      for (const auto& p : json::parse(r->body)["projections"])
        caught_up = caught_up && p["lag_events"] == 0;
    if (caught_up)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::vector<double> list_server, list_wall, session_server, cold_server;
  const auto sample_list = [&](std::vector<double>& server, std::vector<double>* wall) {
    for (int i = 0; i < samples; ++i) {
      auto t = steady::now();
      auto r = http.Get("/api/sandboxes", cookie);
      if (wall)
        wall->push_back(ms_since(t));
      if (!r || r->status != 200)
        return false;
      listed = json::parse(r->body)["sandboxes"].size();
      server.push_back(server_ms(r));
      session_server.push_back(server_ms(http.Get("/api/session", cookie)));
    }
    return true;
  };
  // Right after the sandboxes were made the table has no statistics yet, and PostgreSQL plans
  // the list as a scan of the tenant's rows and a sort; once autovacuum has analyzed it (within
  // its naptime, a minute by default), as a walk of the (tenant, created_at, id) index.
  if (!sample_list(cold_server, nullptr))
    return std::fprintf(stderr, "console_bench: list failed\n"), 1;
  const auto analyzed_at = steady::now();
  bool analyzed = false;
  {
    pqxx::connection pg(d.pg_conninfo());
    for (int i = 0; i < 1800 && !analyzed; ++i) {
      pqxx::nontransaction tx(pg);
      analyzed = !tx.exec("SELECT 1 FROM pg_stat_user_tables WHERE relname = 'sandboxes' AND "
                          "(last_autoanalyze IS NOT NULL OR last_analyze IS NOT NULL)")
                    .empty();
      if (!analyzed)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  const double analyze_wait_s = ms_since(analyzed_at) / 1000;
  if (!sample_list(list_server, &list_wall))
    return std::fprintf(stderr, "console_bench: list failed\n"), 1;

  test::cdp_browser browser;
  auto page = browser.new_page();
  page->navigate("http://127.0.0.1:" + std::to_string(port) + "/");
  page->wait_for("document.querySelector('#token')", "the sign-in page");
  page->type("#token", d.token());
  page->click("#signin");
  page->wait_for("document.querySelector('#sandbox-rows tr[data-id]')", "the list");
  std::vector<double> render, fetch, timeline_server, list_part, draw_part, layout_part;
  int shown = 0;
  for (int i = 0; i < std::max(3, samples / 4); ++i) {
    page->navigate("http://127.0.0.1:" + std::to_string(port) + "/#/sandboxes/" + big +
                   "?x=" + std::to_string(i));
    auto t = page->wait_for("document.querySelector('main').dataset.rendered === 'timeline' && "
                            "window.sandboxdTimings && window.sandboxdTimings.timeline",
                            "the timeline", std::chrono::seconds(120));
    render.push_back(t["render_ms"].get<double>());
    fetch.push_back(t["fetch_ms"].get<double>());
    timeline_server.push_back(t["server_ms"].get<double>());
    list_part.push_back(t["list_ms"].get<double>());
    draw_part.push_back(t["draw_ms"].get<double>());
    layout_part.push_back(t["layout_ms"].get<double>());
    shown = t["events"].get<int>();
    page->eval("delete window.sandboxdTimings");
  }

  std::printf("console_bench: %d sandboxes, a sandbox of %d events (made in %.1f s); "
              "sandboxd: hollow runtime, embedded log and PostgreSQL\n",
              sandboxes, shown, made_s);
  std::printf("  list_first_page_ms     %7.2f  server-side, median of %d (%zu rows; wall on "
              "loopback %.2f; target <= 100), once autovacuum analyzed the table%s\n",
              median(list_server), samples, listed, median(list_wall),
              analyzed ? "" : " (it had not after 3 minutes)");
  std::printf("  list_cold_ms           %7.2f  the same right after the sandboxes were made, "
              "before (%.0f s before autovacuum analyzed it)\n",
              median(cold_server), analyze_wait_s);
  std::printf("  session_ms (reference) %7.2f  server-side: a request that reads nothing\n",
              median(session_server));
  std::printf("  timeline_render_ms     %7.1f  in Chromium, median of %zu (JSON: server %.1f, "
              "fetch %.1f; target <= 1000)\n",
              median(render), render.size(), median(timeline_server), median(fetch));
  std::printf("    of which: the event list %.1f, the SVG %.1f, layout and paint %.1f\n",
              median(list_part), median(draw_part), median(layout_part));
  if (as_json)
    std::printf("{\"sandboxes\":%d,\"events\":%d,\"list_first_page_ms\":%.3f,"
                "\"list_cold_ms\":%.3f,\"analyzed\":%s,"
                "\"list_wall_ms\":%.3f,\"session_ms\":%.3f,\"timeline_render_ms\":%.1f,"
                "\"timeline_server_ms\":%.1f,\"timeline_fetch_ms\":%.1f}\n",
                sandboxes, shown, median(list_server), median(cold_server),
                analyzed ? "true" : "false", median(list_wall), median(session_server),
                median(render), median(timeline_server), median(fetch));
  return 0;
}
