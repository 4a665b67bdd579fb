// The OCI driver's writable layer for reading (driver.hpp open_writable_layer): the upper
// directory of a filesystem-paused sandbox, whose overlay is unmounted and synced.
#include "runtime/oci_driver.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>

namespace sandboxd::runtime {

outcome<writable_layer> oci_driver::open_writable_layer(const std::string& id) {
  if (auto c = check_sandbox_id(id); !c)
    return c.err();
  auto g = locks_.lock(id);
  return guard_faults("read the writable layer of sandbox " + id, [&]() -> outcome<writable_layer> {
    auto r = find_record(options_.data_dir, id);
    if (!r)
      return r.err();
    if (r->info.status != sandbox_status::paused_filesystem)
      return make_error(errc::conflict, "sandbox " + id + " is " + to_string(r->info.status) +
                                          "; its writable layer is read while it is paused "
                                          "(filesystem)");
    const auto dirs = overlay_of(r.value());
    if (is_mount_point(dirs.target))
      return make_error(errc::conflict, "sandbox " + id +
                                          "'s root filesystem is mounted; "
                                          "its writable layer is changing");
    writable_layer out;
    out.dir.reset(::open(dirs.upper.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!out.dir)
      return make_error(errc::internal, "cannot open the writable layer " + dirs.upper + ": " +
                                          std::strerror(errno));
    out.host_id_base = r->id_base;
    return out;
  });
}

} // namespace sandboxd::runtime
