#include "tests/support/node_cleanup.hpp"

#include "tests/support/process.hpp"

namespace sandboxd::test {

std::string node_cleanup_command(const std::string& dir, const std::vector<std::string>& entries) {
  std::string quoted;
  for (const auto& e : entries)
    quoted += " " + shell_quote(e);
  // Sandboxes that outlive a daemon keep mounts at the entries, whose dentries are the data
  // directory's, so `rm -rf` would meet EBUSY below them: unmount first.
  return "d=" + shell_quote(dir) +
         "; for rt in crun runsc; do s=$d/data/runtimes/$rt/state/$rt; [ -d \"$s\" ] || continue; "
         "for id in $($rt --root=\"$s\" list --quiet); do unshare -m sh -c 'umount "
         "/sys/fs/cgroup/unified 2>/dev/null; $0 --root=\"$1\" delete --force \"$2\"' $rt \"$s\" "
         "\"$id\"; done; done >/dev/null 2>&1; for t in \"$d\"" +
         quoted +
         "; do for p in /proc/[0-9]*; do case \"$(readlink $p/cwd)\" in \"$t\"/*) kill -9 "
         "${p#/proc/} 2>/dev/null;; esac; done; done; for t in" +
         quoted +
         " \"$d\"; do awk -v t=\"$t\" '$5 == t || index($5, t \"/\") == 1 {print $5}' "
         "/proc/self/mountinfo | sort -r | while read m; do umount -l \"$m\"; done; done; for t "
         "in" +
         quoted + "; do rmdir \"$t\" 2>/dev/null; done; rm -rf \"$d\"";
}

} // namespace sandboxd::test
