#include "e2b/connect_protocol.hpp"

#include <nlohmann/json.hpp>

namespace sandboxd::e2b {

namespace {

constexpr std::uint8_t k_compressed = 0x01;
constexpr std::uint8_t k_end_stream = 0x02;
constexpr std::size_t k_header_bytes = 5;

nlohmann::json error_object(const connect_error& e) {
  nlohmann::json j;
  j["code"] = std::string(wire_name(e.code));
  j["message"] = e.message;
  return j;
}

std::string dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace

std::string_view wire_name(connect_code code) {
  switch (code) {
  case connect_code::canceled:
    return "canceled";
  case connect_code::unknown:
    return "unknown";
  case connect_code::invalid_argument:
    return "invalid_argument";
  case connect_code::deadline_exceeded:
    return "deadline_exceeded";
  case connect_code::not_found:
    return "not_found";
  case connect_code::already_exists:
    return "already_exists";
  case connect_code::permission_denied:
    return "permission_denied";
  case connect_code::resource_exhausted:
    return "resource_exhausted";
  case connect_code::failed_precondition:
    return "failed_precondition";
  case connect_code::aborted:
    return "aborted";
  case connect_code::out_of_range:
    return "out_of_range";
  case connect_code::unimplemented:
    return "unimplemented";
  case connect_code::internal:
    return "internal";
  case connect_code::unavailable:
    return "unavailable";
  case connect_code::data_loss:
    return "data_loss";
  case connect_code::unauthenticated:
    return "unauthenticated";
  }
  return "unknown";
}

int http_status(connect_code code) {
  // The protocol's table (connectrpc.com/docs/protocol, "Error Codes").
  switch (code) {
  case connect_code::canceled:
    return 499;
  case connect_code::invalid_argument:
  case connect_code::out_of_range:
    return 400;
  case connect_code::deadline_exceeded:
    return 504;
  case connect_code::not_found:
    return 404;
  case connect_code::already_exists:
  case connect_code::aborted:
    return 409;
  case connect_code::permission_denied:
    return 403;
  case connect_code::resource_exhausted:
    return 429;
  case connect_code::failed_precondition:
    return 412;
  case connect_code::unimplemented:
    return 501;
  case connect_code::unavailable:
    return 503;
  case connect_code::unauthenticated:
    return 401;
  case connect_code::unknown:
  case connect_code::internal:
  case connect_code::data_loss:
    return 500;
  }
  return 500;
}

connect_error to_connect(const error& e) {
  auto code = connect_code::internal;
  switch (e.code) {
  case errc::not_found:
    code = connect_code::not_found;
    break;
  case errc::conflict:
    code = connect_code::failed_precondition;
    break;
  case errc::permission_denied:
    code = connect_code::permission_denied;
    break;
  case errc::invalid_argument:
  case errc::not_a_directory:
  case errc::is_a_directory:
  case errc::too_large:
    code = connect_code::invalid_argument;
    break;
  case errc::resource_exhausted:
    code = connect_code::resource_exhausted;
    break;
  case errc::unavailable:
    code = connect_code::unavailable;
    break;
  case errc::internal:
    code = connect_code::internal;
    break;
  }
  return {code, e.message};
}

std::string error_body(const connect_error& e) {
  return dump(error_object(e));
}

std::string envelope(std::string_view message) {
  std::string out;
  out.reserve(k_header_bytes + message.size());
  out.push_back(0);
  const auto n = static_cast<std::uint32_t>(message.size());
  out.push_back(static_cast<char>(n >> 24));
  out.push_back(static_cast<char>(n >> 16));
  out.push_back(static_cast<char>(n >> 8));
  out.push_back(static_cast<char>(n));
  out.append(message);
  return out;
}

std::string end_of_stream(const std::optional<connect_error>& failure) {
  nlohmann::json j = nlohmann::json::object();
  if (failure)
    j["error"] = error_object(*failure);
  auto out = envelope(dump(j));
  out[0] = static_cast<char>(k_end_stream);
  return out;
}

bool envelope_reader::fail(connect_code code, std::string message) {
  failure_ = connect_error{code, std::move(message)};
  header_.clear();
  body_.clear();
  return false;
}

bool envelope_reader::feed(std::string_view bytes, std::vector<message>& out) {
  if (failure_)
    return false;
  while (!bytes.empty()) {
    if (ended_)
      return fail(connect_code::invalid_argument,
                  "the request stream has bytes after its end-of-stream envelope");
    if (!in_body_) {
      const auto take = std::min(k_header_bytes - header_.size(), bytes.size());
      header_.append(bytes.substr(0, take));
      bytes.remove_prefix(take);
      if (header_.size() < k_header_bytes)
        return true;
      flags_ = static_cast<std::uint8_t>(header_[0]);
      body_length_ = (std::size_t{static_cast<unsigned char>(header_[1])} << 24) |
                     (std::size_t{static_cast<unsigned char>(header_[2])} << 16) |
                     (std::size_t{static_cast<unsigned char>(header_[3])} << 8) |
                     std::size_t{static_cast<unsigned char>(header_[4])};
      header_.clear();
      if (flags_ & k_compressed)
        return fail(connect_code::invalid_argument,
                    "a compressed envelope; this endpoint takes uncompressed messages only");
      if ((flags_ & ~(k_compressed | k_end_stream)) != 0)
        return fail(connect_code::invalid_argument,
                    "an envelope with unknown flags " + std::to_string(flags_));
      if (body_length_ > max_message_)
        return fail(connect_code::resource_exhausted,
                    "an envelope of " + std::to_string(body_length_) + " bytes; at most " +
                      std::to_string(max_message_) + " are accepted");
      in_body_ = true;
      body_.clear();
      body_.reserve(body_length_);
    }
    const auto take = std::min(body_length_ - body_.size(), bytes.size());
    body_.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    if (body_.size() == body_length_) {
      in_body_ = false;
      const bool end = (flags_ & k_end_stream) != 0;
      ended_ = ended_ || end;
      out.push_back(message{end, std::move(body_)});
      body_.clear();
    }
  }
  return true;
}

bool envelope_reader::finish() {
  if (failure_)
    return false;
  if (in_body_ || !header_.empty())
    return fail(connect_code::invalid_argument,
                "the request stream ended inside an envelope (" +
                  std::to_string(in_body_ ? k_header_bytes + body_.size() : header_.size()) +
                  " bytes of it)");
  return true;
}

std::optional<std::int64_t> parse_timeout_ms(std::string_view header) {
  if (header.empty() || header.size() > 10)
    return std::nullopt;
  std::int64_t v = 0;
  for (char c : header) {
    if (c < '0' || c > '9')
      return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

} // namespace sandboxd::e2b
