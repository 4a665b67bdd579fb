// upload_pipe — the bytes of a template import, from the RPC loop (TemplateUpload.write) to
// the template worker that unpacks them (a templates::chunk_source, pull()).
//
// Flow control: at most about k_high bytes wait in the pipe. A write that brings the queue to
// k_high or more is taken, and then its caller waits: push() asks it for a waker, which the
// worker calls once it has taken the queue below k_low (or the import ended), and which is
// the stream's flow control towards the client. Every waker asked for is called exactly once,
// so a write never waits for ever while the worker reads on; the waker is asked for (and kept)
// under the pipe's lock, so no pull can slip between the write and its wait.
//
// The worker gives up on an upload that sends nothing for `idle` (a client that went quiet
// must not hold an import, and the template it makes, open for ever).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>

namespace sandboxd::api {

class upload_pipe {
public:
  static constexpr std::size_t k_high = 16u << 20;
  static constexpr std::size_t k_low = k_high / 2;
  using waker = std::function<void(bool)>;

  explicit upload_pipe(std::chrono::milliseconds idle = std::chrono::seconds(60)) : idle_(idle) {}

  // Loop thread. Takes `data`; when the queue is now at k_high or more, calls `wait` (under
  // the pipe's lock, on this thread) for the waker to call later, and returns false: the
  // caller waits for it. True: there is room for more.
  bool push(std::string data, const std::function<waker()>& wait);
  // The archive is complete (commit).
  void close();
  // The upload failed (dropped before its commit): the next pull answers -1 with `why`.
  void fail(std::string why);
  // Template worker: the next bytes (valid until the next call), 0 at the end, -1 when the
  // upload failed or sent nothing for `idle` (with *why set).
  long pull(const void** data, std::string* why);
  // Template worker: the import is over; later writes are dropped, a waiting one goes on.
  void reader_done();

private:
  std::chrono::milliseconds idle_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> chunks_;
  std::string current_;
  std::size_t queued_ = 0;
  bool closed_ = false, reader_gone_ = false;
  std::string failed_;
  waker room_; // the waiting write's, until called
};

} // namespace sandboxd::api
