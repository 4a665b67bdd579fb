#include "runtime/sandbox_record.hpp"

#include "runtime/beneath.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>
#include <unistd.h>

namespace sandboxd::runtime {
namespace {

const char* status_names[] = {"created", "running", "paused_filesystem", "paused_memory",
                              "stopped"};

std::optional<sandbox_status> parse_status(const std::string& s) {
  for (int i = 0; i < 5; ++i)
    if (s == status_names[i])
      return static_cast<sandbox_status>(i);
  return std::nullopt;
}

} // namespace

const char* to_string(sandbox_status s) {
  return status_names[static_cast<int>(s)];
}

const char* to_string(pause_mode m) {
  return m == pause_mode::filesystem ? "filesystem" : "memory";
}

std::string sandbox_dir(const std::string& data_dir, const std::string& id) {
  require_plain_component(id, "sandbox id");
  return data_dir + "/sandboxes/" + id;
}

unique_fd open_sandbox_dir(const std::string& data_dir, const std::string& id) {
  require_plain_component(id, "sandbox id");
  unique_fd top(::open(data_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!top)
    throw std::system_error(errno, std::generic_category(), "open " + data_dir);
  return open_beneath(top.get(), "sandboxes/" + id, O_PATH | O_DIRECTORY | O_NOFOLLOW);
}

void save_record(const std::string& data_dir, const sandbox_record& r, record_write how) {
  const auto& l = r.info.limits;
  nlohmann::json j = {
    {"id", r.info.id},
    {"template", r.info.template_name},
    {"status", to_string(r.info.status)},
    {"template_dir", r.template_dir},
    {"layers", r.layers},
    {"id_base", r.id_base},
    {"limits",
     {{"memory_bytes", l.memory_bytes},
      {"cpu_millis", l.cpu_millis},
      {"pids", l.pids},
      {"max_output_bytes", l.max_output_bytes},
      {"max_file_bytes", l.max_file_bytes},
      {"disk_bytes", l.disk_bytes},
      {"max_dir_entries", l.max_dir_entries}}},
    {"env", r.env},
  };
  if (const auto& k = r.info.link)
    j["link"] = {{"interface", k->interface},
                 {"host_address", k->host_address},
                 {"sandbox_address", k->sandbox_address},
                 {"netns_path", k->netns_path},
                 {"sandbox_address6", k->sandbox_address6},
                 {"tenant", k->tenant},
                 {"slot", r.link_slot}};
  if (r.agent)
    j["init"] = "agent";
  unique_fd dir = open_sandbox_dir(data_dir, r.info.id);
  if (!dir)
    throw std::system_error(errno, std::generic_category(),
                            "open " + sandbox_dir(data_dir, r.info.id));
  // An update writes the other file, then swaps the two names in one step: no inode
  // is made or freed (a rename over the record would do both every time).
  const char* target = how == record_write::first ? "sandbox.json" : ".sandbox.json.next";
  std::string text = j.dump(1) + "\n";
  unique_fd fd = open_beneath(dir.get(), target, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
  if (!fd)
    throw std::system_error(errno, std::generic_category(), std::string("open ") + target);
  ssize_t n = ::write(fd.get(), text.data(), text.size());
  bool ok = n == static_cast<ssize_t>(text.size());
  int e = n < 0 ? errno : ENOSPC; // a short write of a small file: the disk is full
  fd.reset();
  if (!ok)
    throw std::system_error(e, std::generic_category(), std::string("write ") + target);
  if (how == record_write::first)
    return;
  if (::renameat2(dir.get(), target, dir.get(), "sandbox.json", RENAME_EXCHANGE) == 0)
    return;
  if ((errno == EINVAL || errno == ENOSYS) &&
      ::renameat(dir.get(), target, dir.get(), "sandbox.json") == 0)
    return; // a filesystem without RENAME_EXCHANGE
  throw std::system_error(errno, std::generic_category(), std::string("rename ") + target);
}

void sync_record(const std::string& data_dir, const std::string& id) {
  unique_fd dir = open_sandbox_dir(data_dir, id);
  if (!dir)
    throw std::system_error(errno, std::generic_category(), "open " + sandbox_dir(data_dir, id));
  unique_fd fd = open_beneath(dir.get(), "sandbox.json", O_RDONLY | O_NOFOLLOW);
  if (!fd || ::fsync(fd.get()) != 0)
    throw std::system_error(errno, std::generic_category(), "fsync the record of " + id);
  // The directory: through a descriptor that can be synced (the handle above is O_PATH).
  unique_fd d = open_beneath(dir.get(), ".", O_RDONLY | O_DIRECTORY);
  if (!d || ::fsync(d.get()) != 0)
    throw std::system_error(errno, std::generic_category(), "fsync the directory of " + id);
}

record_sync::record_sync(const std::string& data_dir, const std::string& id)
    : path_(sandbox_dir(data_dir, id) + "/sandbox.json") {
  thread_ = std::thread([this] {
    int fd = ::open(path_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || ::fsync(fd) != 0)
      error_ = errno;
    if (fd >= 0)
      ::close(fd);
  });
}

record_sync::~record_sync() {
  if (thread_.joinable())
    thread_.join();
}

void record_sync::wait() {
  if (thread_.joinable())
    thread_.join();
  if (error_ != 0)
    throw std::system_error(error_, std::generic_category(), "fsync " + path_);
}

std::optional<sandbox_record> load_record(const std::string& data_dir, const std::string& id) {
  if (!is_plain_component(id))
    return std::nullopt;
  unique_fd dir = open_sandbox_dir(data_dir, id);
  unique_fd fd = dir ? open_beneath(dir.get(), "sandbox.json", O_RDONLY | O_NOFOLLOW) : unique_fd();
  if (!fd)
    return std::nullopt;
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd.get(), buf, sizeof buf)) > 0;)
    text.append(buf, static_cast<size_t>(n));
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return std::nullopt;
  sandbox_record r;
  r.info.id = j.value("id", "");
  r.info.template_name = j.value("template", "");
  r.template_dir = j.value("template_dir", "");
  r.id_base = j.value("id_base", 0u);
  if (j.contains("layers") && j["layers"].is_array())
    for (const auto& l : j["layers"])
      if (l.is_string())
        r.layers.push_back(l.get<std::string>());
  auto st = parse_status(j.value("status", ""));
  if (r.info.id != id || !st)
    return std::nullopt;
  r.info.status = *st;
  if (j.contains("link") && j["link"].is_object()) {
    const auto& k = j["link"];
    r.info.link = network_link{k.value("interface", ""),        k.value("host_address", ""),
                               k.value("sandbox_address", ""),  k.value("netns_path", ""),
                               k.value("sandbox_address6", ""), k.value("tenant", "")};
    r.link_slot = k.value("slot", 0u);
  }
  r.agent = j.value("init", "") == "agent";
  if (j.contains("env") && j["env"].is_array())
    for (const auto& e : j["env"])
      if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string())
        r.env.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
  if (j.contains("limits")) {
    const auto& l = j["limits"];
    auto& o = r.info.limits;
    o.memory_bytes = l.value("memory_bytes", o.memory_bytes);
    o.cpu_millis = l.value("cpu_millis", o.cpu_millis);
    o.pids = l.value("pids", o.pids);
    o.max_output_bytes = l.value("max_output_bytes", o.max_output_bytes);
    o.max_file_bytes = l.value("max_file_bytes", o.max_file_bytes);
    o.disk_bytes = l.value("disk_bytes", o.disk_bytes);
    o.max_dir_entries = l.value("max_dir_entries", o.max_dir_entries);
  }
  return r;
}

outcome<sandbox_record> find_record(const std::string& data_dir, const std::string& id) {
  if (auto c = check_sandbox_id(id); !c)
    return c.err();
  auto r = load_record(data_dir, id);
  if (!r)
    return make_error(errc::not_found, "sandbox " + id + " not found; create it first");
  return std::move(*r);
}

std::vector<std::string> sandbox_ids(const std::string& data_dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto& e : std::filesystem::directory_iterator(data_dir + "/sandboxes", ec))
    if (e.is_directory(ec))
      out.push_back(e.path().filename().string());
  return out;
}

} // namespace sandboxd::runtime
