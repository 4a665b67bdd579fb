// crun_startup — crun's exec sometimes cannot start the process at all (it fails to join
// a container whose init is still in crun's own code). Such an attempt ran nothing and is
// retried; these helpers recognise it and keep its text from the caller.
#pragma once

#include "runtime/child_process.hpp"

#include <functional>
#include <string>
#include <string_view>

namespace sandboxd::runtime {

// crun's exec could not start the process at all: it printed "fail startup", or its
// failure to join the container's namespaces ("setns(pid=...): Operation not
// permitted", with or without "fail startup" after it), and nothing else.
bool crun_failed_startup(const process_result& p);

// Passes an exec's output on to the caller's callback, but holds stderr back while all of
// it so far could be crun's start-up failure text (and no stdout came): that text is
// dropped when the attempt is retried, and passed on otherwise.
class startup_filter {
public:
  startup_filter(std::function<void(output_stream, std::string_view)> to, bool enabled)
      : to_(std::move(to)), holding_(enabled) {}
  void take(output_stream s, std::string_view d);
  void discard() { held_.clear(); }
  void flush();

private:
  std::function<void(output_stream, std::string_view)> to_;
  bool holding_;
  std::string held_;
};

} // namespace sandboxd::runtime
