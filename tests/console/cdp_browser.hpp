// cdp_browser — a real browser for the console's tests: Debian's headless Chromium driven by
// the Chrome DevTools Protocol over --remote-debugging-pipe (JSON messages, NUL-terminated, on
// file descriptors 3 and 4), with no port, no websocket library and no browser download.
//
// One browser process per test binary (it takes a second to start); each page is a target
// with its own session, in a browser context of its own (its own cookies). Clicks and typing
// go through the browser's input pipeline (Input.dispatchMouseEvent / insertText), so they
// hit what a person's click would hit.
// Everything the page reports — uncaught exceptions, console errors, CSP violations — is
// kept, so a test can assert that nothing went wrong.
//
// The browser runs with its working directory and profile in a temp_dir that a guardian
// cleans whatever happens: every process whose working directory is there is killed and the
// directory removed, even when the test binary is killed.
#pragma once

#include "tests/support/guardian.hpp"
#include "tests/support/temp_dir.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace sandboxd::test {

using cdp_json = nlohmann::json;

// Why Chromium cannot run here (not installed), or nothing.
std::optional<std::string> chromium_unavailable();

class cdp_browser;

class cdp_page {
public:
  // Navigates and waits for the load event's state (document.readyState == "complete").
  void navigate(const std::string& url);
  // Evaluates `expression` (awaiting a promise) and returns its value; throws
  // std::runtime_error with the page's exception text when it throws.
  cdp_json eval(const std::string& expression);
  // Polls `expression` until it is truthy; throws naming `what` after `timeout`.
  cdp_json wait_for(const std::string& expression, const std::string& what,
                    std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // A real click at the centre of the first element matching `selector` (scrolled into view).
  void click(const std::string& selector);
  // A real click at page coordinates.
  void click_at(double x, double y);
  // Focuses `selector`, clears it, and types `text`.
  void type(const std::string& selector, const std::string& text);
  // The whole page as a PNG file.
  void screenshot(const std::string& path);
  // The browser's cookies for the page's URL (Network.getCookies): name, value, httpOnly,
  // secure, sameSite, ...
  cdp_json cookies();
  // A protocol call in this page's session.
  cdp_json call(const std::string& method, cdp_json params = cdp_json::object());
  // What the page reported since the last call: exceptions, console errors, CSP violations.
  std::vector<std::string> take_problems();

  ~cdp_page();

private:
  friend class cdp_browser;
  cdp_page(cdp_browser& b, std::string target, std::string session);
  cdp_browser& b_;
  std::string target_;
  std::string session_;
  std::string context_; // its own browser context: cookies apart from other pages'
};

class cdp_browser {
public:
  // Starts Chromium (precondition: chromium_unavailable() is empty). `extra_flags` are
  // added to the command line (--ignore-certificate-errors for a test certificate).
  explicit cdp_browser(std::vector<std::string> extra_flags = {});
  ~cdp_browser();
  cdp_browser(const cdp_browser&) = delete;
  cdp_browser& operator=(const cdp_browser&) = delete;

  // A new page (tab) of `width` x `height` CSS pixels.
  std::unique_ptr<cdp_page> new_page(int width = 1400, int height = 900);

  // A protocol call; `session` empty for the browser itself. Throws on an error answer or
  // after `timeout`.
  cdp_json call(const std::string& method, cdp_json params, const std::string& session = "",
                std::chrono::milliseconds timeout = std::chrono::seconds(30));

  // The log of the browser process (its stderr), for failure messages.
  std::string log() const;

private:
  friend class cdp_page;
  void reader();
  void note_event(const cdp_json& msg);
  std::vector<std::string> take_problems(const std::string& session);

  temp_dir dir_;
  std::unique_ptr<guardian> guardian_;
  pid_t pid_ = -1;
  int to_browser_ = -1;
  int from_browser_ = -1;
  std::thread reader_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t next_id_ = 0;
  std::map<std::uint64_t, cdp_json> answers_;
  std::map<std::string, std::vector<std::string>> problems_; // by session
  bool closed_ = false;
  std::mutex write_mu_;
};

} // namespace sandboxd::test
