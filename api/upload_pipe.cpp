#include "api/upload_pipe.hpp"

#include <utility>

namespace sandboxd::api {

bool upload_pipe::push(std::string data, const std::function<waker()>& wait) {
  std::lock_guard<std::mutex> g(mu_);
  if (reader_gone_)
    return true; // the import ended already: its answer says why
  queued_ += data.size();
  chunks_.push_back(std::move(data));
  cv_.notify_one();
  if (queued_ < k_high)
    return true;
  room_ = wait();
  return false;
}

void upload_pipe::close() {
  std::lock_guard<std::mutex> g(mu_);
  closed_ = true;
  cv_.notify_one();
}

void upload_pipe::fail(std::string why) {
  std::lock_guard<std::mutex> g(mu_);
  failed_ = std::move(why);
  cv_.notify_one();
}

long upload_pipe::pull(const void** data, std::string* why) {
  waker wake;
  long n = 0;
  {
    std::unique_lock<std::mutex> g(mu_);
    const bool woken =
      cv_.wait_for(g, idle_, [&] { return !chunks_.empty() || closed_ || !failed_.empty(); });
    if (!woken) {
      const auto ms = idle_.count();
      *why = "no bytes of the archive arrived for " +
             (ms % 1000 ? std::to_string(ms) + " ms" : std::to_string(ms / 1000) + " s") +
             "; the import was stopped";
      return -1;
    }
    if (!failed_.empty()) {
      *why = failed_;
      return -1;
    }
    if (chunks_.empty())
      return 0;
    current_ = std::move(chunks_.front());
    chunks_.pop_front();
    queued_ -= current_.size();
    // The waiting write goes on once the queue is below the low mark, not before: the waker
    // stays until then.
    if (room_ && queued_ < k_low)
      wake = std::exchange(room_, nullptr);
    *data = current_.data();
    n = static_cast<long>(current_.size());
  }
  if (wake)
    wake(true);
  return n;
}

void upload_pipe::reader_done() {
  waker wake;
  {
    std::lock_guard<std::mutex> g(mu_);
    reader_gone_ = true;
    chunks_.clear();
    queued_ = 0;
    wake = std::exchange(room_, nullptr);
  }
  if (wake)
    wake(true);
}

} // namespace sandboxd::api
