#include "cli/command_facts.hpp"

namespace sandboxd::cli {
namespace {

flag_fact flag_of(const CLI::Option* o) {
  flag_fact f;
  for (const auto& s : o->get_snames())
    f.names.push_back("-" + s);
  for (const auto& l : o->get_lnames())
    f.names.push_back("--" + l);
  f.help = o->get_description();
  f.takes_value = o->get_type_size() != 0;
  f.value = o->get_type_name();
  if (!f.takes_value && f.value.rfind("[=", 0) != 0)
    f.value.clear();
  f.required = o->get_required();
  return f;
}

bool is_help(const CLI::Option* o) {
  for (const auto& l : o->get_lnames())
    if (l == "help")
      return true;
  return false;
}

} // namespace

std::string command_fact::usage() const {
  std::string u = "sandboxctl " + path;
  if (!flags.empty())
    u += " [flags]";
  for (const auto& p : positionals) {
    const std::string n = p.many ? "-- " + p.name + " [ARGS...]" : p.name;
    u += " " + (p.required ? n : "[" + n + "]");
  }
  if (!subcommands.empty()) {
    std::string subs;
    for (const auto& s : subcommands)
      subs += (subs.empty() ? "" : "|") + s;
    u += " [" + subs + "]";
  }
  return u;
}

std::vector<command_fact> command_facts(const command_table& t) {
  std::vector<command_fact> out;
  for (const CLI::App* c : t.commands()) {
    command_fact f;
    f.path = command_table::path_of(c).substr(std::string("sandboxctl ").size());
    f.name = c->get_name();
    f.summary = c->get_description();
    f.example = t.example(c);
    f.hidden = c->get_group().empty();
    for (const CLI::Option* o : c->get_options()) {
      if (is_help(o))
        continue;
      if (o->get_positional()) {
        positional_fact p;
        p.name = o->get_type_name();
        p.help = o->get_description();
        p.required = o->get_required();
        p.many = o->get_expected_max() > 1;
        f.positionals.push_back(std::move(p));
      } else {
        f.flags.push_back(flag_of(o));
      }
    }
    for (const CLI::App* s : c->get_subcommands([](const CLI::App*) { return true; }))
      f.subcommands.push_back(s->get_name());
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<flag_fact> global_flag_facts(const command_table& t) {
  std::vector<flag_fact> out;
  for (const CLI::Option* o : t.app().get_options())
    if (!is_help(o) && !o->get_positional())
      out.push_back(flag_of(o));
  return out;
}

} // namespace sandboxd::cli
