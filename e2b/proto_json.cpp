#include "e2b/proto_json.hpp"

#include "cli/time_arg.hpp"

#include <array>
#include <chrono>
#include <limits>

namespace sandboxd::e2b {

namespace {

constexpr int k_max_depth = 32;

// Whether the brackets of `text` nest at most `limit` deep (strings skipped), so that a hostile
// document cannot make the parser or the value's destructor recurse without bound.
bool depth_within(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '{' || c == '[') {
      if (++depth > limit)
        return false;
    } else if (c == '}' || c == ']')
      --depth;
  }
  return true;
}

error wrong_kind(std::string_view field, std::string_view expected) {
  return make_error(errc::invalid_argument,
                    "field " + std::string(field) + " must be " + std::string(expected));
}

} // namespace

result<json> parse_object(std::string_view text, std::string_view what) {
  if (!depth_within(text, k_max_depth))
    return make_error(errc::invalid_argument, std::string(what) + " nests deeper than " +
                                                std::to_string(k_max_depth) + " levels");
  auto j = json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded())
    return make_error(errc::invalid_argument, std::string(what) + " is not valid JSON");
  if (!j.is_object())
    return make_error(errc::invalid_argument, std::string(what) + " must be a JSON object");
  return j;
}

const json* member(const json& object, std::string_view json_name, std::string_view proto_name) {
  if (!object.is_object())
    return nullptr;
  auto it = object.find(std::string(json_name));
  if (it == object.end() && !proto_name.empty())
    it = object.find(std::string(proto_name));
  if (it == object.end() || it->is_null())
    return nullptr;
  return &*it;
}

result<std::string> read_string(const json* v, std::string_view field) {
  if (!v)
    return std::string();
  if (!v->is_string())
    return wrong_kind(field, "a string");
  return v->get<std::string>();
}

result<bool> read_bool(const json* v, std::string_view field) {
  if (!v)
    return false;
  if (!v->is_boolean())
    return wrong_kind(field, "true or false");
  return v->get<bool>();
}

result<std::int64_t> read_int64(const json* v, std::string_view field) {
  if (!v)
    return std::int64_t{0};
  if (v->is_number_integer())
    return v->get<std::int64_t>();
  if (v->is_number_unsigned()) {
    const auto u = v->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return wrong_kind(field, "a 64-bit integer");
    return static_cast<std::int64_t>(u);
  }
  if (v->is_string()) {
    const auto& s = v->get_ref<const std::string&>();
    std::size_t i = (!s.empty() && s[0] == '-') ? 1 : 0;
    if (s.size() == i || s.size() > 20)
      return wrong_kind(field, "an integer");
    std::int64_t out = 0;
    for (; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9')
        return wrong_kind(field, "an integer");
      const int digit = s[i] - '0';
      if (out > (std::numeric_limits<std::int64_t>::max() - digit) / 10)
        return wrong_kind(field, "a 64-bit integer");
      out = out * 10 + digit;
    }
    return s[0] == '-' ? -out : out;
  }
  return wrong_kind(field, "an integer");
}

result<std::uint32_t> read_uint32(const json* v, std::string_view field) {
  auto n = read_int64(v, field);
  if (!n)
    return n.err();
  if (*n < 0 || *n > std::numeric_limits<std::uint32_t>::max())
    return wrong_kind(field, "an integer from 0 to 4294967295");
  return static_cast<std::uint32_t>(*n);
}

result<std::string> decode_base64(std::string_view text) {
  static const auto table = [] {
    std::array<int, 256> t{};
    t.fill(-1);
    const std::string_view alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (std::size_t i = 0; i < alphabet.size(); ++i)
      t[static_cast<unsigned char>(alphabet[i])] = static_cast<int>(i);
    t['-'] = 62;
    t['_'] = 63;
    return t;
  }();
  while (!text.empty() && text.back() == '=')
    text.remove_suffix(1);
  if (text.size() % 4 == 1)
    return make_error(errc::invalid_argument, "bytes are not base64 (a dangling character)");
  std::string out;
  out.reserve(text.size() / 4 * 3 + 2);
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    const int v = table[static_cast<unsigned char>(c)];
    if (v < 0)
      return make_error(errc::invalid_argument, "bytes are not base64");
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

result<std::string> read_bytes(const json* v, std::string_view field) {
  if (!v)
    return std::string();
  if (!v->is_string())
    return wrong_kind(field, "base64 text");
  auto decoded = decode_base64(v->get_ref<const std::string&>());
  if (!decoded)
    return make_error(errc::invalid_argument,
                      "field " + std::string(field) + ": " + decoded.err().message);
  return decoded;
}

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string rfc3339(std::int64_t unix_ns) {
  return cli::format_time(cli::time_point{std::chrono::nanoseconds{unix_ns}});
}

} // namespace sandboxd::e2b
