#include "templates/spec_toml.hpp"

#include <toml++/toml.h>

namespace sandboxd::templates {
namespace {

const std::string k_what = "spec";

unsigned line_of(const toml::node& n) {
  return static_cast<unsigned>(n.source().begin.line);
}

error at(const toml::node& n, const std::string& problem) {
  return make_error(errc::invalid_argument,
                    k_what + " line " + std::to_string(line_of(n)) + ": " + problem);
}

// A string, or an array of strings; `what` names the key in messages.
result<std::vector<std::string>> strings(const toml::node& n, const std::string& what,
                                         bool one_allowed) {
  if (const auto* s = n.as_string()) {
    if (!one_allowed)
      return at(n, what + " must be an array of strings");
    return std::vector<std::string>{s->get()};
  }
  const auto* a = n.as_array();
  if (!a)
    return at(n, what + " must be a string or an array of strings");
  std::vector<std::string> out;
  for (const auto& x : *a) {
    const auto* s = x.as_string();
    if (!s)
      return at(x, what + " must hold strings only");
    out.push_back(s->get());
  }
  return out;
}

result<std::string> one_string(const toml::node& n, const std::string& what) {
  const auto* s = n.as_string();
  if (!s)
    return at(n, what + " must be a string");
  return s->get();
}

result<spec_step> parse_step(const toml::table& t, std::size_t number) {
  const std::string where = "steps[" + std::to_string(number) + "]";
  static const char* const kinds[] = {"run", "copy", "env", "workdir", "user"};
  const toml::node* kind_node = nullptr;
  std::string kind;
  for (auto&& [key, value] : t) {
    const std::string k(key.str());
    bool known = k == "to";
    for (const char* n : kinds)
      if (k == n) {
        known = true;
        if (kind_node)
          return at(value, where + " has both " + kind + " and " + k +
                             ": one instruction per step ([[steps]] again for the next)");
        kind_node = &value;
        kind = k;
      }
    if (!known)
      return at(value, where + " has an unknown key '" + k +
                         "' (a step has one of run, copy, env, workdir, user; copy has to)");
  }
  if (!kind_node)
    return at(t, where + " has none of run, copy, env, workdir, user");
  const toml::node* to = t.get("to");
  if (to && kind != "copy")
    return at(*to, where + ": 'to' belongs to copy steps only");
  spec_step s;
  s.line = line_of(*kind_node);
  if (kind == "run") {
    s.kind = step_kind::run;
    if (const auto* cmd = kind_node->as_string()) {
      s.shell_form = true;
      s.args = {"/bin/sh", "-c", cmd->get()};
    } else {
      auto argv = strings(*kind_node, where + ".run", false);
      if (!argv)
        return argv.err();
      if (argv->empty())
        return at(*kind_node, where + ".run is empty");
      s.args = std::move(argv).value();
    }
  } else if (kind == "copy") {
    s.kind = step_kind::copy;
    auto sources = strings(*kind_node, where + ".copy", true);
    if (!sources)
      return sources.err();
    if (sources->empty())
      return at(*kind_node, where + ".copy names no source");
    if (!to)
      return at(*kind_node, where + ": copy needs 'to', the destination in the template");
    auto dest = one_string(*to, where + ".to");
    if (!dest)
      return dest.err();
    s.args = std::move(sources).value();
    s.args.push_back(std::move(dest).value());
  } else if (kind == "env") {
    s.kind = step_kind::env;
    const auto* vars = kind_node->as_table();
    if (!vars)
      return at(*kind_node, where + ".env must be a table ({ NAME = \"value\" })");
    for (auto&& [key, value] : *vars) {
      auto v = one_string(value, where + ".env." + std::string(key.str()));
      if (!v)
        return v.err();
      s.env.emplace_back(std::string(key.str()), std::move(v).value());
    }
  } else {
    s.kind = kind == "user" ? step_kind::user : step_kind::workdir;
    auto v = one_string(*kind_node, where + "." + kind);
    if (!v)
      return v.err();
    s.args = {std::move(v).value()};
  }
  return s;
}

} // namespace

result<build_spec> parse_spec_toml(std::string_view text) {
  toml::table doc;
  try {
    doc = toml::parse(text, std::string_view("spec"));
  } catch (const toml::parse_error& e) {
    return make_error(errc::invalid_argument, k_what + " line " +
                                                std::to_string(e.source().begin.line) + ": " +
                                                std::string(e.description()));
  }
  build_spec spec;
  for (auto&& [key, value] : doc) {
    const std::string k(key.str());
    if (k == "from") {
      auto f = one_string(value, "from");
      if (!f)
        return f.err();
      spec.from = std::move(f).value();
      spec.from_line = line_of(value);
    } else if (k == "steps") {
      const auto* steps = value.as_array();
      if (!steps || (!steps->empty() && !steps->is_array_of_tables()))
        return at(value, "steps must be an array of tables ([[steps]])");
      std::size_t i = 0;
      for (const auto& n : *steps) {
        auto s = parse_step(*n.as_table(), i++);
        if (!s)
          return s.err();
        spec.steps.push_back(std::move(s).value());
      }
    } else {
      return at(value, "unknown key '" + k + "' (a spec has from and [[steps]])");
    }
  }
  if (auto c = check_spec(spec, k_what); !c)
    return c.err();
  return spec;
}

} // namespace sandboxd::templates
