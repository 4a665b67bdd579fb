#include "node/runtime_quiesce.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

namespace sandboxd::node {
namespace {

// Writes `text` to `path` durably: a temporary file, fsynced, renamed, directory fsynced.
void write_durably(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".next";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    throw std::runtime_error("cannot write " + tmp + ": " + std::strerror(errno));
  const bool ok =
    ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

} // namespace

quiesce_report quiesce_sandboxes(runtime_set& runtimes, const std::string& file) {
  quiesce_report report;
  std::vector<std::pair<events::runtime_kind, std::string>> running;
  for (auto kind : runtimes.kinds()) {
    auto listed = runtimes.find(kind)->list();
    if (!listed) {
      report.failed.push_back(events::to_string(kind) + ": " + listed.err().message);
      continue;
    }
    for (const auto& s : listed.value()) {
      const std::string name = events::to_string(kind) + "/" + s.id;
      if (s.status == runtime::sandbox_status::running)
        running.emplace_back(kind, s.id);
      else if (s.status == runtime::sandbox_status::paused_memory)
        report.kept.push_back(name);
    }
  }
  if (running.empty())
    return report;
  std::string text;
  for (const auto& [kind, id] : running)
    text += events::to_string(kind) + " " + id + "\n";
  write_durably(file, text);
  for (const auto& [kind, id] : running) {
    const std::string name = events::to_string(kind) + "/" + id;
    auto p = runtimes.find(kind)->pause(id, runtime::pause_mode::filesystem);
    if (p)
      report.stopped.push_back(name);
    else
      report.failed.push_back(name + ": " + p.err().message);
  }
  return report;
}

restore_report restore_sandboxes(runtime_set& runtimes, const std::string& file) {
  restore_report report;
  std::ifstream in(file);
  if (!in)
    return report;
  std::string kind_name, id;
  while (in >> kind_name >> id) {
    const std::string name = kind_name + "/" + id;
    auto kind = parse_runtime_kind(kind_name);
    runtime::driver* d = kind ? runtimes.find(*kind) : nullptr;
    if (!d) {
      report.failed.push_back(name + ": this node no longer holds runtime " + kind_name);
      continue;
    }
    auto r = d->resume(id);
    if (r) {
      report.restored.push_back(name);
      continue;
    }
    auto i = d->inspect(id);
    if (i && i->status == runtime::sandbox_status::running)
      report.restored.push_back(name);
    else if (r.code() != runtime::errc::not_found)
      report.failed.push_back(name + ": " + r.err().message);
  }
  in.close();
  std::filesystem::remove(file);
  return report;
}

} // namespace sandboxd::node
