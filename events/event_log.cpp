#include "events/event_log.hpp"

namespace sandboxd::events {

void event_log::append(std::vector<log_record> batch, append_callback done) {
  for (std::size_t i = 0; i < batch.size(); ++i)
    if (batch[i].key.empty()) {
      done(append_result{{},
                         error{errc::invalid_argument,
                               "record " + std::to_string(i) + " of the batch for " + describe() +
                                 " has an empty key; every record needs a key (its sandbox id)"}});
      return;
    }
  if (batch.empty()) {
    done(append_result{});
    return;
  }
  do_append(std::move(batch), std::move(done));
}

std::future<append_result> event_log::append(std::vector<log_record> batch) {
  auto promise = std::make_shared<std::promise<append_result>>();
  auto result = promise->get_future();
  append(std::move(batch), [promise](append_result r) { promise->set_value(std::move(r)); });
  return result;
}

read_result event_log::read(std::int32_t partition, std::int64_t from, std::size_t max) {
  if (!has_partition(partition) || from < 0) {
    read_result out;
    out.failure = error{errc::invalid_argument,
                        "cannot read partition " + std::to_string(partition) + " from offset " +
                          std::to_string(from) + ": " + describe() + " has partitions 0.." +
                          std::to_string(partitions() - 1) + " and offsets start at 0"};
    return out;
  }
  if (max == 0)
    return {};
  return do_read(partition, from, max);
}

offset_result event_log::end_offset(std::int32_t partition) {
  if (!has_partition(partition))
    return {-1, error{errc::invalid_argument, describe() + " has no partition " +
                                                std::to_string(partition) + " (partitions 0.." +
                                                std::to_string(partitions() - 1) + ")"}};
  return do_end_offset(partition);
}

bool event_log::wait_for(std::int32_t partition, std::int64_t offset,
                         std::chrono::milliseconds timeout) {
  if (!has_partition(partition) || offset < 0)
    return false;
  return do_wait_for(partition, offset, timeout);
}

} // namespace sandboxd::events
