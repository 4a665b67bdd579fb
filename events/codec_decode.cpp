// codec_decode.cpp — Cap'n Proto `Event` record (schemas/events.capnp) -> event, for any
// bytes: a record that is not an Event is an error value, never a crash or an exception.
#include "events/event.hpp"

#include "schemas/events.capnp.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <algorithm>
#include <cstring>

namespace sandboxd::events {

namespace {

namespace s = sandboxd::schema;

// Traversal limit per word of input: a well-formed record is read about once; the margin
// covers zero-sized list elements, which Cap'n Proto charges as one word each.
constexpr std::uint64_t k_traversal_words_per_word = 4;
constexpr std::uint64_t k_traversal_words_min = 64;
// Our schema nests at most six levels: Event > Created > TemplateRef > List > EnvVar > Text,
// and Event > TemplateEvent > TemplateReady > List > TemplateLayer > Data.
constexpr int k_nesting_limit = 8;

// A fault in the bytes, reported as the decode error.
struct bad_record {
  std::string what;
};

std::string str(capnp::Text::Reader r) {
  return std::string(r.begin(), r.size());
}

void set(std::string& to, capnp::Text::Reader r) {
  to.assign(r.begin(), r.size());
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
  t.timeout = nanoseconds(r.getTimeoutNs());
  return t;
}

// An optional digest: an empty Data field is absent; any size but 32 is a bad record.
std::optional<sha256_digest> get_digest(capnp::Data::Reader d, const char* field) {
  if (d.size() == 0)
    return std::nullopt;
  sha256_digest out{};
  if (d.size() != out.size())
    throw bad_record{std::string(field) + " has " + std::to_string(d.size()) + " bytes, not 32"};
  std::copy(d.begin(), d.end(), out.begin());
  return out;
}

std::vector<env_var> get_env(capnp::List<s::EnvVar>::Reader l) {
  std::vector<env_var> v;
  v.reserve(l.size());
  for (auto e : l)
    v.push_back({str(e.getName()), str(e.getValue()), e.getSecret(),
                 get_digest(e.getValueSha256(), "EnvVar.valueSha256")});
  return v;
}

std::vector<label> get_labels(capnp::List<s::Label>::Reader l) {
  std::vector<label> v;
  v.reserve(l.size());
  for (auto lb : l)
    v.push_back({str(lb.getKey()), str(lb.getValue())});
  return v;
}

// The error of a failed operation; code none (0) is no error.
template <class Reader>
std::optional<error> get_failure(Reader r) {
  if (r.getErrorCode() == s::ErrorCode::NONE)
    return std::nullopt;
  return error{open_enum<errc>(r.getErrorCode()), str(r.getErrorMessage())};
}

std::vector<std::string> get_texts(capnp::List<capnp::Text>::Reader l) {
  std::vector<std::string> v;
  v.reserve(l.size());
  for (auto t : l)
    v.push_back(str(t));
  return v;
}

network_policy get_network(s::NetworkPolicy::Reader n) {
  return {open_enum<network_mode>(n.getMode()), get_texts(n.getAllowedHosts())};
}

net_destination get_destination(s::Destination::Reader d) {
  net_destination out;
  out.protocol = open_enum<net_protocol>(d.getProtocol());
  out.name = str(d.getName());
  out.source = open_enum<name_source>(d.getNameSource());
  out.address = str(d.getAddress());
  out.port = d.getPort();
  out.address_class = str(d.getAddressClass());
  out.name_resolves = d.getNameResolves();
  return out;
}

// A digest that must be there (32 bytes).
sha256_digest required_digest(capnp::Data::Reader d, const char* field) {
  auto v = get_digest(d, field);
  if (!v)
    throw bad_record{std::string(field) + " is empty"};
  return *v;
}

void read_template_change(s::TemplateEvent::Change::Reader r, template_change& out) {
  using W = s::TemplateEvent::Change;
  switch (r.which()) {
  case W::CREATED: {
    auto c = r.getCreated();
    out = template_created{open_enum<template_source>(c.getSource()), str(c.getDescription()),
                           get_digest(c.getInputSha256(), "TemplateCreated.inputSha256"),
                           str(c.getParentId())};
    return;
  }
  case W::LAYER_ADDED: {
    auto c = r.getLayerAdded();
    out = template_layer_added{
      c.getIndex(),       required_digest(c.getSha256(), "TemplateLayerAdded.sha256"),
      c.getBytes(),       c.getEntries(),
      str(c.getOrigin()), c.getReused()};
    return;
  }
  case W::STEP_STARTED: {
    auto c = r.getStepStarted();
    out = template_step_started{c.getIndex(), str(c.getInstruction()),
                                get_digest(c.getCacheKey(), "TemplateStepStarted.cacheKey")};
    return;
  }
  case W::STEP_FINISHED: {
    auto c = r.getStepFinished();
    auto& p = out.emplace<template_step_finished>();
    p.index = c.getIndex();
    p.outcome = open_enum<op_outcome>(c.getOutcome());
    p.cached = c.getCached();
    p.exit_code = c.getExitCode();
    p.duration = nanoseconds(c.getDurationNs());
    p.layer = get_digest(c.getLayer(), "TemplateStepFinished.layer");
    p.output_bytes = c.getOutputBytes();
    p.failure = get_failure(c);
    return;
  }
  case W::READY: {
    auto c = r.getReady();
    auto& p = out.emplace<template_ready>();
    p.digest = required_digest(c.getDigest(), "TemplateReady.digest");
    for (auto l : c.getLayers())
      p.layers.push_back({required_digest(l.getSha256(), "TemplateLayer.sha256"), l.getBytes()});
    p.env = get_env(c.getEnv());
    set(p.working_directory, c.getWorkingDirectory());
    set(p.user, c.getUser());
    p.command = get_texts(c.getCommand());
    p.total_bytes = c.getTotalBytes();
    if (c.getOwn().isBytes())
      p.own_bytes = c.getOwn().getBytes();
    return;
  }
  case W::FAILED: {
    auto f = get_failure(r.getFailed());
    out = template_failed{f ? *f : error{errc::internal, ""}};
    return;
  }
  case W::DELETED:
    out = template_deleted{str(r.getDeleted().getReason())};
    return;
  }
  out = template_unknown{static_cast<std::uint16_t>(r.which())};
}

// Fills `out` (a default payload) in place: the payload is never moved.
void read_payload(s::Event::Payload::Reader r, payload& out) {
  using W = s::Event::Payload;
  switch (r.which()) {
  case W::CREATED: {
    auto c = r.getCreated();
    auto& p = out.emplace<created>();
    p.template_name = str(c.getTemplate());
    auto l = c.getLimits();
    p.limits = {l.getMemoryMib(), l.getCpuMillicores(), l.getPids(), l.getDiskMib()};
    p.timeouts = get_timeouts(c.getTimeouts());
    p.network = get_network(c.getNetwork());
    p.labels = get_labels(c.getLabels());
    p.runtime = open_enum<runtime_kind>(c.getRuntime());
    p.client_request_id = str(c.getClientRequestId());
    p.env = get_env(c.getEnv());
    p.from_snapshot = str(c.getFromSnapshot());
    if (c.hasContent()) {
      auto t = c.getContent();
      set(p.content.id, t.getId());
      p.content.digest = get_digest(t.getDigest(), "TemplateRef.digest");
      for (auto l : t.getLayers()) {
        auto d = get_digest(l, "TemplateRef.layers");
        if (!d)
          throw bad_record{"TemplateRef.layers holds an empty digest"};
        p.content.layers.push_back(*d);
      }
      p.content.env = get_env(t.getEnv());
      set(p.content.working_directory, t.getWorkingDirectory());
      set(p.content.user, t.getUser());
    }
    set(p.pool, c.getPool());
    return;
  }
  case W::CLAIM_REQUESTED: {
    auto c = r.getClaimRequested();
    auto& p = out.emplace<claim_requested>();
    p.labels = get_labels(c.getLabels());
    p.env = get_env(c.getEnv());
    p.timeouts = get_timeouts(c.getTimeouts());
    set(p.client_request_id, c.getClientRequestId());
    return;
  }
  case W::CLAIMED:
    out = claimed{};
    return;
  case W::STARTED:
    out = started{};
    return;
  case W::PAUSE_REQUESTED: {
    auto c = r.getPauseRequested();
    out =
      pause_requested{open_enum<pause_mode>(c.getMode()), open_enum<pause_reason>(c.getReason())};
    return;
  }
  case W::PAUSED: {
    auto c = r.getPaused();
    out = paused{open_enum<pause_mode>(c.getMode()), c.getWritableLayerBytes()};
    return;
  }
  case W::RESUME_REQUESTED:
    out = resume_requested{};
    return;
  case W::RESUMED:
    out = resumed{};
    return;
  case W::DELETE_REQUESTED:
    out = delete_requested{open_enum<delete_reason>(r.getDeleteRequested().getReason())};
    return;
  case W::DELETED:
    out = deleted{r.getDeleted().getWritableLayerBytes()};
    return;
  case W::FAILED: {
    auto c = r.getFailed();
    out = failed{open_enum<runtime_step>(c.getStep()), str(c.getReason())};
    return;
  }
  case W::EXEC_STARTED: {
    auto c = r.getExecStarted();
    auto& p = out.emplace<exec_started>();
    p.exec_id = str(c.getExecId());
    p.argv = get_texts(c.getArgv());
    p.working_directory = str(c.getWorkingDirectory());
    p.timeout = nanoseconds(c.getTimeoutNs());
    p.env = get_env(c.getEnv());
    p.stdin_bytes = c.getStdinBytes();
    p.stdin_sha256 = get_digest(c.getStdinSha256(), "execStarted.stdinSha256");
    p.max_output_bytes = c.getMaxOutputBytes();
    p.background = c.getBackground();
    p.user = str(c.getUser());
    return;
  }
  case W::EXEC_FINISHED: {
    auto c = r.getExecFinished();
    auto& p = out.emplace<exec_finished>();
    p.exec_id = str(c.getExecId());
    p.exit_code = c.getExitCode();
    p.signal = c.getSignal();
    p.duration = nanoseconds(c.getDurationNs());
    p.stdout_bytes = c.getStdoutBytes();
    p.stderr_bytes = c.getStderrBytes();
    p.timed_out = c.getTimedOut();
    p.oom_killed = c.getOomKilled();
    p.output_truncated = c.getOutputTruncated();
    p.stdout_sha256 = get_digest(c.getStdoutSha256(), "execFinished.stdoutSha256");
    p.stderr_sha256 = get_digest(c.getStderrSha256(), "execFinished.stderrSha256");
    p.outcome = open_enum<op_outcome>(c.getOutcome());
    p.failure = get_failure(c);
    return;
  }
  case W::FILE_WRITTEN: {
    auto c = r.getFileWritten();
    auto digest = get_digest(c.getSha256(), "fileWritten.sha256");
    if (!digest)
      throw bad_record{"fileWritten.sha256 has 0 bytes, not 32"};
    out = file_written{str(c.getPath()), c.getBytes(), *digest};
    return;
  }
  case W::FILE_READ: {
    auto c = r.getFileRead();
    auto& p = out.emplace<file_read>();
    p.path = str(c.getPath());
    p.bytes = c.getBytes();
    p.kind = open_enum<file_read_kind>(c.getKind());
    p.failure = get_failure(c);
    p.sha256 = get_digest(c.getSha256(), "fileRead.sha256");
    p.entries = c.getEntries();
    return;
  }
  case W::FILE_OP_REQUESTED: {
    auto c = r.getFileOpRequested();
    auto& p = out.emplace<file_op_requested>();
    p.op_id = str(c.getOpId());
    p.kind = open_enum<file_op_kind>(c.getKind());
    p.path = str(c.getPath());
    p.to_path = str(c.getToPath());
    p.recursive = c.getRecursive();
    p.mode = c.getMode();
    p.bytes = c.getBytes();
    p.sha256 = get_digest(c.getSha256(), "fileOpRequested.sha256");
    return;
  }
  case W::FILE_OP_FINISHED: {
    auto c = r.getFileOpFinished();
    auto& p = out.emplace<file_op_finished>();
    p.op_id = str(c.getOpId());
    p.kind = open_enum<file_op_kind>(c.getKind());
    p.outcome = open_enum<op_outcome>(c.getOutcome());
    p.failure = get_failure(c);
    p.bytes = c.getBytes();
    p.sha256 = get_digest(c.getSha256(), "fileOpFinished.sha256");
    return;
  }
  case W::EXEC_KILL_REQUESTED: {
    auto c = r.getExecKillRequested();
    out = exec_kill_requested{str(c.getExecId()), c.getSignal()};
    return;
  }
  case W::REDACTED:
    out = redacted{str(r.getRedacted().getReason())};
    return;
  case W::NETWORK_CHANGED:
    out = network_changed{get_network(r.getNetworkChanged().getNetwork())};
    return;
  case W::CONNECTION_OPENED: {
    auto c = r.getConnectionOpened();
    out = connection_opened{str(c.getConnectionId()), get_destination(c.getDestination()),
                            str(c.getRule())};
    return;
  }
  case W::CONNECTION_DENIED: {
    auto c = r.getConnectionDenied();
    out =
      connection_denied{get_destination(c.getDestination()), str(c.getReason()), c.getRepeats()};
    return;
  }
  case W::CONNECTION_CLOSED: {
    auto c = r.getConnectionClosed();
    auto& p = out.emplace<connection_closed>();
    p.connection_id = str(c.getConnectionId());
    p.bytes_out = c.getBytesOut();
    p.bytes_in = c.getBytesIn();
    p.duration = nanoseconds(c.getDurationNs());
    p.outcome = open_enum<op_outcome>(c.getOutcome());
    p.error_message = str(c.getErrorMessage());
    return;
  }
  case W::STORAGE_SAMPLED:
    out = storage_sampled{r.getStorageSampled().getWritableLayerBytes()};
    return;
  case W::SNAPSHOT_TAKEN: {
    auto c = r.getSnapshotTaken();
    auto& p = out.emplace<snapshot_taken>();
    p.snapshot_id = str(c.getSnapshotId());
    p.writable_layer_bytes = c.getWritableLayerBytes();
    p.op_id = str(c.getOpId());
    p.outcome = open_enum<op_outcome>(c.getOutcome());
    p.failure = get_failure(c);
    p.name = str(c.getName());
    p.referenced_bytes = c.getReferencedBytes();
    p.exclusive_bytes = c.getExclusiveBytes();
    return;
  }
  case W::SNAPSHOT_REQUESTED: {
    auto c = r.getSnapshotRequested();
    out = snapshot_requested{str(c.getOpId()), str(c.getSnapshotId()), str(c.getName())};
    return;
  }
  case W::SNAPSHOT_DELETED:
    out = snapshot_deleted{str(r.getSnapshotDeleted().getSnapshotId())};
    return;
  case W::TIMEOUT_CHANGED:
    out = timeout_changed{get_timeouts(r.getTimeoutChanged().getTimeouts())};
    return;
  case W::COMMAND_REJECTED: {
    auto c = r.getCommandRejected();
    out = command_rejected{open_enum<command_kind>(c.getCommand()), open_enum<errc>(c.getCode()),
                           str(c.getMessage())};
    return;
  }
  case W::TEMPLATE: {
    auto t = r.getTemplate();
    auto& p = out.emplace<template_event>();
    set(p.template_id, t.getTemplateId());
    set(p.name, t.getName());
    p.scope = open_enum<template_scope>(t.getScope());
    read_template_change(t.getChange(), p.change);
    return;
  }
  }
  out = unknown{static_cast<std::uint16_t>(r.which())};
}

decoded invalid(std::string why) {
  return decoded{make_error(errc::invalid_argument, "record is not a sandboxd Event (" + why +
                                                      "); skip it and report the log position")};
}

} // namespace

decoded decode(const void* data, std::size_t size) {
  if (size < sizeof(capnp::word) || size % sizeof(capnp::word) != 0)
    return invalid("size " + std::to_string(size) + " is not a positive multiple of 8");
  const std::size_t n_words = size / sizeof(capnp::word);

  // Cap'n Proto reads words in place, so unaligned input is copied to an aligned buffer.
  thread_local std::vector<capnp::word> aligned;
  const capnp::word* words = static_cast<const capnp::word*>(data);
  if (reinterpret_cast<std::uintptr_t>(data) % alignof(capnp::word) != 0) {
    if (aligned.size() < n_words)
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
    // Made and filled in place: the event is returned without a move.
    decoded out{std::variant<event, error>(std::in_place_index<0>)};
    auto& e = std::get<event>(out.value);
    set(e.event_id, r.getEventId());
    set(e.sandbox_id, r.getSandboxId());
    e.sequence = r.getSequence();
    set(e.tenant, r.getTenant());
    set(e.principal, r.getPrincipal());
    e.occurred_at = time_point(nanoseconds(r.getOccurredAtNs()));
    set(e.correlation_id, r.getCorrelationId());
    set(e.causation_id, r.getCausationId());
    if (e.sandbox_id.empty())
      return invalid("no sandbox id");
    if (e.sequence == 0)
      return invalid("sequence 0; sequences start at 1");
    read_payload(r.getPayload(), e.body);
    return out;
  } catch (const kj::Exception& ex) {
    return invalid(std::string(ex.getDescription().cStr()));
  } catch (const bad_record& ex) {
    return invalid(ex.what);
  }
}

} // namespace sandboxd::events
