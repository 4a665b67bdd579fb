// runtime_quiesce — what a stopping node does to its sandboxes' processes, and what the
// next start undoes, so that a stopped node leaves no sandbox process and no mount
// behind while every sandbox persists on disk.
//
// quiesce (at stop, after the control plane has stopped, so nothing else calls the
// drivers): first writes `file` (synced, renamed into place) listing every sandbox whose
// runtime status is running, then ends the processes of each with a filesystem pause at
// the driver: the container is deleted, the writable layer synced and unmounted. No
// event is appended: the log still says running, and that is what the sandbox is again
// after restore. A memory-paused sandbox is left as it is (its state lives in its
// processes or its checkpoint) and named in `kept`.
//
// restore (at start, before the control plane recovers): resumes at the driver every
// sandbox `file` lists, so recovery and the log find them running; then removes the
// file. A crash anywhere in between leaves the file, and the next start does it again:
// a sandbox already running again counts as restored.
#pragma once

#include "node/runtime_set.hpp"

#include <string>
#include <vector>

namespace sandboxd::node {

struct quiesce_report {
  std::vector<std::string> stopped; // "<runtime>/<id>"
  std::vector<std::string> kept;    // memory-paused, left as they were: "<runtime>/<id>"
  std::vector<std::string> failed;  // "<runtime>/<id>: why"
};

struct restore_report {
  std::vector<std::string> restored;
  std::vector<std::string> failed; // "<runtime>/<id>: why"
};

quiesce_report quiesce_sandboxes(runtime_set& runtimes, const std::string& file);
restore_report restore_sandboxes(runtime_set& runtimes, const std::string& file);

} // namespace sandboxd::node
