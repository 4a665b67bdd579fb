#include "templates/dockerfile.hpp"

#include <nlohmann/json.hpp>

#include <cctype>
#include <optional>

namespace sandboxd::templates {
namespace {

const std::string k_what = "Dockerfile";

error at_line(unsigned line, const std::string& problem) {
  return make_error(errc::invalid_argument,
                    k_what + " line " + std::to_string(line) + ": " + problem);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

struct logical_line {
  unsigned line = 0; // of its first physical line
  std::string text;
};

// The instructions: comments dropped, continued lines joined (backslash-newline removed).
result<std::vector<logical_line>> logical_lines(std::string_view text) {
  std::vector<logical_line> out;
  std::optional<logical_line> open;
  unsigned number = 0;
  bool directives = true; // parser directives may only come first
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos)
      end = text.size();
    std::string_view raw = text.substr(at, end - at);
    at = end + 1;
    ++number;
    std::string_view t = trim(raw);
    if (!t.empty() && t.front() == '#') {
      if (directives && !open) {
        std::string_view d = trim(t.substr(1));
        const auto eq = d.find('=');
        if (eq != std::string_view::npos && upper(trim(d.substr(0, eq))) == "ESCAPE" &&
            trim(d.substr(eq + 1)) != "\\")
          return at_line(number, "the escape directive is not supported; the escape character "
                                 "is a backslash");
      }
      continue; // a comment, also inside a continued line
    }
    directives = false;
    if (t.empty()) {
      continue;
    }
    const bool continued = t.back() == '\\';
    if (continued)
      t = trim(t.substr(0, t.size() - 1));
    if (!open)
      open = logical_line{number, ""};
    open->text += std::string(t.data(), t.size());
    if (continued) {
      open->text += ' ';
      continue;
    }
    out.push_back(std::move(*open));
    open.reset();
  }
  if (open)
    return at_line(open->line, "the file ends inside a continued line (a backslash at the end "
                               "of its last line)");
  return out;
}

// The words of `s` as Docker splits ENV and COPY arguments: blanks separate them, "..." and
// '...' quote, a backslash escapes the next character. A `$` is kept for expand_variables,
// and one that must stay literal (single-quoted, or written \$) is kept as \$.
result<std::vector<std::string>> words(std::string_view s, unsigned line) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == ' ' || c == '\t') {
      if (in_word)
        out.push_back(std::move(cur));
      cur.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\\') {
      if (i + 1 >= s.size()) {
        cur += '\\';
        continue;
      }
      const char n = s[++i];
      if (n == '$')
        cur += '\\';
      cur += n;
    } else if (c == '\'') {
      const auto close = s.find('\'', i + 1);
      if (close == std::string_view::npos)
        return at_line(line, "a single quote is not closed");
      for (char q : s.substr(i + 1, close - i - 1)) {
        if (q == '$')
          cur += '\\';
        cur += q;
      }
      i = close;
    } else if (c == '"') {
      std::size_t j = i + 1;
      for (; j < s.size() && s[j] != '"'; ++j) {
        if (s[j] == '\\' && j + 1 < s.size() &&
            (s[j + 1] == '"' || s[j + 1] == '\\' || s[j + 1] == '$')) {
          if (s[j + 1] == '$')
            cur += '\\';
          cur += s[++j];
          continue;
        }
        cur += s[j];
      }
      if (j >= s.size())
        return at_line(line, "a double quote is not closed");
      i = j;
    } else {
      cur += c;
    }
  }
  if (in_word)
    out.push_back(std::move(cur));
  return out;
}

// A JSON array of strings (the exec form), or nullopt when `s` is not one (then it is the
// shell form, as Docker reads it).
std::optional<std::vector<std::string>> json_form(std::string_view s) {
  if (s.empty() || s.front() != '[')
    return std::nullopt;
  auto j = nlohmann::json::parse(s, nullptr, false);
  if (j.is_discarded() || !j.is_array())
    return std::nullopt;
  std::vector<std::string> out;
  for (const auto& x : j) {
    if (!x.is_string())
      return std::nullopt;
    out.push_back(x.get<std::string>());
  }
  return out;
}

result<void> no_options(std::string_view keyword, std::string_view rest, unsigned line) {
  if (rest.substr(0, 2) != "--")
    return {};
  const auto end = rest.find_first_of(" \t=");
  return at_line(line, std::string(keyword) + " " + std::string(rest.substr(0, end)) +
                         " is not supported: " + std::string(keyword) + " takes no options here");
}

result<spec_step> parse_env(std::string_view rest, unsigned line) {
  spec_step s;
  s.kind = step_kind::env;
  s.line = line;
  auto w = words(rest, line);
  if (!w)
    return w.err();
  if (w->empty())
    return at_line(line, "ENV sets no variable (ENV NAME=value)");
  if (w->front().find('=') == std::string::npos) {
    // The old form: ENV NAME value (the rest of the line).
    std::string value;
    for (std::size_t i = 1; i < w->size(); ++i)
      value += (i > 1 ? " " : "") + (*w)[i];
    if (w->size() < 2)
      return at_line(line, "ENV " + w->front() + " has no value (ENV NAME=value)");
    s.env.emplace_back(w->front(), value);
    return s;
  }
  for (const auto& word : *w) {
    const auto eq = word.find('=');
    if (eq == std::string::npos)
      return at_line(line, "ENV '" + word + "' is not NAME=value");
    s.env.emplace_back(word.substr(0, eq), word.substr(eq + 1));
  }
  return s;
}

} // namespace

result<build_spec> parse_dockerfile(std::string_view text) {
  auto lines = logical_lines(text);
  if (!lines)
    return lines.err();
  build_spec spec;
  bool seen_from = false;
  for (const auto& l : *lines) {
    std::string_view t = l.text;
    const auto blank = t.find_first_of(" \t");
    const std::string word = upper(t.substr(0, blank));
    const std::string_view rest =
      blank == std::string_view::npos ? std::string_view() : trim(t.substr(blank));
    if (word == "FROM") {
      if (seen_from)
        return at_line(l.line, "a second FROM: multi-stage builds are not supported (one FROM, "
                               "first)");
      if (auto o = no_options("FROM", rest, l.line); !o)
        return o.err();
      auto w = words(rest, l.line);
      if (!w)
        return w.err();
      if (w->size() == 3 && upper((*w)[1]) == "AS")
        return at_line(l.line, "FROM ... AS: multi-stage builds are not supported");
      if (w->size() != 1)
        return at_line(l.line, "FROM takes one template name (FROM base)");
      spec.from = w->front();
      spec.from_line = l.line;
      seen_from = true;
      continue;
    }
    if (!seen_from &&
        (word == "RUN" || word == "COPY" || word == "ENV" || word == "WORKDIR" || word == "USER"))
      return at_line(l.line, word + " before FROM: a Dockerfile starts with FROM <template>");
    spec_step s;
    s.line = l.line;
    if (word == "RUN") {
      if (auto o = no_options("RUN", rest, l.line); !o)
        return o.err();
      s.kind = step_kind::run;
      if (auto j = json_form(rest)) {
        if (j->empty())
          return at_line(l.line, "RUN [] has no command");
        s.args = std::move(*j);
      } else {
        s.shell_form = true;
        s.args = {"/bin/sh", "-c", std::string(rest)};
      }
    } else if (word == "COPY") {
      if (auto o = no_options("COPY", rest, l.line); !o)
        return o.err();
      s.kind = step_kind::copy;
      if (auto j = json_form(rest)) {
        s.args = std::move(*j);
      } else {
        auto w = words(rest, l.line);
        if (!w)
          return w.err();
        s.args = std::move(w).value();
      }
    } else if (word == "ENV") {
      auto e = parse_env(rest, l.line);
      if (!e)
        return e.err();
      s = std::move(e).value();
    } else if (word == "WORKDIR" || word == "USER") {
      s.kind = word == "USER" ? step_kind::user : step_kind::workdir;
      auto w = words(rest, l.line);
      if (!w)
        return w.err();
      if (w->size() != 1)
        return at_line(l.line, word + " takes one value" +
                                 (word == "WORKDIR" ? " (quote a path with blanks)" : ""));
      s.args = std::move(w).value();
    } else if (word == "ADD") {
      return at_line(l.line, "ADD is not supported: use COPY for files of the build context "
                             "(sandboxd builds FROM, RUN, COPY, ENV, WORKDIR and USER)");
    } else if (word == "CMD" || word == "ENTRYPOINT" || word == "EXPOSE" || word == "LABEL" ||
               word == "ARG" || word == "VOLUME" || word == "ONBUILD" || word == "HEALTHCHECK" ||
               word == "SHELL" || word == "STOPSIGNAL" || word == "MAINTAINER") {
      return at_line(l.line, word + " is not supported: sandboxd builds FROM, RUN, COPY, ENV, "
                                    "WORKDIR and USER");
    } else {
      std::string shown = word.substr(0, 40);
      return at_line(l.line, "'" + shown + "' is not a Dockerfile instruction");
    }
    spec.steps.push_back(std::move(s));
  }
  if (!seen_from)
    return make_error(errc::invalid_argument,
                      "the Dockerfile has no FROM: start it with FROM <template> (FROM base)");
  if (auto c = check_spec(spec, k_what); !c)
    return c.err();
  return spec;
}

} // namespace sandboxd::templates
