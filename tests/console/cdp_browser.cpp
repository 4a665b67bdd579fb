#include "tests/console/cdp_browser.hpp"

#include "tests/support/process.hpp"

#include <openssl/evp.h>

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

namespace sandboxd::test {
namespace {

constexpr const char* k_chromium = "/usr/bin/chromium";

std::string base64_decode(const std::string& in) {
  std::string out(in.size() / 4 * 3 + 3, '\0');
  const int n =
    EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                    reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  if (n < 0)
    throw std::runtime_error("a screenshot is not base64");
  std::size_t len = static_cast<std::size_t>(n);
  // EVP_DecodeBlock counts the padding's zero bytes.
  if (in.size() >= 1 && in[in.size() - 1] == '=')
    --len;
  if (in.size() >= 2 && in[in.size() - 2] == '=')
    --len;
  out.resize(len);
  return out;
}

std::string quoted(const std::string& s) {
  return cdp_json(s).dump();
}

} // namespace

std::optional<std::string> chromium_unavailable() {
  if (::access(k_chromium, X_OK) != 0)
    return std::string("Debian's chromium is not installed (/usr/bin/chromium); scripts/setup "
                       "installs it");
  return std::nullopt;
}

cdp_browser::cdp_browser(std::vector<std::string> extra_flags) : dir_("browser") {
  const std::string q = shell_quote(dir_.path());
  guardian_ = std::make_unique<guardian>(
    "d=" + q +
    "; for p in /proc/[0-9]*; do case \"$(readlink $p/cwd)\" in \"$d\"|\"$d\"/*) kill -9 "
    "${p#/proc/} 2>/dev/null;; esac; done; rm -rf \"$d\"");
  std::vector<std::string> args{k_chromium,
                                "--headless",
                                "--no-sandbox",
                                "--disable-gpu",
                                "--disable-quic",
                                "--no-first-run",
                                "--no-default-browser-check",
                                "--disable-background-networking",
                                "--disable-component-update",
                                "--disable-sync",
                                "--disable-extensions",
                                "--disable-features=Translate,MediaRouter,OptimizationHints",
                                "--mute-audio",
                                "--hide-scrollbars",
                                "--remote-debugging-pipe",
                                "--user-data-dir=" + dir_.path() + "/profile",
                                "about:blank"};
  args.insert(args.end() - 1, extra_flags.begin(), extra_flags.end());
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0)
    throw std::system_error(errno, std::generic_category(), "pipe2 for chromium");
  const std::string log_path = dir_.path() + "/chromium.log";
  const std::string cwd = dir_.path();
  pid_ = ::fork();
  if (pid_ == 0) {
    const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (log < 0 || ::chdir(cwd.c_str()) != 0)
      ::_exit(126);
    ::dup2(log, 1);
    ::dup2(log, 2);
    // fd 3: what the browser reads; fd 4: what it writes. Move the pipe ends out of the way
    // first so that dup2 onto 3 and 4 cannot close one of them.
    const int r = ::fcntl(in[0], F_DUPFD_CLOEXEC, 10), w = ::fcntl(out[1], F_DUPFD_CLOEXEC, 10);
    ::dup2(r, 3);
    ::dup2(w, 4);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  if (pid_ < 0)
    throw std::system_error(errno, std::generic_category(), "fork for chromium");
  ::close(in[0]);
  ::close(out[1]);
  to_browser_ = in[1];
  from_browser_ = out[0];
  reader_ = std::thread([this] { reader(); });
  // The browser answers once it is up.
  call("Browser.getVersion", cdp_json::object(), "", std::chrono::seconds(60));
}

cdp_browser::~cdp_browser() {
  try {
    if (!closed_)
      call("Browser.close", cdp_json::object(), "", std::chrono::seconds(5));
  } catch (...) {
  }
  int status = 0;
  for (int i = 0; i < 100 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i)
    ::usleep(50'000);
  if (::waitpid(pid_, &status, WNOHANG) == 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
  }
  ::close(to_browser_);
  if (reader_.joinable())
    reader_.join();
  ::close(from_browser_);
  guardian_.reset(); // its helpers too, then the profile
}

std::string cdp_browser::log() const {
  std::ifstream in(dir_.path() + "/chromium.log");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return s.size() > 4000 ? s.substr(s.size() - 4000) : s;
}

void cdp_browser::reader() {
  std::string buf;
  char chunk[65536];
  for (;;) {
    const ssize_t n = ::read(from_browser_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    buf.append(chunk, static_cast<std::size_t>(n));
    std::size_t at;
    while ((at = buf.find('\0')) != std::string::npos) {
      auto msg = cdp_json::parse(buf.substr(0, at), nullptr, false);
      buf.erase(0, at + 1);
      if (msg.is_discarded() || !msg.is_object())
        continue;
      if (msg.contains("id") && msg["id"].is_number_unsigned()) {
        const auto id = msg["id"].get<std::uint64_t>();
        std::lock_guard l(mu_);
        answers_[id] = std::move(msg);
        cv_.notify_all();
      } else {
        note_event(msg);
      }
    }
  }
  std::lock_guard l(mu_);
  closed_ = true;
  cv_.notify_all();
}

void cdp_browser::note_event(const cdp_json& msg) {
  const std::string method = msg.value("method", "");
  const std::string session = msg.value("sessionId", "");
  const cdp_json p = msg.value("params", cdp_json::object());
  const auto field = [](const cdp_json& o, const char* k) {
    return o.is_object() && o.contains(k) && o[k].is_string() ? o[k].get<std::string>()
                                                              : std::string();
  };
  std::string problem;
  if (method == "Runtime.exceptionThrown") {
    const cdp_json d = p.value("exceptionDetails", cdp_json::object());
    problem = "exception: " + field(d, "text") + " " +
              field(d.value("exception", cdp_json::object()), "description");
  } else if (method == "Log.entryAdded") {
    const cdp_json e = p.value("entry", cdp_json::object());
    if (field(e, "level") == "error")
      problem = "log: " + field(e, "text") + " (" + field(e, "url") + ")";
  } else if (method == "Runtime.consoleAPICalled" && field(p, "type") == "error") {
    problem = "console.error: " + p.value("args", cdp_json::array()).dump();
  }
  if (problem.empty())
    return;
  std::lock_guard l(mu_);
  problems_[session].push_back(std::move(problem));
}

std::vector<std::string> cdp_browser::take_problems(const std::string& session) {
  std::lock_guard l(mu_);
  auto out = std::move(problems_[session]);
  problems_[session].clear();
  return out;
}

cdp_json cdp_browser::call(const std::string& method, cdp_json params, const std::string& session,
                           std::chrono::milliseconds timeout) {
  std::uint64_t id;
  {
    std::lock_guard l(mu_);
    id = ++next_id_;
  }
  cdp_json msg{{"id", id}, {"method", method}, {"params", std::move(params)}};
  if (!session.empty())
    msg["sessionId"] = session;
  std::string bytes = msg.dump();
  bytes.push_back('\0');
  {
    std::lock_guard l(write_mu_);
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(to_browser_, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        throw std::runtime_error("chromium is gone (" + method + "): " + log());
      done += static_cast<std::size_t>(n);
    }
  }
  std::unique_lock l(mu_);
  if (!cv_.wait_for(l, timeout, [&] { return answers_.count(id) > 0 || closed_; }))
    throw std::runtime_error("chromium did not answer " + method + " in time");
  if (!answers_.count(id))
    throw std::runtime_error("chromium ended before answering " + method + ": " + log());
  auto answer = std::move(answers_[id]);
  answers_.erase(id);
  if (answer.contains("error"))
    throw std::runtime_error("chromium: " + method + ": " + answer["error"].dump());
  return answer.value("result", cdp_json::object());
}

std::unique_ptr<cdp_page> cdp_browser::new_page(int width, int height) {
  // Each page in a browser context of its own: its own cookies, as a separate person's.
  auto context =
    call("Target.createBrowserContext", {{"disposeOnDetach", true}})["browserContextId"]
      .get<std::string>();
  auto target =
    call("Target.createTarget", {{"url", "about:blank"}, {"browserContextId", context}})["targetId"]
      .get<std::string>();
  auto session =
    call("Target.attachToTarget", {{"targetId", target}, {"flatten", true}})["sessionId"]
      .get<std::string>();
  std::unique_ptr<cdp_page> p(new cdp_page(*this, target, session));
  p->context_ = context;
  p->call("Page.enable");
  p->call("Runtime.enable");
  p->call("Log.enable");
  p->call("Network.enable");
  p->call("Emulation.setDeviceMetricsOverride",
          {{"width", width}, {"height", height}, {"deviceScaleFactor", 1}, {"mobile", false}});
  return p;
}

cdp_page::cdp_page(cdp_browser& b, std::string target, std::string session)
    : b_(b), target_(std::move(target)), session_(std::move(session)) {}

cdp_page::~cdp_page() {
  try {
    b_.call("Target.closeTarget", {{"targetId", target_}}, "", std::chrono::seconds(5));
    b_.call("Target.disposeBrowserContext", {{"browserContextId", context_}}, "",
            std::chrono::seconds(5));
  } catch (...) {
  }
}

cdp_json cdp_page::call(const std::string& method, cdp_json params) {
  return b_.call(method, std::move(params), session_);
}

std::vector<std::string> cdp_page::take_problems() {
  return b_.take_problems(session_);
}

void cdp_page::navigate(const std::string& url) {
  auto r = call("Page.navigate", {{"url", url}});
  if (r.contains("errorText"))
    throw std::runtime_error("navigating to " + url + ": " + r["errorText"].dump());
  wait_for("document.readyState === 'complete' && location.href !== 'about:blank'",
           "the page " + url + " to load");
}

cdp_json cdp_page::eval(const std::string& expression) {
  auto r = call("Runtime.evaluate", {{"expression", expression},
                                     {"awaitPromise", true},
                                     {"returnByValue", true},
                                     {"userGesture", true}});
  if (r.contains("exceptionDetails")) {
    const auto& d = r["exceptionDetails"];
    throw std::runtime_error(
      "the page threw evaluating " + expression.substr(0, 200) + ": " +
      (d.contains("exception") ? d["exception"].value("description", d.dump()) : d.dump()));
  }
  return r["result"].value("value", cdp_json());
}

cdp_json cdp_page::wait_for(const std::string& expression, const std::string& what,
                            std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  std::string last;
  for (;;) {
    try {
      auto v = eval(expression);
      if (!v.is_null() && v != false && v != 0 && v != "")
        return v;
    } catch (const std::exception& e) {
      last = e.what(); // the page may be between documents
    }
    if (std::chrono::steady_clock::now() > until)
      throw std::runtime_error("waited " + std::to_string(timeout.count()) + " ms for " + what +
                               (last.empty() ? "" : " (last: " + last + ")"));
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
  }
}

void cdp_page::click_at(double x, double y) {
  for (const char* type : {"mouseMoved", "mousePressed", "mouseReleased"})
    call("Input.dispatchMouseEvent", {{"type", type},
                                      {"x", x},
                                      {"y", y},
                                      {"button", "left"},
                                      {"buttons", std::string(type) == "mousePressed" ? 1 : 0},
                                      {"clickCount", 1}});
}

void cdp_page::click(const std::string& selector) {
  auto box = wait_for("(() => { const e = document.querySelector(" + quoted(selector) +
                        "); if (!e) return null; e.scrollIntoView({block: 'center', inline: "
                        "'center'}); const r = e.getBoundingClientRect(); return r.width > 0 ? "
                        "{x: r.left + r.width / 2, y: r.top + r.height / 2} : null; })()",
                      "an element " + selector + " to click");
  click_at(box["x"].get<double>(), box["y"].get<double>());
}

void cdp_page::type(const std::string& selector, const std::string& text) {
  wait_for("(() => { const e = document.querySelector(" + quoted(selector) +
             "); if (!e) return false; e.focus(); e.value = ''; return true; })()",
           "an input " + selector);
  call("Input.insertText", {{"text", text}});
}

void cdp_page::screenshot(const std::string& path) {
  auto metrics = call("Page.getLayoutMetrics");
  const auto& size = metrics["cssContentSize"];
  auto shot =
    call("Page.captureScreenshot", {{"format", "png"},
                                    {"captureBeyondViewport", true},
                                    {"clip",
                                     {{"x", 0},
                                      {"y", 0},
                                      {"width", size["width"]},
                                      {"height", std::min(size["height"].get<double>(), 4000.0)},
                                      {"scale", 1}}}});
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << base64_decode(shot["data"].get<std::string>());
}

cdp_json cdp_page::cookies() {
  return call("Network.getCookies")["cookies"];
}

} // namespace sandboxd::test
