// sample_events.hpp — one event of every payload type, every field set to a value that is
// not its default. These are the values tests/golden/ holds: they must never change (a
// later version adds samples for new payloads, it does not edit these).
//
// samples() holds each payload as the version that introduced it wrote it (<name>.bin);
// samples_v2() holds the payloads that a later version extended with fields, with every
// field set (<name>.v2.bin). A v1 file decodes with the later fields at their defaults.
#pragma once

#include "events/event.hpp"

#include <string>
#include <vector>

namespace sandboxd::events::testing {

inline event sample_envelope(std::uint64_t sequence, payload body) {
  event e;
  e.event_id = "sb_golden:" + std::to_string(sequence);
  e.sandbox_id = "sb_golden";
  e.sequence = sequence;
  e.tenant = "tenant-acme";
  e.principal = "alice@acme.example";
  e.occurred_at = time_point(nanoseconds(1'764'500'000'123'456'789));
  e.correlation_id = "req-7f3a";
  e.causation_id = "sb_golden:" + std::to_string(sequence > 1 ? sequence - 1 : 0);
  e.body = std::move(body);
  return e;
}

// One template event of every change (template_<change>.bin), on the template stream.
inline std::vector<event> template_samples() {
  using namespace std::chrono_literals;
  sha256_digest d{}, l0{}, l1{}, k{};
  for (std::size_t i = 0; i < d.size(); ++i) {
    d[i] = static_cast<std::uint8_t>(0x33 + i);
    l0[i] = static_cast<std::uint8_t>(0x80 ^ i);
    l1[i] = static_cast<std::uint8_t>(0xC0 + i);
    k[i] = static_cast<std::uint8_t>(0x5A ^ (3 * i));
  }
  template_ready ready;
  ready.digest = d;
  ready.layers = {{l0, 123'456'789}, {l1, 4096}};
  ready.env = {{"PATH", "/usr/local/bin:/usr/bin:/bin", false, std::nullopt}};
  ready.working_directory = "/workspace";
  ready.user = "app";
  ready.command = {"python3", "-i"};
  ready.total_bytes = 123'460'885;
  template_step_finished fin;
  fin.index = 2;
  fin.outcome = op_outcome::failed;
  fin.cached = true;
  fin.exit_code = 127;
  fin.duration = 4'500'000'001ns;
  fin.layer = l1;
  fin.output_bytes = 65'537;
  fin.failure = error{errc::invalid_argument, "RUN pip install: exit status 127"};
  std::vector<template_change> changes{
    template_created{template_source::spec, "spec build (Dockerfile, 4 steps)", k,
                     "tpl_fedcba9876543210"},
    template_layer_added{1, l1, 4096, 17, "step 2", true},
    template_step_started{2, "RUN pip install -r requirements.txt", k},
    fin,
    ready,
    template_failed{error{errc::unavailable, "mmdebstrap could not reach the apt sources"}},
    template_deleted{"user"},
  };
  std::vector<event> out;
  std::uint64_t seq = 1;
  for (auto& c : changes) {
    auto e = sample_envelope(seq++, template_event{"tpl_0123456789abcdef", "py-app",
                                                   template_scope::tenant, std::move(c)});
    e.sandbox_id = std::string(template_stream_key);
    e.event_id = e.sandbox_id + ":" + std::to_string(e.sequence);
    e.causation_id.clear();
    out.push_back(std::move(e));
  }
  return out;
}

// In schema order: samples()[i] has the payload payload_type_names()[i].
inline std::vector<event> samples() {
  using namespace std::chrono_literals;
  sandbox_timeouts timeouts{15min, idle_action::delete_sandbox, pause_mode::memory, 8h, 72h};
  created c;
  c.template_name = "python-3.12-slim";
  c.limits = {2048, 1500, 512, 10240};
  c.timeouts = timeouts;
  c.network = {network_mode::allow_list, {"pypi.org", "files.pythonhosted.org"}};
  c.labels = {{"team", "ml"}, {"purpose", "eval \"quoted\" ünïcode"}};
  c.runtime = runtime_kind::crun;
  c.client_request_id = "client-req-42";

  sha256_digest digest{};
  for (std::size_t i = 0; i < digest.size(); ++i)
    digest[i] = static_cast<std::uint8_t>(0xA0 + i);

  std::vector<payload> bodies{
    c,
    started{},
    pause_requested{pause_mode::memory, pause_reason::idle_timeout},
    paused{pause_mode::memory, 123'456'789},
    resume_requested{},
    resumed{},
    delete_requested{delete_reason::retention},
    deleted{},
    failed{runtime_step::resuming, "runsc restore: exit status 128: checkpoint image missing"},
    exec_started{"exec-1", {"python3", "-c", "print('hi')", ""}, "/workspace", 30s},
    exec_finished{"exec-1", -1, 9, 1'500'000'123ns, 4096, 17, true},
    file_written{"/workspace/data/input.csv", 1'048'576, digest},
    file_read{"/workspace/out/result.json", 2048},
    storage_sampled{987'654'321'000},
    snapshot_taken{"snap-3", 55'000'000},
    timeout_changed{timeouts},
    command_rejected{command_kind::write_file, errc::conflict,
                     "sandbox sb_golden is paused (memory); cannot write a file; resume it"},
    file_op_requested{"op-9", file_op_kind::rename, "/workspace/a.txt", "/workspace/b.txt", true,
                      0640, 0, std::nullopt},
    file_op_finished{"op-9", file_op_kind::write, op_outcome::failed,
                     error{errc::resource_exhausted, "disk limit of 512 MiB reached"}, 77, digest},
    exec_kill_requested{"exec-2", 15},
    redacted{"privacy request PR-7"},
    network_changed{{network_mode::full, {"10.1.0.0/16:5432", "udp://198.51.100.53:53"}}},
    connection_opened{"conn-4",
                      {net_protocol::tcp, "api.github.com", name_source::tls_sni, "198.51.100.7",
                       443, "public", true},
                      "*.github.com:443"},
    connection_denied{
      {net_protocol::dns, "aGVsbG8.tunnel.example", name_source::dns_question, "", 0, "", false},
      "name aGVsbG8.tunnel.example is not in the sandbox's allow list",
      41},
    connection_closed{"conn-4", 1'234'567, 104'857'600, 2'500'000'000ns, op_outcome::failed,
                      "connection reset by 198.51.100.7:443"},
  };
  std::vector<event> out;
  std::uint64_t seq = 1;
  for (auto& b : bodies)
    out.push_back(sample_envelope(seq++, std::move(b)));
  out.push_back(template_samples().front()); // template_event: its first change
  // Warm pools (issue 31): a claim and its outcome.
  claim_requested claim;
  claim.labels = {{"agent", "planner"}, {"run", "ünï \"7\""}};
  claim.env = {{"MODE", "eval", false, std::nullopt}, {"API_KEY", "", true, std::nullopt}};
  claim.timeouts = {10min, idle_action::delete_sandbox, pause_mode::filesystem, 2h, 0s, 45min};
  claim.client_request_id = "client-req-claim-1";
  out.push_back(sample_envelope(seq++, claim));
  out.push_back(sample_envelope(seq++, claimed{}));
  out.push_back(sample_envelope(
    seq++, snapshot_requested{"op-snap-1", "snap-00112233aabbccdd", "before the migration"}));
  out.push_back(sample_envelope(seq++, snapshot_deleted{"snap-00112233aabbccdd"}));
  return out;
}

// The payloads later versions extended, every field (old and new) set.
inline std::vector<event> samples_v2() {
  using namespace std::chrono_literals;
  sha256_digest a{}, b{}, c{};
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<std::uint8_t>(i);
    b[i] = static_cast<std::uint8_t>(0xff - i);
    c[i] = static_cast<std::uint8_t>(0x55 ^ i);
  }
  sandbox_timeouts timeouts{15min, idle_action::pause_sandbox, pause_mode::memory, 8h, 72h, 30min};
  created cr;
  cr.template_name = "base";
  cr.limits = {4096, 2000, 256, 20480};
  cr.timeouts = timeouts;
  cr.network = {network_mode::none, {}};
  cr.labels = {{"agent", "x"}};
  cr.runtime = runtime_kind::runsc;
  cr.client_request_id = "req-v2";
  cr.env = {{"A", "1", false, std::nullopt}, {"API_KEY", "", true, a}};

  exec_started es;
  es.exec_id = "exec-7";
  es.argv = {"/bin/sh", "-c", "cat; echo done"};
  es.working_directory = "/workspace";
  es.timeout = 90s;
  es.env = {{"B", "two", false, std::nullopt}, {"TOKEN", "", true, b}};
  es.stdin_bytes = 65537;
  es.stdin_sha256 = c;
  es.max_output_bytes = 1 << 20;
  es.background = true;

  exec_finished ef;
  ef.exec_id = "exec-7";
  ef.exit_code = -1;
  ef.signal = 9;
  ef.duration = 2'000'000'001ns;
  ef.stdout_bytes = 1 << 20;
  ef.stderr_bytes = 3;
  ef.timed_out = true;
  ef.oom_killed = true;
  ef.output_truncated = true;
  ef.stdout_sha256 = a;
  ef.stderr_sha256 = b;
  ef.outcome = op_outcome::interrupted;
  ef.failure = error{errc::internal, "runsc exec: exit status 128"};

  file_read fr;
  fr.path = "/workspace";
  fr.bytes = 0;
  fr.kind = file_read_kind::list;
  fr.failure = error{errc::not_a_directory, "/workspace/a.txt is not a directory"};
  fr.sha256 = c;
  fr.entries = 1000;

  std::vector<event> out;
  out.push_back(sample_envelope(101, cr));
  out.push_back(sample_envelope(102, exec_started(es)));
  out.push_back(sample_envelope(103, ef));
  out.push_back(sample_envelope(104, fr));
  out.push_back(sample_envelope(105, timeout_changed{timeouts}));
  out.push_back(sample_envelope(106, deleted{3'221'225'472}));
  snapshot_taken st;
  st.snapshot_id = "snap-00112233aabbccdd";
  st.writable_layer_bytes = 1'073'758'208;
  st.op_id = "op-snap-1";
  st.outcome = op_outcome::failed;
  st.failure = error{errc::resource_exhausted, "the layer pool is full"};
  st.name = "before the migration";
  st.referenced_bytes = 1'073'774'592;
  st.exclusive_bytes = 16'384;
  out.push_back(sample_envelope(107, st));
  // A template's `ready` with the bytes its FROM template does not have.
  for (auto e : template_samples())
    if (auto* t = std::get_if<template_event>(&e.body))
      if (auto* r = std::get_if<template_ready>(&t->change)) {
        r->own_bytes = 4096;
        out.push_back(std::move(e));
      }
  return out;
}

// Payloads extended a second time (<name>.v3.bin): `created` naming its template content,
// `exec_started` naming its user.
inline std::vector<event> samples_v3() {
  auto cr = std::get<created>(samples_v2()[0].body);
  sha256_digest t{}, l0{}, l1{};
  for (std::size_t i = 0; i < t.size(); ++i) {
    t[i] = static_cast<std::uint8_t>(0x10 + i);
    l0[i] = static_cast<std::uint8_t>(0x80 ^ i);
    l1[i] = static_cast<std::uint8_t>(0xC0 + i);
  }
  cr.template_name = "python";
  cr.content.id = "tpl_0123456789abcdef";
  cr.content.digest = t;
  cr.content.layers = {l0, l1};
  cr.content.env = {{"PATH", "/usr/bin:/bin", false, std::nullopt},
                    {"LANG", "C.UTF-8", false, std::nullopt}};
  cr.content.working_directory = "/workspace";
  cr.content.user = "1000:1000";
  // `exec_started` naming the user it runs as.
  auto es = std::get<exec_started>(samples_v2()[1].body);
  es.user = "app:staff";
  return {sample_envelope(201, cr), sample_envelope(202, es)};
}

// Payloads extended a third time (<name>.v4.bin): `created` by a warm pool (its key).
inline std::vector<event> samples_v4() {
  auto cr = std::get<created>(samples_v3()[0].body);
  cr.pool = "python/runsc/m4096/c2000/p256/d20480";
  cr.client_request_id.clear();
  cr.labels.clear();
  cr.env.clear();
  cr.timeouts = {};
  auto e = sample_envelope(301, cr);
  e.tenant = std::string(k_pool_tenant);
  e.principal = "system";
  return {e};
}

// Payloads extended a fourth time (<name>.v5.bin): `created` of a fork.
inline std::vector<event> samples_v5() {
  auto cr = std::get<created>(samples_v3()[0].body);
  cr.from_snapshot = "snap-00112233aabbccdd";
  return {sample_envelope(301, cr)};
}

} // namespace sandboxd::events::testing
