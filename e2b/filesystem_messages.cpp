#include "e2b/filesystem_messages.hpp"

#include "e2b/proto_json.hpp"

namespace sandboxd::e2b {

namespace {

constexpr std::uint32_t k_go_mode_dir = 1u << 31;
constexpr std::uint32_t k_go_mode_symlink = 1u << 27;

result<json> message(std::string_view body, std::string_view what) {
  return parse_object(body, what);
}

std::string_view type_name(entry_type t) {
  switch (t) {
  case entry_type::file:
    return "FILE_TYPE_FILE";
  case entry_type::directory:
    return "FILE_TYPE_DIRECTORY";
  case entry_type::symlink:
    return "FILE_TYPE_SYMLINK";
  case entry_type::other:
    break;
  }
  return "FILE_TYPE_UNSPECIFIED";
}

json entry_json(const entry_view& e) {
  json j;
  j["name"] = e.name;
  j["type"] = std::string(type_name(e.type));
  j["path"] = e.path;
  j["size"] = std::to_string(e.size);
  j["mode"] = go_file_mode(e);
  j["permissions"] = go_mode_text(e);
  j["owner"] = e.owner;
  j["group"] = e.group;
  j["modifiedTime"] = rfc3339(e.modified_ns);
  j["isSymlink"] = e.type == entry_type::symlink;
  return j;
}

} // namespace

result<path_request> parse_path_request(std::string_view body) {
  E2B_TRY(j, message(body, "request"));
  E2B_TRY(path, read_string(member(*j, "path"), "path"));
  return path_request{std::move(*path)};
}

result<move_request> parse_move_request(std::string_view body) {
  E2B_TRY(j, message(body, "MoveRequest"));
  E2B_TRY(source, read_string(member(*j, "source"), "source"));
  E2B_TRY(destination, read_string(member(*j, "destination"), "destination"));
  return move_request{std::move(*source), std::move(*destination)};
}

result<list_dir_request> parse_list_dir_request(std::string_view body) {
  E2B_TRY(j, message(body, "ListDirRequest"));
  E2B_TRY(path, read_string(member(*j, "path"), "path"));
  E2B_TRY(depth, read_uint32(member(*j, "depth"), "depth"));
  return list_dir_request{std::move(*path), *depth == 0 ? 1u : *depth};
}

std::string entry_response(const entry_view& e) {
  json j;
  j["entry"] = entry_json(e);
  return dump(j);
}

std::string list_dir_response(const std::vector<entry_view>& entries) {
  json list = json::array();
  for (const auto& e : entries)
    list.push_back(entry_json(e));
  json j;
  j["entries"] = std::move(list);
  return dump(j);
}

std::string upload_response(const std::vector<entry_view>& written) {
  json list = json::array();
  for (const auto& e : written) {
    json w;
    w["name"] = e.name;
    w["type"] = e.type == entry_type::directory ? "dir" : "file";
    w["path"] = e.path;
    list.push_back(std::move(w));
  }
  return dump(list);
}

std::uint32_t go_file_mode(const entry_view& e) {
  std::uint32_t mode = e.permissions & 0777;
  if (e.type == entry_type::directory)
    mode |= k_go_mode_dir;
  else if (e.type == entry_type::symlink)
    mode |= k_go_mode_symlink;
  return mode;
}

std::string go_mode_text(const entry_view& e) {
  std::string out;
  out.push_back(e.type == entry_type::directory ? 'd' : e.type == entry_type::symlink ? 'L' : '-');
  const char* rwx = "rwxrwxrwx";
  for (int i = 8; i >= 0; --i)
    out.push_back((e.permissions >> i) & 1 ? rwx[8 - i] : '-');
  return out;
}

std::string base_name(std::string_view path) {
  while (path.size() > 1 && path.back() == '/')
    path.remove_suffix(1);
  const auto slash = path.rfind('/');
  if (slash == std::string_view::npos || path.size() == 1)
    return std::string(path);
  return std::string(path.substr(slash + 1));
}

} // namespace sandboxd::e2b
