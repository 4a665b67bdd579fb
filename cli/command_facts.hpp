// command_facts — what the reference and the completion scripts need to know about each
// command and flag of the command table, read out of the CLI11 tree once: names, value
// names, help, whether a flag takes a value, and how positionals are written.
#pragma once

#include "cli/command_table.hpp"

#include <string>
#include <vector>

namespace sandboxd::cli {

struct flag_fact {
  std::vector<std::string> names; // "-i", "--stdin"
  std::string value;              // "DURATION"; "[=MODE]" for an optional value; "" for none
  std::string help;
  bool takes_value = false;
  bool required = false;
};

struct positional_fact {
  std::string name; // "ID", "PATH", "CMD ARGS..."
  std::string help;
  bool required = false;
  bool many = false; // takes the rest of the line (after --)
};

struct command_fact {
  std::string path; // "audit verify"
  std::string name; // "verify"
  std::string summary;
  std::string example;
  std::vector<flag_fact> flags;             // without --help
  std::vector<positional_fact> positionals; // in order
  std::vector<std::string> subcommands;     // names
  bool hidden = false;
  // "sandboxctl exec [flags] ID -- CMD ARGS..."
  std::string usage() const;
};

// Every command of the table, in order (hidden ones marked).
std::vector<command_fact> command_facts(const command_table& t);
// The global flags (--addr, --json, ...).
std::vector<flag_fact> global_flag_facts(const command_table& t);

} // namespace sandboxd::cli
