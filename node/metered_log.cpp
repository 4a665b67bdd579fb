#include "node/metered_log.hpp"

#include <chrono>

namespace sandboxd::node {

metered_log::metered_log(events::event_log& inner, node_probe& probe, observer observe)
    : inner_(inner), probe_(probe), observe_(std::move(observe)) {}

void metered_log::do_append(std::vector<events::log_record> batch, events::append_callback done) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t records = batch.size();
  std::vector<std::string> keys;
  if (observe_) {
    keys.reserve(batch.size());
    for (const auto& r : batch)
      keys.push_back(r.key);
  }
  inner_.append(std::move(batch), [this, t0, records, keys = std::move(keys),
                                   done = std::move(done)](events::append_result r) {
    probe_.log_appended(records, std::chrono::steady_clock::now() - t0, r.ok());
    if (observe_)
      observe_(keys, r);
    done(std::move(r));
  });
}

} // namespace sandboxd::node
