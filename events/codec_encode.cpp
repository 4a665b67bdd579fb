// codec_encode.cpp — event -> Cap'n Proto `Event` record (schemas/events.capnp).
//
// A record is one unpacked Cap'n Proto message in the standard stream framing: a segment
// table (segment count - 1, then each segment's size in words, as little-endian uint32,
// padded to 8 bytes) followed by the segments. An event that fits the 8 KiB scratch segment
// is one segment; a larger one spans several.
#include "events/event.hpp"

#include "schemas/events.capnp.h"

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <bit>
#include <cstring>
#include <stdexcept>

namespace sandboxd::events {

namespace {

namespace s = sandboxd::schema;

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
  b.setTimeoutNs(t.timeout.count());
}

capnp::Data::Reader data(const sha256_digest& d) {
  return {d.data(), d.size()};
}

// An optional digest: absent is an empty Data field.
template <class Setter>
void put_digest(const std::optional<sha256_digest>& d, Setter set) {
  if (d)
    set(data(*d));
}

void put_env(capnp::List<s::EnvVar>::Builder b, const std::vector<env_var>& env) {
  for (unsigned i = 0; i < env.size(); ++i) {
    b[i].setName(text(env[i].name));
    b[i].setValue(text(env[i].value));
    b[i].setSecret(env[i].secret);
    if (env[i].value_sha256)
      b[i].setValueSha256(data(*env[i].value_sha256));
  }
}

void put_labels(capnp::List<s::Label>::Builder b, const std::vector<label>& labels) {
  for (unsigned i = 0; i < labels.size(); ++i) {
    b[i].setKey(text(labels[i].key));
    b[i].setValue(text(labels[i].value));
  }
}

// The error of a failed operation: its code and message, or nothing (code none).
template <class Builder>
void put_failure(Builder b, const std::optional<error>& f) {
  if (!f)
    return;
  b.setErrorCode(as<s::ErrorCode>(f->code));
  b.setErrorMessage(text(f->message));
}

void put_texts(capnp::List<capnp::Text>::Builder b, const std::vector<std::string>& v) {
  for (unsigned i = 0; i < v.size(); ++i)
    b.set(i, text(v[i]));
}

void put_network(s::NetworkPolicy::Builder n, const network_policy& p) {
  n.setMode(as<s::NetworkPolicy::Mode>(p.mode));
  if (!p.allowed_hosts.empty())
    put_texts(n.initAllowedHosts(p.allowed_hosts.size()), p.allowed_hosts);
}

void put_destination(s::Destination::Builder b, const net_destination& d) {
  b.setProtocol(as<s::NetProtocol>(d.protocol));
  b.setName(text(d.name));
  b.setNameSource(as<s::NameSource>(d.source));
  b.setAddress(text(d.address));
  b.setPort(d.port);
  b.setAddressClass(text(d.address_class));
  b.setNameResolves(d.name_resolves);
}

struct template_writer {
  mutable s::TemplateEvent::Change::Builder b;

  void operator()(const template_unknown&) const {
    throw std::invalid_argument("a template event with an unknown change cannot be encoded");
  }
  void operator()(const template_created& p) const {
    auto c = b.initCreated();
    c.setSource(as<s::TemplateSource>(p.source));
    c.setDescription(text(p.description));
    put_digest(p.input_sha256, [&](auto d) { c.setInputSha256(d); });
    c.setParentId(text(p.parent_id));
  }
  void operator()(const template_layer_added& p) const {
    auto c = b.initLayerAdded();
    c.setIndex(p.index);
    c.setSha256(data(p.sha256));
    c.setBytes(p.bytes);
    c.setEntries(p.entries);
    c.setOrigin(text(p.origin));
    c.setReused(p.reused);
  }
  void operator()(const template_step_started& p) const {
    auto c = b.initStepStarted();
    c.setIndex(p.index);
    c.setInstruction(text(p.instruction));
    put_digest(p.cache_key, [&](auto d) { c.setCacheKey(d); });
  }
  void operator()(const template_step_finished& p) const {
    auto c = b.initStepFinished();
    c.setIndex(p.index);
    c.setOutcome(as<s::OpOutcome>(p.outcome));
    c.setCached(p.cached);
    c.setExitCode(p.exit_code);
    c.setDurationNs(p.duration.count());
    put_digest(p.layer, [&](auto d) { c.setLayer(d); });
    c.setOutputBytes(p.output_bytes);
    put_failure(c, p.failure);
  }
  void operator()(const template_ready& p) const {
    auto c = b.initReady();
    c.setDigest(data(p.digest));
    if (!p.layers.empty()) {
      auto ls = c.initLayers(p.layers.size());
      for (unsigned i = 0; i < p.layers.size(); ++i) {
        ls[i].setSha256(data(p.layers[i].sha256));
        ls[i].setBytes(p.layers[i].bytes);
      }
    }
    if (!p.env.empty())
      put_env(c.initEnv(p.env.size()), p.env);
    c.setWorkingDirectory(text(p.working_directory));
    c.setUser(text(p.user));
    if (!p.command.empty())
      put_texts(c.initCommand(p.command.size()), p.command);
    c.setTotalBytes(p.total_bytes);
    if (p.own_bytes)
      c.getOwn().setBytes(*p.own_bytes);
  }
  void operator()(const template_failed& p) const {
    auto c = b.initFailed();
    put_failure(c, std::optional<error>(p.failure));
  }
  void operator()(const template_deleted& p) const { b.initDeleted().setReason(text(p.reason)); }
};

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
    put_network(c.initNetwork(), p.network);
    if (!p.labels.empty())
      put_labels(c.initLabels(p.labels.size()), p.labels);
    c.setRuntime(as<s::RuntimeKind>(p.runtime));
    c.setClientRequestId(text(p.client_request_id));
    if (!p.env.empty())
      put_env(c.initEnv(p.env.size()), p.env);
    c.setFromSnapshot(text(p.from_snapshot));
    const auto& t = p.content;
    if (!t.id.empty() || t.digest || !t.layers.empty()) {
      auto r = c.initContent();
      r.setId(text(t.id));
      put_digest(t.digest, [&](auto d) { r.setDigest(d); });
      if (!t.layers.empty()) {
        auto ls = r.initLayers(t.layers.size());
        for (unsigned i = 0; i < t.layers.size(); ++i)
          ls.set(i, data(t.layers[i]));
      }
      if (!t.env.empty())
        put_env(r.initEnv(t.env.size()), t.env);
      r.setWorkingDirectory(text(t.working_directory));
      r.setUser(text(t.user));
    }
    if (!p.pool.empty())
      c.setPool(text(p.pool));
  }
  void operator()(const claim_requested& p) const {
    auto c = b.initClaimRequested();
    if (!p.labels.empty())
      put_labels(c.initLabels(p.labels.size()), p.labels);
    if (!p.env.empty())
      put_env(c.initEnv(p.env.size()), p.env);
    put_timeouts(c.initTimeouts(), p.timeouts);
    c.setClientRequestId(text(p.client_request_id));
  }
  void operator()(const claimed&) const { b.initClaimed(); }
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
  void operator()(const deleted& p) const {
    b.initDeleted().setWritableLayerBytes(p.writable_layer_bytes);
  }
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
    if (!p.env.empty())
      put_env(c.initEnv(p.env.size()), p.env);
    c.setStdinBytes(p.stdin_bytes);
    put_digest(p.stdin_sha256, [&](auto d) { c.setStdinSha256(d); });
    c.setMaxOutputBytes(p.max_output_bytes);
    c.setBackground(p.background);
    c.setUser(text(p.user));
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
    c.setOomKilled(p.oom_killed);
    c.setOutputTruncated(p.output_truncated);
    put_digest(p.stdout_sha256, [&](auto d) { c.setStdoutSha256(d); });
    put_digest(p.stderr_sha256, [&](auto d) { c.setStderrSha256(d); });
    c.setOutcome(as<s::OpOutcome>(p.outcome));
    put_failure(c, p.failure);
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
    c.setKind(as<s::FileReadKind>(p.kind));
    put_failure(c, p.failure);
    put_digest(p.sha256, [&](auto d) { c.setSha256(d); });
    c.setEntries(p.entries);
  }
  void operator()(const file_op_requested& p) const {
    auto c = b.initFileOpRequested();
    c.setOpId(text(p.op_id));
    c.setKind(as<s::FileOpKind>(p.kind));
    c.setPath(text(p.path));
    c.setToPath(text(p.to_path));
    c.setRecursive(p.recursive);
    c.setMode(p.mode);
    c.setBytes(p.bytes);
    put_digest(p.sha256, [&](auto d) { c.setSha256(d); });
  }
  void operator()(const file_op_finished& p) const {
    auto c = b.initFileOpFinished();
    c.setOpId(text(p.op_id));
    c.setKind(as<s::FileOpKind>(p.kind));
    c.setOutcome(as<s::OpOutcome>(p.outcome));
    put_failure(c, p.failure);
    c.setBytes(p.bytes);
    put_digest(p.sha256, [&](auto d) { c.setSha256(d); });
  }
  void operator()(const exec_kill_requested& p) const {
    auto c = b.initExecKillRequested();
    c.setExecId(text(p.exec_id));
    c.setSignal(p.signal);
  }
  void operator()(const redacted& p) const { b.initRedacted().setReason(text(p.reason)); }
  void operator()(const network_changed& p) const {
    put_network(b.initNetworkChanged().initNetwork(), p.network);
  }
  void operator()(const connection_opened& p) const {
    auto c = b.initConnectionOpened();
    c.setConnectionId(text(p.connection_id));
    put_destination(c.initDestination(), p.destination);
    c.setRule(text(p.rule));
  }
  void operator()(const connection_denied& p) const {
    auto c = b.initConnectionDenied();
    put_destination(c.initDestination(), p.destination);
    c.setReason(text(p.reason));
    c.setRepeats(p.repeats);
  }
  void operator()(const connection_closed& p) const {
    auto c = b.initConnectionClosed();
    c.setConnectionId(text(p.connection_id));
    c.setBytesOut(p.bytes_out);
    c.setBytesIn(p.bytes_in);
    c.setDurationNs(p.duration.count());
    c.setOutcome(as<s::OpOutcome>(p.outcome));
    c.setErrorMessage(text(p.error_message));
  }
  void operator()(const storage_sampled& p) const {
    b.initStorageSampled().setWritableLayerBytes(p.writable_layer_bytes);
  }
  void operator()(const template_event& p) const {
    auto t = b.initTemplate();
    t.setTemplateId(text(p.template_id));
    t.setName(text(p.name));
    t.setScope(as<s::TemplateScope>(p.scope));
    std::visit(template_writer{t.initChange()}, p.change);
  }

  void operator()(const snapshot_taken& p) const {
    auto c = b.initSnapshotTaken();
    c.setSnapshotId(text(p.snapshot_id));
    c.setWritableLayerBytes(p.writable_layer_bytes);
    c.setOpId(text(p.op_id));
    c.setOutcome(as<s::OpOutcome>(p.outcome));
    put_failure(c, p.failure);
    c.setName(text(p.name));
    c.setReferencedBytes(p.referenced_bytes);
    c.setExclusiveBytes(p.exclusive_bytes);
  }
  void operator()(const snapshot_requested& p) const {
    auto c = b.initSnapshotRequested();
    c.setOpId(text(p.op_id));
    c.setSnapshotId(text(p.snapshot_id));
    c.setName(text(p.name));
  }
  void operator()(const snapshot_deleted& p) const {
    b.initSnapshotDeleted().setSnapshotId(text(p.snapshot_id));
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

} // namespace sandboxd::events
