#include "actors/state_codec.hpp"

#include <cstring>

namespace sandboxd::actors {
namespace {

void put_u64(std::string& out, std::uint64_t v) {
  char b[8];
  std::memcpy(b, &v, 8);
  out.append(b, 8);
}
void put_str(std::string& out, std::string_view s) {
  put_u64(out, s.size());
  out.append(s);
}
void put_time(std::string& out, events::time_point t) {
  put_u64(out, static_cast<std::uint64_t>(t.time_since_epoch().count()));
}

struct reader {
  std::string_view in;
  bool ok = true;

  std::uint64_t u64() {
    if (in.size() < 8) {
      ok = false;
      return 0;
    }
    std::uint64_t v;
    std::memcpy(&v, in.data(), 8);
    in.remove_prefix(8);
    return v;
  }
  std::string str() {
    const std::uint64_t n = u64();
    if (!ok || n > in.size()) {
      ok = false;
      return {};
    }
    std::string s(in.substr(0, n));
    in.remove_prefix(n);
    return s;
  }
  events::time_point time() {
    return events::time_point(events::nanoseconds(static_cast<std::int64_t>(u64())));
  }
};

} // namespace

void encode_state(const recovered_sandbox& r, std::string& out) {
  const auto& s = r.state;
  put_str(out, s.sandbox_id);
  put_str(out, s.tenant);
  put_u64(out, static_cast<std::uint64_t>(s.status));
  put_u64(out, s.sequence);
  events::event spec;
  spec.sandbox_id = s.sandbox_id;
  spec.sequence = 1; // the codec requires one; only the payload is read back
  spec.body = s.spec;
  put_str(out, events::encode(spec));
  put_u64(out, static_cast<std::uint64_t>(s.pause_mode));
  put_time(out, s.created_at);
  put_time(out, s.status_since);
  put_time(out, s.last_activity_at);
  put_u64(out, s.execs_in_flight.size());
  for (const auto& e : s.execs_in_flight)
    put_str(out, e);
  put_u64(out, s.writable_layer_bytes);
  put_u64(out, static_cast<std::uint64_t>(s.failed_step));
  put_str(out, s.failure_reason);
  put_u64(out, r.offsets.size());
  for (auto o : r.offsets)
    put_u64(out, static_cast<std::uint64_t>(o));
  // Fields added later follow the offsets: a snapshot written before them ends here.
  put_u64(out, s.file_ops_in_flight.size());
  for (const auto& o : s.file_ops_in_flight) {
    put_str(out, o.op_id);
    put_u64(out, static_cast<std::uint64_t>(o.kind));
  }
  put_u64(out, s.redacted ? 1 : 0);
  put_u64(out, s.connections_open.size());
  for (const auto& c : s.connections_open)
    put_str(out, c);
}

std::optional<recovered_sandbox> decode_state(std::string_view bytes) {
  reader in{bytes};
  recovered_sandbox r;
  auto& s = r.state;
  s.sandbox_id = in.str();
  s.tenant = in.str();
  const auto status = in.u64();
  if (status > static_cast<std::uint64_t>(sandbox_status::claiming)) // the last status
    return std::nullopt;
  s.status = static_cast<sandbox_status>(status);
  s.sequence = in.u64();
  const std::string spec_bytes = in.str();
  if (!in.ok)
    return std::nullopt;
  auto spec = events::decode(spec_bytes);
  if (!spec.ok() || !std::holds_alternative<events::created>(spec.get().body))
    return std::nullopt;
  s.spec = std::get<events::created>(spec.get().body);
  s.pause_mode = static_cast<events::pause_mode>(in.u64());
  s.created_at = in.time();
  s.status_since = in.time();
  s.last_activity_at = in.time();
  const auto execs = in.u64();
  if (!in.ok || execs > in.in.size() / 8)
    return std::nullopt;
  for (std::uint64_t i = 0; i < execs && in.ok; ++i)
    s.execs_in_flight.push_back(in.str());
  s.writable_layer_bytes = in.u64();
  s.failed_step = static_cast<events::runtime_step>(in.u64());
  s.failure_reason = in.str();
  const auto offsets = in.u64();
  if (!in.ok || offsets > in.in.size() / 8)
    return std::nullopt;
  r.offsets.reserve(offsets);
  for (std::uint64_t i = 0; i < offsets; ++i)
    r.offsets.push_back(static_cast<std::int64_t>(in.u64()));
  if (in.ok && !in.in.empty()) {
    const auto ops = in.u64();
    if (!in.ok || ops > in.in.size() / 8)
      return std::nullopt;
    for (std::uint64_t i = 0; i < ops && in.ok; ++i) {
      auto op_id = in.str();
      s.file_ops_in_flight.push_back(
        {std::move(op_id), static_cast<events::file_op_kind>(in.u64())});
    }
  }
  if (in.ok && !in.in.empty())
    s.redacted = in.u64() != 0;
  if (in.ok && !in.in.empty()) {
    const auto conns = in.u64();
    if (!in.ok || conns > in.in.size() / 8)
      return std::nullopt;
    for (std::uint64_t i = 0; i < conns && in.ok; ++i)
      s.connections_open.push_back(in.str());
  }
  if (!in.ok || !in.in.empty())
    return std::nullopt;
  return r;
}

} // namespace sandboxd::actors
