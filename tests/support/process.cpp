#include "tests/support/process.hpp"

#include <arpa/inet.h>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <netinet/in.h>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/wait.h>
#include <system_error>
#include <unistd.h>

namespace sandboxd::test {

command_result run_shell(const std::string& command) {
  command_result r;
  std::string wrapped = "{ " + command + "\n} 2>&1";
  FILE* f = ::popen(wrapped.c_str(), "r");
  if (f == nullptr)
    throw std::system_error(errno, std::generic_category(), "popen " + command);
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0)
    r.output.append(buf.data(), n);
  int status = ::pclose(f);
  if (status != -1 && WIFEXITED(status))
    r.exit_code = WEXITSTATUS(status);
  return r;
}

std::string check_shell(const std::string& command) {
  auto r = run_shell(command);
  if (r.exit_code != 0)
    throw std::runtime_error("command failed (exit " + std::to_string(r.exit_code) +
                             "): " + command + "\n" + r.output);
  return r.output;
}

pid_t spawn_logged(const std::vector<std::string>& args, const std::string& output_path,
                   bool append, const std::string& cwd) {
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (auto& a : copy)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(output_path.c_str(), flags, 0644);
    if (fd < 0)
      ::_exit(126);
    ::dup2(fd, 1); // dup2 clears O_CLOEXEC on the copies
    ::dup2(fd, 2);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0)
      ::_exit(126);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  if (pid < 0)
    throw std::system_error(errno, std::generic_category(), "fork for " + args.front());
  return pid;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    throw std::system_error(errno, std::generic_category(), "socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int e = errno;
    ::close(fd);
    throw std::system_error(e, std::generic_category(), "bind port 0");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string source_dir() {
  return source_tree();
}

} // namespace sandboxd::test
