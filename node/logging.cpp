#include "node/logging.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <ctime>

namespace sandboxd::node {
namespace {

// Appends `s` as the inside of a JSON string.
void append_json(std::string& out, std::string_view s) {
  static const char* hex = "0123456789abcdef";
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 15];
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else {
      // A UTF-8 sequence: copied when well formed, else one U+FFFD for the bad byte.
      const std::size_t len = c >= 0xf0 && c <= 0xf4  ? 4
                              : c >= 0xe0             ? 3
                              : c >= 0xc2 && c < 0xe0 ? 2
                                                      : 0;
      bool ok = len > 0 && i + len <= s.size();
      for (std::size_t k = 1; ok && k < len; ++k)
        ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
      if (ok && len == 3) {
        const auto c1 = static_cast<unsigned char>(s[i + 1]);
        ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0); // overlong, surrogates
      } else if (ok && len == 4) {
        const auto c1 = static_cast<unsigned char>(s[i + 1]);
        ok = !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
      }
      if (ok) {
        out.append(s.substr(i, len));
        i += len;
      } else {
        out += "\xef\xbf\xbd";
        ++i;
      }
    }
  }
}

std::string utc_time(spdlog::log_clock::time_point t) {
  const auto secs = std::chrono::time_point_cast<std::chrono::seconds>(t);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - secs).count();
  const std::time_t tt = spdlog::log_clock::to_time_t(t);
  std::tm tm{};
  ::gmtime_r(&tt, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

class line_formatter final : public spdlog::formatter {
public:
  explicit line_formatter(log_format f) : format_(f) {}
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const auto level = spdlog::level::to_string_view(msg.level);
    const std::string_view level_text(level.data(), level.size());
    const std::string_view text(msg.payload.data(), msg.payload.size());
    std::string line;
    if (format_ == log_format::json) {
      line = json_log_line(utc_time(msg.time), level_text, text);
    } else {
      line = utc_time(msg.time) + " " + std::string(level_text);
      line.append(level_text.size() < 5 ? 5 - level_text.size() + 1 : 1, ' ');
      line.append(text);
    }
    line += '\n';
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<line_formatter>(format_);
  }

private:
  log_format format_;
};

} // namespace

std::string json_log_line(std::string_view time, std::string_view level, std::string_view message) {
  std::string out = "{\"time\":\"";
  append_json(out, time);
  out += "\",\"level\":\"";
  append_json(out, level);
  out += "\",\"message\":\"";
  append_json(out, message);
  out += "\"}";
  return out;
}

void configure_logging(log_format format, const std::string& level) {
  auto logger =
    std::make_shared<spdlog::logger>("sandboxd", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_formatter(std::make_unique<line_formatter>(format));
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
}

} // namespace sandboxd::node
