// archive_reader — tar archives (plain, gzip, zstd, xz, bzip2; ustar, pax and GNU
// headers) read with libarchive from a stream of bytes, entry by entry, into a layer_writer
// (layer_writer.hpp makes every rule about what an entry may do). The bytes come from a pull
// function, so an archive streamed over RPC is unpacked as it arrives and never spooled.
#pragma once

#include "base/result.hpp"
#include "templates/layer_writer.hpp"

#include <functional>
#include <memory>
#include <string>

namespace sandboxd::templates {

// Gives the next bytes of the archive: sets *data and returns their size (valid until the
// next call), 0 at the end, -1 on an error (with *why set).
using chunk_source = std::function<long(const void** data, std::string* why)>;

// A source reading a file descriptor (not owned) to its end.
chunk_source fd_source(int fd);
// A source over bytes held in memory (not copied: they must outlive the reading).
chunk_source memory_source(const std::string& bytes);

// One entry of a tar archive as the writer takes it, and its data.
class tar_stream {
public:
  explicit tar_stream(chunk_source source);
  ~tar_stream();
  tar_stream(const tar_stream&) = delete;
  tar_stream& operator=(const tar_stream&) = delete;

  // The next entry's header: true with `h` filled, false at the end, or an error naming
  // what is wrong with the archive (invalid_argument).
  result<bool> next(entry_header& h);
  // Reads the current entry's data (layer_writer's data_reader).
  long read(char* buf, std::size_t n);
  // Why the last read failed.
  const std::string& failure() const { return failure_; }
  // Bytes taken from the source so far (compressed, as streamed).
  std::uint64_t consumed() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
  std::string failure_;
};

// Every entry of the archive `source` into `w`, then w.finish().
result<void> extract_tar(chunk_source source, layer_writer& w);

} // namespace sandboxd::templates
