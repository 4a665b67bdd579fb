// progress — the progress bar of cp-in and cp-out, on stderr, only when stderr is a terminal
// and the file is large (at least k_progress_min_bytes); otherwise it prints nothing, so
// scripts and logs never see it. Redrawn at most every 100 ms, in place ('\r'), and
// cleared when done.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace sandboxd::cli {

inline constexpr std::uint64_t k_progress_min_bytes = 8u << 20;

// One frame: "[#######.............]  37%  12.0 MiB / 32.0 MiB  4.1 MiB/s". `total` 0 (not
// known) shows the bytes only. `width` is the bar's, between the brackets.
std::string render_progress(std::uint64_t done, std::uint64_t total, double seconds,
                            int width = 30);

class progress_bar {
public:
  // Shown when `enabled` (the caller's "stderr is a terminal") and `total` is large; the
  // label (a path) as terminal_text.
  progress_bar(std::string label, std::uint64_t total, bool enabled);
  ~progress_bar();
  progress_bar(const progress_bar&) = delete;
  progress_bar& operator=(const progress_bar&) = delete;

  void add(std::uint64_t bytes);
  void finish(); // clears the line

  bool shown() const { return enabled_; }
  // stderr is a terminal.
  static bool stderr_is_terminal();

private:
  void draw();

  std::string label_;
  std::uint64_t total_;
  std::uint64_t done_ = 0;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_{};
};

} // namespace sandboxd::cli
