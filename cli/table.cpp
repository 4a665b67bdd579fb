#include "cli/table.hpp"

#include "cli/terminal_text.hpp"

#include <algorithm>
#include <cstdio>

namespace sandboxd::cli {
namespace {

// Display width: code points, not bytes (labels and paths may be UTF-8).
std::size_t width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80)
      ++n;
  return n;
}

row escaped(const row& r) {
  row out;
  out.reserve(r.size());
  for (const auto& cell : r)
    out.push_back(terminal_text(cell));
  return out;
}

} // namespace

std::string render_table(const row& raw_header, const std::vector<row>& raw_rows) {
  const row header = escaped(raw_header);
  std::vector<row> rows;
  rows.reserve(raw_rows.size());
  for (const auto& r : raw_rows)
    rows.push_back(escaped(r));
  std::vector<std::size_t> widths(header.size(), 0);
  auto measure = [&](const row& r) {
    for (std::size_t i = 0; i < r.size() && i < widths.size(); ++i)
      widths[i] = std::max(widths[i], width(r[i]));
  };
  measure(header);
  for (const auto& r : rows)
    measure(r);
  std::string out;
  auto line = [&](const row& r) {
    std::string l;
    for (std::size_t i = 0; i < widths.size(); ++i) {
      const std::string cell = i < r.size() ? r[i] : "";
      l += cell;
      if (i + 1 < widths.size())
        l += std::string(widths[i] - width(cell) + 2, ' ');
    }
    while (!l.empty() && l.back() == ' ')
      l.pop_back();
    out += l + "\n";
  };
  line(header);
  for (const auto& r : rows)
    line(r);
  return out;
}

std::string render_fields(const std::vector<std::pair<std::string, std::string>>& raw_fields) {
  std::vector<std::pair<std::string, std::string>> fields;
  fields.reserve(raw_fields.size());
  for (const auto& [k, v] : raw_fields)
    fields.emplace_back(terminal_text(k), terminal_text(v));
  std::size_t w = 0;
  for (const auto& [k, v] : fields)
    w = std::max(w, width(k) + 1);
  std::string out;
  for (const auto& [k, v] : fields) {
    if (k.empty()) // a continuation line of the field above
      out += std::string(w + 2, ' ') + v + "\n";
    else
      out += k + ":" + std::string(w - width(k) - 1 + 2, ' ') + v + "\n";
  }
  return out;
}

std::string human_bytes(std::uint64_t bytes) {
  static constexpr const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024)
    return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  int u = -1;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

} // namespace sandboxd::cli
