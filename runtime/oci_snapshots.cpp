// The OCI driver's snapshots (driver.hpp snapshot, remove_snapshot, list_snapshots): read-only
// btrfs snapshots of a sandbox's layer subvolume in the layer pool (layer_pool.hpp), taken with
// the sandbox's processes frozen by the cgroup freezer (the runtime's `pause`) when it runs.
#include "runtime/names.hpp"
#include "runtime/oci_driver.hpp"

#include <cerrno>
#include <system_error>

namespace sandboxd::runtime {

outcome<snapshot_info> oci_driver::snapshot(const std::string& id, const std::string& snap) {
  if (auto c = check_sandbox_id(id); !c)
    return c.err();
  if (auto c = check_snapshot_id(snap); !c)
    return c.err();
  auto g = locks_.lock(id);
  return guard_faults("snapshot sandbox " + id, [&]() -> outcome<snapshot_info> {
    auto r = find_record(options_.data_dir, id);
    if (!r)
      return r.err();
    if (r->id_base == 0 || !layers_.exists(id))
      return make_error(errc::invalid_argument,
                        "sandbox " + id +
                          " was made before layers were subvolumes; it cannot be snapshotted");
    if (layers_.snapshot_exists(snap))
      return make_error(errc::conflict, "snapshot " + snap + " exists already; use a new id");
    refresh_status(r.value());
    // Running: frozen for the instant, so that no process is between two writes of a change
    // it makes (the kernel flushes the layer's dirty data into the snapshot itself).
    const bool freeze = r->info.status == sandbox_status::running;
    if (freeze) {
      agents_.freeze(id);
      if (auto c = cli_step(id, "pause", {"pause", cid(id)}); !c) {
        agents_.thaw(id);
        return c.err();
      }
    }
    std::optional<std::system_error> failed;
    try {
      layers_.snapshot(id, snap);
    } catch (const std::system_error& e) {
      failed = e;
    }
    if (freeze) {
      auto thawed = cli_step(id, "resume", {"resume", cid(id)});
      agents_.thaw(id);
      if (!thawed && !failed) {
        layers_.remove_snapshot(snap); // not taken, as far as anyone is told
        return thawed.err();
      }
    }
    if (failed) {
      if (failed->code().value() == EDQUOT || failed->code().value() == ENOSPC)
        return make_error(errc::resource_exhausted, "the layer pool has no room for snapshot " +
                                                      snap + " of sandbox " + id +
                                                      "; delete snapshots or sandboxes");
      throw *failed;
    }
    snapshot_info out;
    auto q = layers_.snapshot_usage(snap); // after one commit of the pool, for both counts
    out.layer_bytes = layers_.usage(id, false);
    out.referenced_bytes = q.referenced;
    out.exclusive_bytes = q.exclusive;
    return out;
  });
}

outcome<void> oci_driver::remove_snapshot(const std::string& snap) {
  if (auto c = check_snapshot_id(snap); !c)
    return c.err();
  return guard_faults("remove snapshot " + snap, [&]() -> outcome<void> {
    layers_.remove_snapshot(snap);
    return {};
  });
}

outcome<std::vector<std::string>> oci_driver::list_snapshots() {
  return guard_faults("list snapshots", [&]() -> outcome<std::vector<std::string>> {
    std::vector<std::string> out;
    for (auto& s : layers_.snapshots())
      if (is_snapshot_id(s))
        out.push_back(std::move(s));
    return out;
  });
}

} // namespace sandboxd::runtime
