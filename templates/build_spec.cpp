#include "templates/build_spec.hpp"

#include "templates/dockerfile.hpp"
#include "templates/spec_toml.hpp"

#include <nlohmann/json.hpp>

namespace sandboxd::templates {
namespace {

bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

bool is_name_char(char c) {
  return is_name_start(c) || (c >= '0' && c <= '9');
}

bool is_template_name(const std::string& s) {
  if (s.empty() || s.size() > 64)
    return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
      return false;
  return true;
}

bool needs_quotes(const std::string& s) {
  if (s.empty())
    return true;
  for (char c : s)
    if (c == ' ' || c == '\t' || c == '"' || c == '\'' || c == '\\' ||
        static_cast<unsigned char>(c) < 0x20)
      return true;
  return false;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string json_array(const std::vector<std::string>& v) {
  return nlohmann::json(v).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

error at_line(const std::string& what, unsigned line, const std::string& problem) {
  return make_error(errc::invalid_argument,
                    what + " line " + std::to_string(line) + ": " + problem);
}

} // namespace

result<build_spec> parse_spec(spec_format format, std::string_view text) {
  return format == spec_format::dockerfile ? parse_dockerfile(text) : parse_spec_toml(text);
}

std::string_view keyword(step_kind k) {
  switch (k) {
  case step_kind::run:
    return "RUN";
  case step_kind::copy:
    return "COPY";
  case step_kind::env:
    return "ENV";
  case step_kind::workdir:
    return "WORKDIR";
  case step_kind::user:
    return "USER";
  }
  return "?";
}

std::string step_text(const spec_step& s) {
  std::string out(keyword(s.kind));
  switch (s.kind) {
  case step_kind::run:
    if (s.shell_form && s.args.size() == 3)
      return out + " " + s.args[2];
    return out + " " + json_array(s.args);
  case step_kind::copy: {
    bool plain = true;
    for (const auto& a : s.args)
      plain = plain && !needs_quotes(a) && a.front() != '[';
    if (!plain)
      return out + " " + json_array(s.args);
    for (const auto& a : s.args)
      out += " " + a;
    return out;
  }
  case step_kind::env:
    for (const auto& [name, value] : s.env)
      out += " " + name + "=" + (needs_quotes(value) ? quoted(value) : value);
    return out;
  case step_kind::workdir:
  case step_kind::user:
    return out + " " + (s.args.empty() ? std::string() : s.args.front());
  }
  return out;
}

result<std::vector<std::string>> copy_source_parts(const std::string& source) {
  const std::string shown = "COPY source '" + source + "'";
  if (source.empty())
    return make_error(errc::invalid_argument, "a COPY source is empty");
  if (source.front() == '/')
    return make_error(errc::invalid_argument,
                      shown + " is absolute; sources are paths inside the build context "
                              "(relative to its top directory)");
  if (source.find_first_of("*?[") != std::string::npos)
    return make_error(errc::invalid_argument,
                      shown + " has a wildcard; name the files or their directory instead");
  if (source.find('\0') != std::string::npos)
    return make_error(errc::invalid_argument, "a COPY source holds a NUL byte");
  auto parts = path_components(source);
  for (const auto& c : parts) {
    if (c == "..")
      return make_error(errc::invalid_argument,
                        shown + " leaves the build context ('..'); only files inside it can be "
                                "copied");
    if (c.size() > 255)
      return make_error(errc::invalid_argument, shown + " has a name longer than 255 bytes");
  }
  return parts;
}

result<void> check_spec(const build_spec& spec, const std::string& what) {
  if (spec.from.empty())
    return make_error(errc::invalid_argument,
                      what + " has no FROM: name the template to build on (FROM base)");
  if (!is_template_name(spec.from))
    return at_line(what, spec.from_line,
                   "FROM '" + spec.from +
                     "' is not a template name: FROM names a sandboxd template ([a-z0-9_-], "
                     "e.g. base, debian, python, node or one of yours), not an image");
  std::string user;
  for (const auto& s : spec.steps) {
    switch (s.kind) {
    case step_kind::run:
      if (s.args.empty() ||
          (s.shell_form && s.args.back().find_first_not_of(" \t") == std::string::npos))
        return at_line(what, s.line, "RUN has no command");
      if (!user.empty() && user != "root" && user != "0" && user.rfind("root:", 0) != 0 &&
          user.rfind("0:", 0) != 0)
        return at_line(what, s.line,
                       "RUN after USER " + user +
                         " is not supported: build steps run as root; move USER after the last "
                         "RUN");
      break;
    case step_kind::copy: {
      if (s.args.size() < 2)
        return at_line(what, s.line, "COPY needs a source and a destination (COPY src /dest)");
      for (std::size_t i = 0; i + 1 < s.args.size(); ++i)
        if (auto p = copy_source_parts(s.args[i]); !p)
          return at_line(what, s.line, p.err().message);
      const auto& dest = s.args.back();
      if (dest.empty())
        return at_line(what, s.line, "COPY has an empty destination");
      if (s.args.size() > 2 && dest.back() != '/')
        return at_line(what, s.line,
                       "COPY of several sources needs a destination directory ending in '/' (" +
                         dest + "/)");
      break;
    }
    case step_kind::env:
      if (s.env.empty())
        return at_line(what, s.line, "ENV sets no variable (ENV NAME=value)");
      for (const auto& [name, value] : s.env) {
        bool ok = !name.empty() && is_name_start(name.front());
        for (char c : name)
          ok = ok && is_name_char(c);
        if (!ok)
          return at_line(what, s.line,
                         "ENV name '" + name + "' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)");
        if (value.find('\0') != std::string::npos)
          return at_line(what, s.line, "ENV " + name + " holds a NUL byte");
      }
      break;
    case step_kind::workdir:
    case step_kind::user:
      if (s.args.size() != 1 || s.args.front().empty())
        return at_line(what, s.line, std::string(keyword(s.kind)) + " needs one value");
      if (s.args.front().find_first_of(std::string(" \t\n\0", 4)) != std::string::npos &&
          s.kind == step_kind::user)
        return at_line(what, s.line, "USER '" + s.args.front() + "' holds a blank");
      if (s.kind == step_kind::user)
        user = s.args.front();
      break;
    }
  }
  return {};
}

result<std::string> expand_variables(const std::string& text,
                                     const std::vector<std::pair<std::string, std::string>>& env) {
  auto value_of = [&](const std::string& name) -> std::string {
    for (auto it = env.rbegin(); it != env.rend(); ++it)
      if (it->first == name)
        return it->second;
    return "";
  };
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size() && text[i + 1] == '$') {
      out += '$';
      ++i;
      continue;
    }
    if (c != '$' || i + 1 >= text.size()) {
      out += c;
      continue;
    }
    if (text[i + 1] == '{') {
      const std::size_t close = text.find('}', i + 2);
      if (close == std::string::npos)
        return make_error(errc::invalid_argument, "'" + text + "' has a ${ without its }");
      const std::string name = text.substr(i + 2, close - i - 2);
      bool ok = !name.empty() && is_name_start(name.front());
      for (char n : name)
        ok = ok && is_name_char(n);
      if (!ok)
        return make_error(errc::invalid_argument,
                          "'" + text + "' has ${" + name +
                            "}: only ${NAME} and $NAME are expanded (no :- or :+ forms)");
      out += value_of(name);
      i = close;
      continue;
    }
    if (!is_name_start(text[i + 1])) {
      out += c;
      continue;
    }
    std::size_t end = i + 1;
    while (end < text.size() && is_name_char(text[end]))
      ++end;
    out += value_of(text.substr(i + 1, end - i - 1));
    i = end - 1;
  }
  return out;
}

std::vector<std::string> path_components(std::string_view path) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= path.size()) {
    std::size_t slash = path.find('/', at);
    if (slash == std::string_view::npos)
      slash = path.size();
    std::string_view c = path.substr(at, slash - at);
    at = slash + 1;
    if (!c.empty() && c != ".")
      out.emplace_back(c);
  }
  return out;
}

std::string resolve_directory(const std::string& from, const std::string& dir) {
  std::vector<std::string> parts;
  for (const auto& path : {dir.empty() || dir.front() != '/' ? from : std::string(), dir})
    for (auto& c : path_components(path)) {
      if (c != "..")
        parts.push_back(std::move(c));
      else if (!parts.empty())
        parts.pop_back();
    }
  std::string out;
  for (const auto& p : parts)
    out += "/" + p;
  return out.empty() ? "/" : out;
}

} // namespace sandboxd::templates
