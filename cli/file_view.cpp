#include "cli/file_view.hpp"

#include "cli/table.hpp"
#include "cli/time_arg.hpp"
#include "cli/value_args.hpp"

#include <cstdio>

namespace sandboxd::cli {
namespace {

std::string octal(std::uint32_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", mode & 07777);
  return buf;
}

time_point at(std::int64_t ns) {
  return time_point{std::chrono::nanoseconds{ns}};
}

char type_letter(api::file_type t) {
  switch (t) {
  case api::file_type::directory:
    return 'd';
  case api::file_type::symlink:
    return 'l';
  case api::file_type::regular:
    return '-';
  default:
    return '?';
  }
}

} // namespace

std::string file_type_name(api::file_type t) {
  switch (t) {
  case api::file_type::regular:
    return "regular";
  case api::file_type::directory:
    return "directory";
  case api::file_type::symlink:
    return "symlink";
  default:
    return "other";
  }
}

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty())
    return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

json file_json(const api::file_info& f) {
  return json{{"path", f.path},
              {"type", file_type_name(f.type)},
              {"size", f.size},
              {"mode", octal(f.mode)},
              {"mtime", format_time(at(f.mtime_ns))}};
}

json file_json(const api::file_digest& f) {
  json j = file_json(f.info);
  j["sha256"] = hex(f.sha256);
  return j;
}

json listing_json(const std::string& dir, const api::dir_listing& l) {
  json entries = json::array();
  for (const auto& e : l.entries) {
    json j;
    j["name"] = e.name;
    j["path"] = join_path(dir, e.name);
    j["type"] = file_type_name(e.info.type);
    j["size"] = e.info.size;
    j["mode"] = octal(e.info.mode);
    j["mtime"] = format_time(at(e.info.mtime_ns));
    entries.push_back(std::move(j));
  }
  return json{{"path", dir}, {"entries", std::move(entries)}, {"truncated", l.truncated}};
}

std::string listing_table(const api::dir_listing& l) {
  std::vector<row> rows;
  for (const auto& e : l.entries)
    rows.push_back({type_letter(e.info.type) + format_mode(e.info.mode),
                    std::to_string(e.info.size), format_time_seconds(at(e.info.mtime_ns)),
                    e.info.type == api::file_type::directory ? e.name + "/" : e.name});
  return render_table({"MODE", "SIZE", "MODIFIED", "NAME"}, rows);
}

std::string file_text(const api::file_info& f) {
  return render_fields(
    {{"path", f.path},
     {"type", file_type_name(f.type)},
     {"size", std::to_string(f.size) + " (" + human_bytes(f.size) + ")"},
     {"mode", octal(f.mode) + " (" + type_letter(f.type) + format_mode(f.mode) + ")"},
     {"modified", format_time(at(f.mtime_ns))}});
}

} // namespace sandboxd::cli
