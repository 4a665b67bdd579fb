// metered_log — an event_log that forwards every call to another and reports each
// append to the node's probe (latency, records, outcome) and, when set, to an observer,
// before the appender's own completion runs.
//
// It adds no guarantee and takes none away: every call, completion and error is the
// inner log's, in the same order, on the same threads.
#pragma once

#include "events/event_log.hpp"
#include "node/node_probe.hpp"

#include <functional>
#include <string>
#include <vector>

namespace sandboxd::node {

class metered_log final : public events::event_log {
public:
  using observer =
    std::function<void(const std::vector<std::string>& keys, const events::append_result&)>;

  metered_log(events::event_log& inner, node_probe& probe, observer observe = {});

  std::int32_t partitions() const override { return inner_.partitions(); }
  std::string describe() const override { return inner_.describe(); }

  events::event_log& inner() { return inner_; }

protected:
  void do_append(std::vector<events::log_record> batch, events::append_callback done) override;
  events::read_result do_read(std::int32_t partition, std::int64_t from, std::size_t max) override {
    return inner_.read(partition, from, max);
  }
  events::offset_result do_end_offset(std::int32_t partition) override {
    return inner_.end_offset(partition);
  }
  bool do_wait_for(std::int32_t partition, std::int64_t offset,
                   std::chrono::milliseconds timeout) override {
    return inner_.wait_for(partition, offset, timeout);
  }

private:
  events::event_log& inner_;
  node_probe& probe_;
  observer observe_;
};

} // namespace sandboxd::node
