#include "api/rpc_error.hpp"

namespace sandboxd::api {

kj::Exception to_exception(const error& e) {
  const auto type = e.code == errc::resource_exhausted || e.code == errc::unavailable
                      ? kj::Exception::Type::OVERLOADED
                      : kj::Exception::Type::FAILED;
  const auto text = to_string(e.code) + ": " + e.message;
  return kj::Exception(type, __FILE__, __LINE__, kj::heapString(text.data(), text.size()));
}

error from_exception(const kj::Exception& e) {
  std::string text(e.getDescription().cStr());
  // A server-side exception arrives as "remote exception: <description>".
  constexpr std::string_view k_remote = "remote exception: ";
  if (text.rfind(k_remote, 0) == 0)
    text.erase(0, k_remote.size());
  const auto colon = text.find(": ");
  if (colon != std::string::npos && e.getType() != kj::Exception::Type::DISCONNECTED)
    if (auto code = parse_errc(std::string_view(text).substr(0, colon)))
      return error{*code, text.substr(colon + 2)};
  if (e.getType() == kj::Exception::Type::DISCONNECTED)
    return error{errc::unavailable, "the connection to sandboxd was lost (" + text +
                                      "); check that the daemon runs, then retry"};
  return error{errc::unavailable, text};
}

void throw_error(const error& e) {
  kj::throwFatalException(to_exception(e));
}

} // namespace sandboxd::api
