#include "runtime/exec_user.hpp"

#include <algorithm>
#include <charconv>
#include <optional>

namespace sandboxd::runtime {
namespace {

// The longest user or group name taken (useradd's limit is 32).
constexpr std::size_t k_max_name = 256;

// Field `n` (0-based) of a colon-separated line, or nullopt when it has fewer fields.
std::optional<std::string_view> field(std::string_view line, int n) {
  for (int i = 0; i < n; ++i) {
    auto c = line.find(':');
    if (c == std::string_view::npos)
      return std::nullopt;
    line.remove_prefix(c + 1);
  }
  return line.substr(0, line.find(':'));
}

std::optional<std::uint32_t> number(std::string_view s) {
  std::uint64_t v = 0;
  if (s.empty() || s.size() > 10)
    return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v > 0xffffffffu)
    return std::nullopt;
  return static_cast<std::uint32_t>(v);
}

// Calls f(line) for each line of `text` until f returns true.
template <class F>
bool each_line(std::string_view text, F&& f) {
  while (!text.empty()) {
    auto nl = text.find('\n');
    auto line = text.substr(0, nl);
    if (!line.empty() && line.front() != '#' && f(line))
      return true;
    if (nl == std::string_view::npos)
      break;
    text.remove_prefix(nl + 1);
  }
  return false;
}

struct passwd_entry {
  std::string name;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::string home;
};

// The first entry of `passwd` whose name (by_name) or uid is `key`.
std::optional<passwd_entry> find_user(std::string_view passwd, std::string_view key, bool by_name) {
  std::optional<passwd_entry> out;
  const auto id = by_name ? std::nullopt : number(key);
  each_line(passwd, [&](std::string_view line) {
    auto name = field(line, 0), uid = field(line, 2), gid = field(line, 3), home = field(line, 5);
    if (!name || !uid || !gid)
      return false;
    auto u = number(*uid), g = number(*gid);
    if (!u || !g)
      return false;
    if (by_name ? *name != key : *u != *id)
      return false;
    out = passwd_entry{std::string(*name), *u, *g, home ? std::string(*home) : std::string()};
    return true;
  });
  return out;
}

std::optional<std::uint32_t> find_group(std::string_view group, std::string_view name) {
  std::optional<std::uint32_t> out;
  each_line(group, [&](std::string_view line) {
    auto n = field(line, 0), gid = field(line, 2);
    if (!n || !gid || *n != name)
      return false;
    out = number(*gid);
    return out.has_value();
  });
  return out;
}

// The gids of the groups that list `user` as a member.
std::vector<std::uint32_t> member_groups(std::string_view group, std::string_view user) {
  std::vector<std::uint32_t> out;
  each_line(group, [&](std::string_view line) {
    auto gid = field(line, 2), members = field(line, 3);
    if (!gid || !members)
      return false;
    auto g = number(*gid);
    for (std::string_view m = *members; g && !m.empty();) {
      auto comma = m.find(',');
      if (m.substr(0, comma) == user) {
        out.push_back(*g);
        break;
      }
      if (comma == std::string_view::npos)
        break;
      m.remove_prefix(comma + 1);
    }
    return false;
  });
  return out;
}

bool plain_name(std::string_view s) {
  return !s.empty() && s.size() <= k_max_name && std::all_of(s.begin(), s.end(), [](char c) {
    return c != ':' && c != '\n' && c != '\0' && c != ',' && static_cast<unsigned char>(c) > ' ';
  });
}

error outside(std::string_view what, std::uint32_t id) {
  return make_error(errc::invalid_argument,
                    std::string(what) + " " + std::to_string(id) +
                      " is not one of the sandbox's ids (0-" + std::to_string(k_max_sandbox_id) +
                      ", its user namespace maps no other); give an id in that range");
}

} // namespace

bool is_root_user(std::string_view spec) {
  return spec.empty() || spec == "root" || spec == "0" || spec == "0:0" || spec == "root:root";
}

outcome<exec_user> resolve_exec_user(std::string_view spec, std::string_view passwd,
                                     std::string_view group) {
  const auto colon = spec.find(':');
  const std::string_view user_part = spec.substr(0, colon);
  const std::optional<std::string_view> group_part =
    colon == std::string_view::npos ? std::nullopt : std::optional(spec.substr(colon + 1));
  if (!plain_name(user_part) || (group_part && !plain_name(*group_part)))
    return make_error(errc::invalid_argument,
                      "user '" + std::string(spec.substr(0, 64)) +
                        "' is not of the form user[:group] (a name or a number each, no spaces "
                        "or control characters); give e.g. 'app', '1000' or 'app:staff'");
  exec_user out;
  std::string name; // the user's name, for its supplementary groups
  if (auto uid = number(user_part)) {
    out.uid = *uid;
    out.home = "/";
    if (auto e = find_user(passwd, user_part, false)) {
      out.gid = e->gid;
      out.home = e->home;
      name = e->name;
    }
  } else {
    auto e = find_user(passwd, user_part, true);
    if (!e)
      return make_error(errc::invalid_argument,
                        "user '" + std::string(user_part) +
                          "' is not in the sandbox's /etc/passwd; give a user the template has "
                          "(its /etc/passwd), or a numeric uid (0-65535)");
    out.uid = e->uid;
    out.gid = e->gid;
    out.home = e->home;
    name = e->name;
  }
  if (out.uid > k_max_sandbox_id)
    return outside("uid", out.uid);
  if (group_part) {
    if (auto gid = number(*group_part)) {
      out.gid = *gid;
    } else if (auto g = find_group(group, *group_part)) {
      out.gid = *g;
    } else {
      return make_error(errc::invalid_argument,
                        "group '" + std::string(*group_part) +
                          "' is not in the sandbox's /etc/group; give a group the template has "
                          "(its /etc/group), or a numeric gid (0-65535)");
    }
  } else if (!name.empty()) {
    out.groups = member_groups(group, name);
  }
  if (out.gid > k_max_sandbox_id)
    return outside("gid", out.gid);
  std::erase_if(out.groups, [&](std::uint32_t g) { return g == out.gid || g > k_max_sandbox_id; });
  std::sort(out.groups.begin(), out.groups.end());
  out.groups.erase(std::unique(out.groups.begin(), out.groups.end()), out.groups.end());
  if (out.groups.size() > k_max_exec_groups)
    out.groups.resize(k_max_exec_groups);
  if (out.home.empty() || out.home.front() != '/' || out.home.find('\0') != std::string::npos)
    out.home = "/";
  return out;
}

} // namespace sandboxd::runtime
