// sample_events.hpp — one event of every payload type, every field set to a value that is
// not its default. These are the values tests/golden/ holds: they must never change (a
// later version adds samples for new payloads, it does not edit these).
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
  };
  std::vector<event> out;
  std::uint64_t seq = 1;
  for (auto& b : bodies)
    out.push_back(sample_envelope(seq++, std::move(b)));
  return out;
}

} // namespace sandboxd::events::testing
