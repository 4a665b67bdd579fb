#include "api/buffered_stream.hpp"

#include <algorithm>
#include <cstring>

namespace sandboxd::api {

buffered_stream::buffered_stream(kj::Own<kj::AsyncIoStream> inner, std::size_t capacity)
    : inner_(kj::mv(inner)), buffer_(kj::heapArray<kj::byte>(capacity)) {}

kj::Promise<std::size_t> buffered_stream::tryRead(void* buffer, std::size_t min_bytes,
                                                  std::size_t max_bytes) {
  return fill(static_cast<kj::byte*>(buffer), min_bytes, max_bytes, 0);
}

kj::Promise<std::size_t> buffered_stream::fill(kj::byte* out, std::size_t min_bytes,
                                               std::size_t max_bytes, std::size_t done) {
  const auto take = std::min(end_ - begin_, max_bytes - done);
  std::memcpy(out + done, buffer_.begin() + begin_, take);
  begin_ += take;
  done += take;
  if (done >= min_bytes || done == max_bytes)
    return done;
  // The buffer is empty. A read at least as big as the buffer goes straight to the caller.
  if (max_bytes - done >= buffer_.size())
    return inner_->tryRead(out + done, min_bytes - done, max_bytes - done)
      .then([done](std::size_t n) { return done + n; });
  begin_ = end_ = 0;
  return inner_->tryRead(buffer_.begin(), 1, buffer_.size())
    .then([this, out, min_bytes, max_bytes, done](std::size_t n) -> kj::Promise<std::size_t> {
      if (n == 0)
        return done; // end of stream
      end_ = n;
      return fill(out, min_bytes, max_bytes, done);
    });
}

kj::Promise<void> buffered_stream::write(const void* buffer, std::size_t size) {
  return inner_->write(buffer, size);
}

kj::Promise<void> buffered_stream::write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) {
  return inner_->write(pieces);
}

kj::Promise<void> buffered_stream::whenWriteDisconnected() {
  return inner_->whenWriteDisconnected();
}

void buffered_stream::shutdownWrite() {
  inner_->shutdownWrite();
}

void buffered_stream::abortRead() {
  inner_->abortRead();
}

void buffered_stream::getsockopt(int level, int option, void* value, kj::uint* length) {
  inner_->getsockopt(level, option, value, length);
}

void buffered_stream::setsockopt(int level, int option, const void* value, kj::uint length) {
  inner_->setsockopt(level, option, value, length);
}

void buffered_stream::getsockname(struct sockaddr* addr, kj::uint* length) {
  inner_->getsockname(addr, length);
}

void buffered_stream::getpeername(struct sockaddr* addr, kj::uint* length) {
  inner_->getpeername(addr, length);
}

} // namespace sandboxd::api
