// sandbox_record — what a driver remembers of one sandbox on disk, so that `list()`
// and every call work after the process restarts: `sandboxes/<id>/sandbox.json` under
// the driver's data directory.
//
// The first record of a sandbox is written in place and then fsynced (`record_sync`,
// which the driver runs while the runtime creates the container): a sandbox whose
// create returned is on disk and listed after a power loss. Later records (every
// transition) replace it atomically without fsync: written to `.sandbox.json.next`,
// then the two names are swapped (RENAME_EXCHANGE), so no inode is made or freed.
// After a power loss a status one step old is corrected by the driver asking the
// runtime (inspect, list: no container left means `stopped`) and by the caller's own
// reconciliation from its event log.
#pragma once

#include "runtime/driver.hpp"
#include "runtime/names.hpp"
#include "runtime/unique_fd.hpp"

#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace sandboxd::runtime {

struct sandbox_record {
  sandbox_info info;
  std::string template_dir;  // the template's root filesystem (empty for hollow)
  std::uint32_t id_base = 0; // host uid and gid of the sandbox's root (id_map.hpp); 0: none
  // The environment every exec sees (create_request::env). Its values may be secrets:
  // this record (mode 0600, in a directory others cannot list) is the only file that
  // holds them.
  std::vector<std::pair<std::string, std::string>> env;
  std::uint32_t link_slot = 0; // info.link set: its slot of the driver's link range
  // The container's first process is the agent (agent_hub.hpp): execs and file changes go
  // through it. False for containers made before it, which exec through the runtime.
  bool agent = false;
  // The template's layers (layer_store.hpp), lowest first; when set, template_dir is empty
  // and the root filesystem is these layers stacked under the writable layer.
  std::vector<std::string> layers;
};

// <data_dir>/sandboxes/<id>. Throws std::invalid_argument unless `id` is one plain path
// component (names.hpp), whatever validated it before: no id can name a directory
// outside <data_dir>/sandboxes.
std::string sandbox_dir(const std::string& data_dir, const std::string& id);
// The sandbox's directory opened (O_PATH) by handle beneath the data directory (no
// symlink, no mount crossed); an invalid fd with errno set when it is missing. Records
// are read and written through it.
unique_fd open_sandbox_dir(const std::string& data_dir, const std::string& id);

enum class record_write {
  first,  // into a new sandbox's directory, in place (a torn one reads as no record)
  update, // replaces the record atomically: written to .sandbox.json.next, names swapped
};
// Neither way fsyncs; see record_sync.
void save_record(const std::string& data_dir, const sandbox_record& record, record_write how);
// Makes the record of `id` as saved last durable: fsyncs the file, then the sandbox's
// directory (an update's name swap). Throws std::system_error.
void sync_record(const std::string& data_dir, const std::string& id);
// fsyncs the record of `id` on a thread of its own, from construction until wait()
// (which throws std::system_error if it failed) or destruction (which only joins).
class record_sync {
public:
  record_sync(const std::string& data_dir, const std::string& id);
  ~record_sync();
  record_sync(const record_sync&) = delete;
  record_sync& operator=(const record_sync&) = delete;
  void wait();

private:
  int error_ = 0;
  std::string path_;
  std::thread thread_;
};
// nullopt when the sandbox has no (complete) record.
std::optional<sandbox_record> load_record(const std::string& data_dir, const std::string& id);
// The record of `id`, or not_found / invalid_argument with a message saying so.
outcome<sandbox_record> find_record(const std::string& data_dir, const std::string& id);
// The ids of every directory under <data_dir>/sandboxes.
std::vector<std::string> sandbox_ids(const std::string& data_dir);

} // namespace sandboxd::runtime
