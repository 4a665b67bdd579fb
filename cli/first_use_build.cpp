#include "cli/first_use_build.hpp"

#include "cli/progress.hpp"
#include "cli/terminal_text.hpp"

#include <cstdio>

namespace sandboxd::cli {

std::string build_progress_line(const std::string& name, const std::string& phase,
                                double fraction) {
  char pct[16] = "";
  if (fraction >= 0)
    std::snprintf(pct, sizeof pct, " %3.0f%%", 100 * fraction);
  return terminal_text(name + ":" + pct + " " + phase);
}

int build_before_create(context& cx, api::client& client, const std::string& name) {
  if (name.empty())
    return 0; // the node's default, base: built in a moment
  auto t = client.get_template(name);
  if (!t || t->status != "stock")
    return 0; // built, being built by another caller, or not a stock name: the create says
  const bool tty = progress_bar::stderr_is_terminal();
  cx.err("building template " + terminal_text(name) +
         " on this node first (its first use; later creates are instant)\n");
  std::string last;
  auto built =
    client.build_template(name, [&](const std::string& phase, double fraction, const std::string&) {
      if (!tty && phase == last)
        return;
      last = phase;
      const auto line = build_progress_line(name, phase, fraction);
      cx.err(tty ? "\r\033[K" + line : line + "\n");
    });
  if (tty)
    cx.err("\n");
  if (!built)
    return cx.fail(built.err());
  return 0;
}

} // namespace sandboxd::cli
