#include "runtime/crun_startup.hpp"

#include <algorithm>

namespace sandboxd::runtime {
namespace {

bool could_be_failure(const std::string& t) {
  static const std::string fail = "fail startup\n", setns = "setns(pid=";
  if (t.size() > 256)
    return false;
  auto prefix_of = [&](const std::string& whole) {
    return whole.compare(0, std::min(whole.size(), t.size()), t, 0,
                         std::min(whole.size(), t.size())) == 0 &&
           t.size() <= whole.size();
  };
  return prefix_of(fail) || prefix_of(setns) || t.rfind(setns, 0) == 0;
}

} // namespace

bool crun_failed_startup(const process_result& p) {
  return p.exit_code != 0 && p.out.empty() &&
         (p.err == "fail startup\n" ||
          (p.err.rfind("setns(pid=", 0) == 0 &&
           p.err.find("Operation not permitted") != std::string::npos && p.err.size() < 256));
}

void startup_filter::take(output_stream s, std::string_view d) {
  if (holding_) {
    if (s == output_stream::err) {
      held_.append(d);
      if (!could_be_failure(held_))
        flush(); // not crun's text: pass on everything held, this chunk included
      return;
    }
    flush(); // stdout came: the program runs
  }
  if (to_ && !d.empty())
    to_(s, d);
}

void startup_filter::flush() {
  holding_ = false;
  if (!held_.empty() && to_)
    to_(output_stream::err, held_);
  held_.clear();
}

} // namespace sandboxd::runtime
