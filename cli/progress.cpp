#include "cli/progress.hpp"

#include "cli/table.hpp"
#include "cli/terminal_text.hpp"

#include <algorithm>
#include <cstdio>
#include <unistd.h>

namespace sandboxd::cli {

std::string render_progress(std::uint64_t done, std::uint64_t total, double seconds, int width) {
  std::string out;
  if (total > 0) {
    const double f = std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
    const int filled = static_cast<int>(f * width);
    out = "[" + std::string(static_cast<std::size_t>(filled), '#') +
          std::string(static_cast<std::size_t>(width - filled), '.') + "]";
    char pct[16];
    std::snprintf(pct, sizeof pct, " %3d%%", static_cast<int>(f * 100));
    out += pct;
    out += "  " + human_bytes(done) + " / " + human_bytes(total);
  } else {
    out = human_bytes(done);
  }
  if (seconds > 0)
    out +=
      "  " + human_bytes(static_cast<std::uint64_t>(static_cast<double>(done) / seconds)) + "/s";
  return out;
}

bool progress_bar::stderr_is_terminal() {
  return ::isatty(2) == 1;
}

progress_bar::progress_bar(std::string label, std::uint64_t total, bool enabled)
    : label_(terminal_text(label)), total_(total),
      enabled_(enabled && total >= k_progress_min_bytes) {}

progress_bar::~progress_bar() {
  finish();
}

void progress_bar::add(std::uint64_t bytes) {
  done_ += bytes;
  if (!enabled_)
    return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_ < std::chrono::milliseconds(100) && done_ < total_)
    return;
  last_ = now;
  draw();
}

void progress_bar::draw() {
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::string line = "\r" + label_ + "  " + render_progress(done_, total_, s) + "\033[K";
  [[maybe_unused]] auto n = ::write(2, line.data(), line.size());
  drawn_ = true;
}

void progress_bar::finish() {
  if (enabled_ && drawn_) {
    static constexpr char clear[] = "\r\033[K";
    [[maybe_unused]] auto n = ::write(2, clear, sizeof clear - 1);
  }
  drawn_ = false;
  enabled_ = false;
}

} // namespace sandboxd::cli
