#include "cli/value_args.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <csignal>

namespace sandboxd::cli {
namespace {

struct named_signal {
  std::string_view name; // without "SIG"
  int number;
};

constexpr std::array<named_signal, 19> k_signals{{
  {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"ILL", SIGILL},     {"ABRT", SIGABRT},
  {"FPE", SIGFPE},   {"KILL", SIGKILL}, {"SEGV", SIGSEGV}, {"PIPE", SIGPIPE},   {"ALRM", SIGALRM},
  {"TERM", SIGTERM}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"CHLD", SIGCHLD},   {"CONT", SIGCONT},
  {"STOP", SIGSTOP}, {"TSTP", SIGTSTP}, {"BUS", SIGBUS},   {"WINCH", SIGWINCH},
}};

error invalid(std::string message) {
  return make_error(errc::invalid_argument, std::move(message));
}

template <class T>
bool whole_number(std::string_view s, T& out, int base = 10) {
  if (s.empty())
    return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return ec == std::errc() && p == s.data() + s.size();
}

} // namespace

result<std::pair<std::string, std::string>> parse_pair(std::string_view text,
                                                       std::string_view what) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0)
    return invalid(std::string(what) + " '" + std::string(text) +
                   "' is not KEY=VALUE; write it like " + std::string(what) + " team=search");
  return std::pair{std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
}

result<int> parse_signal(std::string_view text) {
  int n = 0;
  if (whole_number(text, n)) {
    if (n >= 1 && n <= 64)
      return n;
  } else {
    std::string upper;
    for (char c : text)
      upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    std::string_view name = upper;
    if (name.substr(0, 3) == "SIG")
      name.remove_prefix(3);
    for (const auto& s : k_signals)
      if (s.name == name)
        return s.number;
  }
  return invalid("'" + std::string(text) +
                 "' is not a signal; use a name (TERM, KILL, INT, HUP, ...) or a number 1-64");
}

std::string signal_name(int signal) {
  for (const auto& s : k_signals)
    if (s.number == signal)
      return "SIG" + std::string(s.name);
  return "signal " + std::to_string(signal);
}

result<std::uint32_t> parse_mode(std::string_view text) {
  std::string_view digits = text;
  if (digits.substr(0, 2) == "0o")
    digits.remove_prefix(2);
  std::uint32_t mode = 0;
  if (!whole_number(digits, mode, 8) || mode > 07777)
    return invalid("'" + std::string(text) +
                   "' is not a file mode; write octal permission bits like 644 or 0755");
  return mode;
}

std::string format_mode(std::uint32_t mode) {
  std::string s = "rwxrwxrwx";
  for (int i = 0; i < 9; ++i)
    if (!(mode & (0400u >> i)))
      s[static_cast<std::size_t>(i)] = '-';
  if (mode & 04000)
    s[2] = (mode & 0100) ? 's' : 'S';
  if (mode & 02000)
    s[5] = (mode & 0010) ? 's' : 'S';
  if (mode & 01000)
    s[8] = (mode & 0001) ? 't' : 'T';
  return s;
}

result<std::pair<std::int32_t, std::int64_t>> parse_partition_offset(std::string_view text) {
  const auto colon = text.find(':');
  std::int32_t p = 0;
  std::int64_t o = 0;
  if (colon == std::string_view::npos || !whole_number(text.substr(0, colon), p) ||
      !whole_number(text.substr(colon + 1), o) || p < 0 || o < 0)
    return invalid("'" + std::string(text) +
                   "' is not PARTITION:OFFSET; write it like 3:1200 (as --json events print "
                   "partition and offset)");
  return std::pair{p, o};
}

result<events::network_policy> network_flags(std::string_view mode,
                                             const std::vector<std::string>& allow) {
  events::network_policy p;
  if (mode.empty())
    p.mode = allow.empty() ? events::network_mode::none : events::network_mode::allow_list;
  else if (mode == "none")
    p.mode = events::network_mode::none;
  else if (mode == "allowlist")
    p.mode = events::network_mode::allow_list;
  else if (mode == "all")
    p.mode = events::network_mode::full;
  else
    return make_error(errc::invalid_argument, "--network '" + std::string(mode) +
                                                "' is not a mode; use none, allowlist or all");
  if (p.mode == events::network_mode::none && !allow.empty())
    return make_error(errc::invalid_argument,
                      "--allow with --network none allows nothing; drop --network none");
  p.allowed_hosts = allow;
  return p;
}

result<std::uint32_t> parse_cpus(std::string_view text) {
  // Whole and fractional parts, to millicores, without floating point.
  const auto dot = text.find('.');
  const auto whole = text.substr(0, dot);
  const auto frac = dot == std::string_view::npos ? std::string_view{} : text.substr(dot + 1);
  std::uint32_t w = 0, f = 0;
  const bool ok = (whole.empty() || whole_number(whole, w)) &&
                  (dot == std::string_view::npos ||
                   (!frac.empty() && frac.size() <= 3 && whole_number(frac, f))) &&
                  !(whole.empty() && frac.empty()) && w <= 4'000'000;
  if (ok) {
    for (std::size_t n = frac.size(); n < 3; ++n)
      f *= 10;
    const std::uint32_t milli = w * 1000 + f;
    if (milli > 0)
      return milli;
  }
  return invalid("'" + std::string(text) +
                 "' is not a CPU count; write a number like 2 or 0.5 (at most 3 decimals)");
}

result<events::pause_mode> parse_pause_mode(std::string_view text) {
  if (text == "filesystem")
    return events::pause_mode::filesystem;
  if (text == "memory")
    return events::pause_mode::memory;
  return invalid("'" + std::string(text) +
                 "' is not a pause mode; use filesystem (processes end, files kept) or memory "
                 "(processes kept)");
}

} // namespace sandboxd::cli
