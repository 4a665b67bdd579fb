// codec.cpp — event <-> Cap'n Proto `Event` record (schemas/events.capnp).
//
// A record is one unpacked Cap'n Proto message in the standard stream framing: a segment
// table (segment count - 1, then each segment's size in words, as little-endian uint32,
// padded to 8 bytes) followed by the segments. An event that fits the 8 KiB scratch segment
// is one segment; a larger one spans several.
#include "events/event.hpp"

#include "schemas/events.capnp.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>

namespace sandboxd::events {

namespace {

namespace s = sandboxd::schema;

// --- encode ---------------------------------------------------------------------------------

capnp::Text::Reader text(const std::string& v) {
  return {v.data(), v.size()};
}

template <class To, class From>
To as(From v) {
  return static_cast<To>(static_cast<std::underlying_type_t<From>>(v));
}

void put_timeouts(s::Timeouts::Builder b, const sandbox_timeouts& t) {
  b.setIdleTimeoutNs(t.idle_timeout.count());
  b.setIdleAction(as<s::IdleAction>(t.on_idle));
  b.setIdlePauseMode(as<s::PauseMode>(t.idle_pause_mode));
  b.setMaxLifetimeNs(t.max_lifetime.count());
  b.setPausedRetentionNs(t.paused_retention.count());
}

void put_texts(capnp::List<capnp::Text>::Builder b, const std::vector<std::string>& v) {
  for (unsigned i = 0; i < v.size(); ++i)
    b.set(i, text(v[i]));
}

struct payload_writer {
  mutable s::Event::Payload::Builder b;

  void operator()(const unknown&) const {
    throw std::invalid_argument("an event with an unknown payload cannot be encoded");
  }
  void operator()(const created& p) const {
    auto c = b.initCreated();
    c.setTemplate(text(p.template_name));
    auto l = c.initLimits();
    l.setMemoryMib(p.limits.memory_mib);
    l.setCpuMillicores(p.limits.cpu_millicores);
    l.setPids(p.limits.pids);
    l.setDiskMib(p.limits.disk_mib);
    put_timeouts(c.initTimeouts(), p.timeouts);
    auto n = c.initNetwork();
    n.setMode(as<s::NetworkPolicy::Mode>(p.network.mode));
    if (!p.network.allowed_hosts.empty())
      put_texts(n.initAllowedHosts(p.network.allowed_hosts.size()), p.network.allowed_hosts);
    if (!p.labels.empty()) {
      auto ls = c.initLabels(p.labels.size());
      for (unsigned i = 0; i < p.labels.size(); ++i) {
        ls[i].setKey(text(p.labels[i].key));
        ls[i].setValue(text(p.labels[i].value));
      }
    }
    c.setRuntime(as<s::RuntimeKind>(p.runtime));
    c.setClientRequestId(text(p.client_request_id));
  }
  void operator()(const started&) const { b.initStarted(); }
  void operator()(const pause_requested& p) const {
    auto c = b.initPauseRequested();
    c.setMode(as<s::PauseMode>(p.mode));
    c.setReason(as<s::PauseReason>(p.reason));
  }
  void operator()(const paused& p) const {
    auto c = b.initPaused();
    c.setMode(as<s::PauseMode>(p.mode));
    c.setWritableLayerBytes(p.writable_layer_bytes);
  }
  void operator()(const resume_requested&) const { b.initResumeRequested(); }
  void operator()(const resumed&) const { b.initResumed(); }
  void operator()(const delete_requested& p) const {
    b.initDeleteRequested().setReason(as<s::DeleteReason>(p.reason));
  }
  void operator()(const deleted&) const { b.initDeleted(); }
  void operator()(const failed& p) const {
    auto c = b.initFailed();
    c.setStep(as<s::RuntimeStep>(p.step));
    c.setReason(text(p.reason));
  }
  void operator()(const exec_started& p) const {
    auto c = b.initExecStarted();
    c.setExecId(text(p.exec_id));
    put_texts(c.initArgv(p.argv.size()), p.argv);
    c.setWorkingDirectory(text(p.working_directory));
    c.setTimeoutNs(p.timeout.count());
  }
  void operator()(const exec_finished& p) const {
    auto c = b.initExecFinished();
    c.setExecId(text(p.exec_id));
    c.setExitCode(p.exit_code);
    c.setSignal(p.signal);
    c.setDurationNs(p.duration.count());
    c.setStdoutBytes(p.stdout_bytes);
    c.setStderrBytes(p.stderr_bytes);
    c.setTimedOut(p.timed_out);
  }
  void operator()(const file_written& p) const {
    auto c = b.initFileWritten();
    c.setPath(text(p.path));
    c.setBytes(p.bytes);
    c.setSha256(capnp::Data::Reader(p.sha256.data(), p.sha256.size()));
  }
  void operator()(const file_read& p) const {
    auto c = b.initFileRead();
    c.setPath(text(p.path));
    c.setBytes(p.bytes);
  }
  void operator()(const storage_sampled& p) const {
    b.initStorageSampled().setWritableLayerBytes(p.writable_layer_bytes);
  }
  void operator()(const snapshot_taken& p) const {
    auto c = b.initSnapshotTaken();
    c.setSnapshotId(text(p.snapshot_id));
    c.setWritableLayerBytes(p.writable_layer_bytes);
  }
  void operator()(const timeout_changed& p) const {
    put_timeouts(b.initTimeoutChanged().initTimeouts(), p.timeouts);
  }
  void operator()(const command_rejected& p) const {
    auto c = b.initCommandRejected();
    c.setCommand(as<s::CommandKind>(p.command));
    c.setCode(as<s::ErrorCode>(p.code));
    c.setMessage(text(p.message));
  }
};

// The builder's first segment: most events fit in it, so encoding allocates nothing but the
// output. MallocMessageBuilder zeroes what it used when it is destroyed, ready for reuse.
constexpr std::size_t k_scratch_words = 1024;
thread_local capnp::word t_scratch[k_scratch_words];

// --- decode ---------------------------------------------------------------------------------

// Traversal limit per word of input: a well-formed record is read about once; the margin
// covers zero-sized list elements, which Cap'n Proto charges as one word each.
constexpr std::uint64_t k_traversal_words_per_word = 4;
constexpr std::uint64_t k_traversal_words_min = 64;
// Our schema nests Event > Created > NetworkPolicy > List > Text: five levels.
constexpr int k_nesting_limit = 8;

// A fault in the bytes, reported as the decode error.
struct bad_record {
  std::string what;
};

std::string str(capnp::Text::Reader r) {
  return std::string(r.begin(), r.size());
}

template <class To, class From>
To open_enum(From v) {
  return static_cast<To>(static_cast<std::uint16_t>(v));
}

sandbox_timeouts get_timeouts(s::Timeouts::Reader r) {
  sandbox_timeouts t;
  t.idle_timeout = nanoseconds(r.getIdleTimeoutNs());
  t.on_idle = open_enum<idle_action>(r.getIdleAction());
  t.idle_pause_mode = open_enum<pause_mode>(r.getIdlePauseMode());
  t.max_lifetime = nanoseconds(r.getMaxLifetimeNs());
  t.paused_retention = nanoseconds(r.getPausedRetentionNs());
  return t;
}

std::vector<std::string> get_texts(capnp::List<capnp::Text>::Reader l) {
  std::vector<std::string> v;
  v.reserve(l.size());
  for (auto t : l)
    v.push_back(str(t));
  return v;
}

payload read_payload(s::Event::Payload::Reader r) {
  using W = s::Event::Payload;
  switch (r.which()) {
  case W::CREATED: {
    auto c = r.getCreated();
    created p;
    p.template_name = str(c.getTemplate());
    auto l = c.getLimits();
    p.limits = {l.getMemoryMib(), l.getCpuMillicores(), l.getPids(), l.getDiskMib()};
    p.timeouts = get_timeouts(c.getTimeouts());
    auto n = c.getNetwork();
    p.network.mode = open_enum<network_mode>(n.getMode());
    p.network.allowed_hosts = get_texts(n.getAllowedHosts());
    auto ls = c.getLabels();
    p.labels.reserve(ls.size());
    for (auto lb : ls)
      p.labels.push_back({str(lb.getKey()), str(lb.getValue())});
    p.runtime = open_enum<runtime_kind>(c.getRuntime());
    p.client_request_id = str(c.getClientRequestId());
    return p;
  }
  case W::STARTED:
    return started{};
  case W::PAUSE_REQUESTED: {
    auto c = r.getPauseRequested();
    return pause_requested{open_enum<pause_mode>(c.getMode()),
                           open_enum<pause_reason>(c.getReason())};
  }
  case W::PAUSED: {
    auto c = r.getPaused();
    return paused{open_enum<pause_mode>(c.getMode()), c.getWritableLayerBytes()};
  }
  case W::RESUME_REQUESTED:
    return resume_requested{};
  case W::RESUMED:
    return resumed{};
  case W::DELETE_REQUESTED:
    return delete_requested{open_enum<delete_reason>(r.getDeleteRequested().getReason())};
  case W::DELETED:
    return deleted{};
  case W::FAILED: {
    auto c = r.getFailed();
    return failed{open_enum<runtime_step>(c.getStep()), str(c.getReason())};
  }
  case W::EXEC_STARTED: {
    auto c = r.getExecStarted();
    return exec_started{str(c.getExecId()), get_texts(c.getArgv()), str(c.getWorkingDirectory()),
                        nanoseconds(c.getTimeoutNs())};
  }
  case W::EXEC_FINISHED: {
    auto c = r.getExecFinished();
    return exec_finished{
      str(c.getExecId()), c.getExitCode(),    c.getSignal(),  nanoseconds(c.getDurationNs()),
      c.getStdoutBytes(), c.getStderrBytes(), c.getTimedOut()};
  }
  case W::FILE_WRITTEN: {
    auto c = r.getFileWritten();
    file_written p{str(c.getPath()), c.getBytes(), {}};
    auto d = c.getSha256();
    if (d.size() != p.sha256.size())
      throw bad_record{"fileWritten.sha256 has " + std::to_string(d.size()) + " bytes, not 32"};
    std::copy(d.begin(), d.end(), p.sha256.begin());
    return p;
  }
  case W::FILE_READ: {
    auto c = r.getFileRead();
    return file_read{str(c.getPath()), c.getBytes()};
  }
  case W::STORAGE_SAMPLED:
    return storage_sampled{r.getStorageSampled().getWritableLayerBytes()};
  case W::SNAPSHOT_TAKEN: {
    auto c = r.getSnapshotTaken();
    return snapshot_taken{str(c.getSnapshotId()), c.getWritableLayerBytes()};
  }
  case W::TIMEOUT_CHANGED:
    return timeout_changed{get_timeouts(r.getTimeoutChanged().getTimeouts())};
  case W::COMMAND_REJECTED: {
    auto c = r.getCommandRejected();
    return command_rejected{open_enum<command_kind>(c.getCommand()), open_enum<errc>(c.getCode()),
                            str(c.getMessage())};
  }
  }
  return unknown{static_cast<std::uint16_t>(r.which())};
}

decoded invalid(std::string why) {
  return decoded{make_error(errc::invalid_argument, "record is not a sandboxd Event (" + why +
                                                      "); skip it and report the log position")};
}

} // namespace

std::size_t encode_to(const event& e, std::string& out) {
  std::size_t written;
  {
    capnp::MallocMessageBuilder mb(kj::arrayPtr(t_scratch, k_scratch_words));
    auto root = mb.initRoot<s::Event>();
    root.setEventId(text(e.event_id));
    root.setSandboxId(text(e.sandbox_id));
    root.setSequence(e.sequence);
    root.setTenant(text(e.tenant));
    root.setPrincipal(text(e.principal));
    root.setOccurredAtNs(e.occurred_at.time_since_epoch().count());
    root.setCorrelationId(text(e.correlation_id));
    root.setCausationId(text(e.causation_id));
    std::visit(payload_writer{root.getPayload()}, e.body);

    auto segments = mb.getSegmentsForOutput();
    std::size_t table_words = (segments.size() + 2) / 2; // count + sizes, padded to a word
    std::size_t words = table_words;
    for (auto seg : segments)
      words += seg.size();
    std::size_t start = out.size();
    written = words * sizeof(capnp::word);
    out.resize(start + written);
    char* p = out.data() + start;
    std::memset(p, 0, table_words * sizeof(capnp::word));
    auto put32 = [&p](std::uint32_t v) {
      // The stream framing is little-endian, as is every machine sandboxd runs on.
      static_assert(std::endian::native == std::endian::little);
      std::memcpy(p, &v, 4);
      p += 4;
    };
    char* table = p;
    put32(static_cast<std::uint32_t>(segments.size() - 1));
    for (auto seg : segments)
      put32(static_cast<std::uint32_t>(seg.size()));
    p = table + table_words * sizeof(capnp::word);
    for (auto seg : segments) {
      std::memcpy(p, seg.begin(), seg.size() * sizeof(capnp::word));
      p += seg.size() * sizeof(capnp::word);
    }
  }
  return written;
}

std::string encode(const event& e) {
  std::string out;
  encode_to(e, out);
  return out;
}

decoded decode(const void* data, std::size_t size) {
  if (size < sizeof(capnp::word) || size % sizeof(capnp::word) != 0)
    return invalid("size " + std::to_string(size) + " is not a positive multiple of 8");
  const std::size_t n_words = size / sizeof(capnp::word);

  // Cap'n Proto reads words in place, so unaligned input is copied to an aligned buffer.
  thread_local std::vector<capnp::word> aligned;
  const capnp::word* words = static_cast<const capnp::word*>(data);
  if (reinterpret_cast<std::uintptr_t>(data) % alignof(capnp::word) != 0) {
    aligned.resize(n_words);
    std::memcpy(aligned.data(), data, size);
    words = aligned.data();
  }

  capnp::ReaderOptions options;
  options.traversalLimitInWords =
    std::max<std::uint64_t>(k_traversal_words_min, n_words * k_traversal_words_per_word);
  options.nestingLimit = k_nesting_limit;
  try {
    capnp::FlatArrayMessageReader reader(kj::arrayPtr(words, n_words), options);
    if (reader.getEnd() != words + n_words)
      return invalid("bytes follow the message");
    auto r = reader.getRoot<s::Event>();
    event e;
    e.event_id = str(r.getEventId());
    e.sandbox_id = str(r.getSandboxId());
    e.sequence = r.getSequence();
    e.tenant = str(r.getTenant());
    e.principal = str(r.getPrincipal());
    e.occurred_at = time_point(nanoseconds(r.getOccurredAtNs()));
    e.correlation_id = str(r.getCorrelationId());
    e.causation_id = str(r.getCausationId());
    if (e.sandbox_id.empty())
      return invalid("no sandbox id");
    if (e.sequence == 0)
      return invalid("sequence 0; sequences start at 1");
    e.body = read_payload(r.getPayload());
    return decoded{std::move(e)};
  } catch (const kj::Exception& ex) {
    return invalid(std::string(ex.getDescription().cStr()));
  } catch (const bad_record& ex) {
    return invalid(ex.what);
  }
}

} // namespace sandboxd::events
