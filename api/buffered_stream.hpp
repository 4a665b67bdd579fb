// buffered_stream — a kj::AsyncIoStream that reads ahead: one read() of up to 64 KiB from
// the socket serves many small reads.
//
// Cap'n Proto 0.9 reads every RPC message with at least two reads (its segment table, then
// its segments); a connection with many calls in flight would pay two system calls per call.
// Behind this wrapper one system call brings in every message the peer has sent so far.
// Writes and everything else pass through unchanged. Nothing is read that the caller did not
// ask for beyond the buffer, and a read never waits for more than the caller's minimum.
#pragma once

#include <kj/async-io.h>

#include <cstddef>

namespace sandboxd::api {

class buffered_stream final : public kj::AsyncIoStream {
public:
  explicit buffered_stream(kj::Own<kj::AsyncIoStream> inner, std::size_t capacity = 64 << 10);

  kj::Promise<std::size_t> tryRead(void* buffer, std::size_t min_bytes,
                                   std::size_t max_bytes) override;
  kj::Promise<void> write(const void* buffer, std::size_t size) override;
  kj::Promise<void> write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) override;
  kj::Promise<void> whenWriteDisconnected() override;
  void shutdownWrite() override;
  void abortRead() override;
  void getsockopt(int level, int option, void* value, kj::uint* length) override;
  void setsockopt(int level, int option, const void* value, kj::uint length) override;
  void getsockname(struct sockaddr* addr, kj::uint* length) override;
  void getpeername(struct sockaddr* addr, kj::uint* length) override;

private:
  // Reads into `out` what is buffered, then from the socket, until `min_bytes` are there.
  kj::Promise<std::size_t> fill(kj::byte* out, std::size_t min_bytes, std::size_t max_bytes,
                                std::size_t done);

  kj::Own<kj::AsyncIoStream> inner_;
  kj::Array<kj::byte> buffer_;
  std::size_t begin_ = 0; // unread bytes are buffer_[begin_, end_)
  std::size_t end_ = 0;
};

} // namespace sandboxd::api
