#include "cli/connection.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace sandboxd::cli {
namespace {

std::string trimmed(std::string s) {
  while (!s.empty() &&
         (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t'))
    s.pop_back();
  return s;
}

} // namespace

environment environment::process() {
  environment e;
  e.get = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (!v || !*v)
      return std::nullopt;
    return std::string(v);
  };
  e.read_file = [](const std::string& path) -> std::optional<std::string> {
    std::ifstream in(path, std::ios::binary);
    if (!in)
      return std::nullopt;
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  return e;
}

result<api::client_options> resolve_connection(const connection_flags& flags,
                                               const environment& env) {
  api::client_options o;
  if (!flags.addr.empty())
    o.address = flags.addr;
  else if (auto a = env.get("SANDBOXD_ADDR"))
    o.address = *a;
  else
    o.address = k_default_addr;

  auto from_file = [&](const std::string& path,
                       const std::string& named_by) -> result<std::string> {
    auto content = env.read_file(path);
    if (!content)
      return make_error(errc::invalid_argument, "cannot read the token file " + path + " (" +
                                                  named_by + "); check the path and its mode");
    auto t = trimmed(*content);
    if (t.empty())
      return make_error(errc::invalid_argument,
                        "the token file " + path + " (" + named_by + ") is empty");
    return t;
  };
  if (!flags.token.empty()) {
    o.token = flags.token;
  } else if (!flags.token_file.empty()) {
    auto t = from_file(flags.token_file, "--token-file");
    if (!t)
      return t.err();
    o.token = *t;
  } else if (auto t = env.get("SANDBOXD_TOKEN")) {
    o.token = *t;
  } else if (auto f = env.get("SANDBOXD_TOKEN_FILE")) {
    auto t = from_file(*f, "SANDBOXD_TOKEN_FILE");
    if (!t)
      return t.err();
    o.token = *t;
  } else if (auto content = env.read_file(k_default_token_file)) {
    o.token = trimmed(*content);
  }
  if (o.token.empty())
    return make_error(errc::invalid_argument,
                      "no token: pass --token or --token-file, or set SANDBOXD_TOKEN (the "
                      "default, " +
                        std::string(k_default_token_file) +
                        ", is what sandboxd makes in its data directory ./var)");

  if (!flags.tls_ca.empty())
    o.tls_trusted_file = flags.tls_ca;
  else if (auto ca = env.get("SANDBOXD_TLS_CA"))
    o.tls_trusted_file = *ca;
  return o;
}

} // namespace sandboxd::cli
