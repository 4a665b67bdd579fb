#include "runtime/agent_frame.hpp"

#include <cstring>

namespace sandboxd::runtime {
namespace {

void put_field(std::string& out, std::uint8_t tag, std::string_view value) {
  out.push_back(static_cast<char>(tag));
  put_u32(out, static_cast<std::uint32_t>(value.size()));
  out.append(value);
}

} // namespace

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_u64(std::string& out, std::uint64_t v) {
  put_u32(out, static_cast<std::uint32_t>(v));
  put_u32(out, static_cast<std::uint32_t>(v >> 32));
}

std::uint32_t get_u32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return std::uint32_t{u[0]} | std::uint32_t{u[1]} << 8 | std::uint32_t{u[2]} << 16 |
         std::uint32_t{u[3]} << 24;
}

std::uint64_t get_u64(const char* p) {
  return std::uint64_t{get_u32(p)} | std::uint64_t{get_u32(p + 4)} << 32;
}

void put_frame(std::string& out, std::uint8_t kind, std::uint32_t stream, std::string_view body) {
  put_u32(out, static_cast<std::uint32_t>(body.size()));
  out.push_back(static_cast<char>(kind));
  out.append(3, '\0');
  put_u32(out, stream);
  out.append(body);
}

std::string spawn_body(const agent_spawn& s) {
  std::string b;
  for (const auto& a : s.argv)
    put_field(b, SBA_ARG, a);
  for (const auto& e : s.env)
    put_field(b, SBA_ENV, e);
  put_field(b, SBA_CWD, s.cwd);
  std::string v;
  put_u64(v, s.timeout_ms);
  put_field(b, SBA_TIMEOUT_MS, v);
  put_field(b, SBA_STDIN_PIPE, std::string(1, s.stdin_pipe ? '\1' : '\0'));
  v.clear();
  put_u64(v, s.max_output);
  put_field(b, SBA_MAX_OUTPUT, v);
  v.clear();
  put_u32(v, s.window);
  put_field(b, SBA_WINDOW, v);
  if (s.builtin != 0)
    put_field(b, SBA_BUILTIN, std::string(1, static_cast<char>(s.builtin)));
  if (s.user) {
    v.clear();
    for (auto id : *s.user)
      put_u32(v, id);
    put_field(b, SBA_USER, v);
  }
  if (s.pty)
    put_field(b, SBA_PTY, window_body(s.pty->first, s.pty->second));
  return b;
}

std::string window_body(std::uint16_t cols, std::uint16_t rows) {
  return {static_cast<char>(cols & 0xff), static_cast<char>(cols >> 8),
          static_cast<char>(rows & 0xff), static_cast<char>(rows >> 8)};
}

frame_reader::frame_reader(std::size_t read_buffer) : buf_(read_buffer) {}

std::span<char> frame_reader::space() {
  if (body_)
    return {body_->body.data() + body_have_, body_->body.size() - body_have_};
  return {buf_.data() + have_, buf_.size() - have_};
}

std::optional<std::string> frame_reader::commit(std::size_t n,
                                                const std::function<void(agent_frame&&)>& take) {
  if (body_) {
    body_have_ += n;
    if (body_have_ < body_->body.size())
      return std::nullopt;
    agent_frame f = std::move(*body_);
    body_.reset();
    body_have_ = 0;
    take(std::move(f));
    return std::nullopt;
  }
  have_ += n;
  std::size_t at = 0;
  while (have_ - at >= SBA_HEADER_BYTES) {
    const char* h = buf_.data() + at;
    const std::uint32_t len = get_u32(h);
    if (len > SBA_MAX_BODY)
      return "a frame of " + std::to_string(len) + " bytes (at most " +
             std::to_string(SBA_MAX_BODY) + ")";
    if (h[5] != 0 || h[6] != 0 || h[7] != 0)
      return "a frame header with flags or reserved bits set";
    agent_frame f;
    f.kind = static_cast<std::uint8_t>(h[4]);
    f.stream = get_u32(h + 8);
    const std::size_t there = have_ - at - SBA_HEADER_BYTES;
    if (there >= len) {
      f.body.assign(h + SBA_HEADER_BYTES, len);
      at += SBA_HEADER_BYTES + len;
      take(std::move(f));
      continue;
    }
    if (SBA_HEADER_BYTES + len <= buf_.size())
      break; // fits the buffer once more is read
    // A body bigger than the buffer: the rest is read straight into it.
    f.body.resize(len);
    std::memcpy(f.body.data(), h + SBA_HEADER_BYTES, there);
    body_have_ = there;
    body_ = std::move(f);
    at = have_;
    break;
  }
  std::memmove(buf_.data(), buf_.data() + at, have_ - at);
  have_ -= at;
  return std::nullopt;
}

} // namespace sandboxd::runtime
