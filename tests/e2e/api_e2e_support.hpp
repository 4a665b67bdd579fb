// api_e2e_support — what the C++-client end-to-end suites share: a sandboxd on the log under
// test (the file log, or with SANDBOXD_E2E_LOG=kafka in the environment a fresh topic on the
// shared real broker; the ctest entries *_file and *_kafka run one binary each way),
// a tokens file with two plain tenants and the development token as admin, a connected
// api::client per token, and checks that a call answered a value or a given error code.
#pragma once

#include "api/client.hpp"
#include "base/sha256.hpp"
#include "runtime/data_entry.hpp"
#include "tests/e2e/e2e_support.hpp"

#include "tests/support/kafka_broker.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace sandboxd::test {

namespace api = sandboxd::api;

// Tenants of the tokens file: "acme" and "globex" hold the sandboxes scope only.
inline const std::string k_token_acme = "e2e-token-of-acme-0123456789abcdef";
inline const std::string k_token_globex = "e2e-token-of-globex-0123456789abcdef";

// A tokens file (TOML) under `dir` granting the two tenants above; its path.
inline std::string write_tokens_file(const std::string& dir) {
  const std::string path = dir + "/tokens.toml";
  std::ofstream out(path);
  for (const auto& [token, tenant] : {std::pair{k_token_acme, std::string("acme")},
                                      std::pair{k_token_globex, std::string("globex")}})
    out << "[[token]]\nsha256 = \"" << to_hex(sha256_of(token)) << "\"\ntenant = \"" << tenant
        << "\"\nprincipal = \"ci@" << tenant << "\"\nscopes = [\"sandboxes\"]\n\n";
  return path;
}

// The flags that put the daemon's event log on the log under test.
inline bool e2e_on_kafka() {
  const char* log = std::getenv("SANDBOXD_E2E_LOG");
  return log && std::string(log) == "kafka";
}
inline std::vector<std::string> log_flags() {
  if (!e2e_on_kafka())
    return {};
  return {"--event-log",         "kafka",
          "--kafka-brokers",     shared_kafka_bootstrap(),
          "--kafka-topic",       unique_name("e2e-"),
          "--kafka-replication", "1",
          "--kafka-min-insync",  "1"};
}

// Runtimes the daemon holds: crun, and runsc where it can run here.
inline bool runsc_runs() {
  return !node::runtime_unavailable(events::runtime_kind::runsc).has_value();
}
inline std::vector<std::string> runtime_flags() {
  return {"--runtime", runsc_runs() ? "crun,runsc" : "crun", "--default-runtime", "crun"};
}

inline api::client connect(const daemon_process& d, const std::string& token) {
  auto c = api::client::connect({d.address(), token});
  if (!c.ok())
    BOOST_FAIL("connect to " << d.address() << ": " << c.err().message);
  return std::move(c).value();
}

// The value of a call that must succeed.
// (Boost.Test evaluates a message even when its check passes: the error is read only on
// failure.)
template <class T>
T must(result<T> r, const std::string& what) {
  if (!r.ok())
    BOOST_FAIL(what << ": " << to_string(r.code()) << ": " << r.err().message);
  return std::move(r).value();
}
inline void must(result<void> r, const std::string& what) {
  if (!r.ok())
    BOOST_FAIL(what << ": " << to_string(r.code()) << ": " << r.err().message);
}

// The error of a call that must fail with `code`.
template <class R>
error must_fail(const R& r, errc code, const std::string& what) {
  if (r.ok())
    BOOST_FAIL(what << " succeeded; expected " << to_string(code));
  BOOST_TEST(r.code() == code, what << ": " << to_string(r.code()) << ": " << r.err().message);
  return r.err();
}

inline api::create_options crun_sandbox(std::uint32_t memory_mib = 128,
                                        const std::string& runtime = "crun") {
  api::create_options o;
  o.runtime = runtime;
  o.limits.memory_mib = memory_mib;
  return o;
}

struct shell_result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// `sh -c script` in the sandbox, its output collected.
inline result<shell_result> shell(api::client& c, const std::string& id,
                                  const std::string& script) {
  api::exec_options o;
  o.argv = {"sh", "-c", script};
  shell_result s;
  auto r = c.exec(id, o, [&](api::output_stream which, std::string_view bytes) {
    (which == api::output_stream::out ? s.out : s.err).append(bytes);
  });
  if (!r.ok())
    return r.err();
  s.exit_code = r.value().exit_code;
  return s;
}

inline shell_result must_shell(api::client& c, const std::string& id, const std::string& script) {
  auto s = must(shell(c, id, script), "exec sh -c '" + script + "'");
  BOOST_REQUIRE_MESSAGE(s.exit_code == 0,
                        "sh -c '" << script << "' exited " << s.exit_code << ": " << s.err);
  return s;
}

inline result<std::string> read_all(api::client& c, const std::string& id,
                                    const std::string& path) {
  std::string content;
  auto r = c.read_file(id, path, [&](std::string_view b) { content.append(b); });
  if (!r.ok())
    return r.err();
  return content;
}

inline result<api::file_digest> write_all(api::client& c, const std::string& id,
                                          const std::string& path, const std::string& content) {
  bool sent = false;
  return c.write_file(id, path, 0644, [&](std::string& chunk) {
    if (sent)
      return api::source_step::end;
    chunk = content;
    sent = true;
    return api::source_step::chunk;
  });
}

// The pool's snapshot directory of `runtime`, as the daemon's mount namespace shows it: below
// the runtime's data directory, or its entry (runtime/data_entry.hpp) when it works through one.
inline std::string pool_snapshots(const daemon_process& d, const std::string& runtime) {
  const std::string root = "/proc/" + std::to_string(d.pid()) + "/root";
  const auto data = std::filesystem::weakly_canonical(d.data() + "/runtimes/" + runtime).string();
  for (const auto& at : {data, runtime::entry_path(data, "/run/sandboxd")}) {
    struct stat st {};
    if (!at.empty() && ::stat((root + at + "/layers/.snapshots").c_str(), &st) == 0)
      return root + at + "/layers/.snapshots";
  }
  return root + data + "/layers/.snapshots";
}

// VmRSS of process `pid` in KiB (0 when it is gone).
inline std::uint64_t rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stoull(line.substr(6));
  return 0;
}

} // namespace sandboxd::test
