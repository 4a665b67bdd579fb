// multipart_reader — a multipart/form-data body (RFC 7578, RFC 2046's delimiters) read as it
// arrives, the way the E2B SDKs upload files to envd (POST /files: one part per file, named
// "file", its path in the filename). It keeps no part's content: each piece of a part is
// handed out as soon as it is known not to hold a delimiter, so what it holds is bounded by the
// delimiter's length and one part's header block (8 KiB), whatever the body's size.
//
// A filename is read as Go's mime package reads it (what envd does): a token or a quoted
// string with backslash escapes; `filename*` (RFC 2231) is not read.
#pragma once

#include "base/result.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandboxd::e2b {

class multipart_reader {
public:
  struct limits {
    std::size_t header_bytes = 8u << 10; // one part's header block
    std::size_t parts = 64;              // parts in one body
  };

  // The boundary of a Content-Type "multipart/form-data; boundary=..." (1-70 characters);
  // invalid_argument for another type or no boundary.
  static result<std::string> boundary_of(std::string_view content_type);

  multipart_reader(std::string_view boundary, limits l);
  explicit multipart_reader(std::string_view boundary) : multipart_reader(boundary, limits{}) {}

  struct piece {
    enum class kind { part_begin, data, part_end } type = kind::data;
    std::string name;     // part_begin: the form field's name
    std::string filename; // part_begin: its filename ("" when none)
    std::string bytes;    // data
  };

  // Reads `bytes`, appending what they complete to `out`. False once the body is malformed
  // (failure() says how); nothing more is read then.
  bool feed(std::string_view bytes, std::vector<piece>& out);
  // The body ended: true when its closing delimiter was read.
  bool finish();
  const std::optional<error>& failure() const { return failure_; }

private:
  enum class state { preamble, after_delimiter, headers, body, done };
  bool fail(std::string message);
  bool read_headers(std::string_view block, piece& begin);

  std::string delimiter_; // "\r\n--" + boundary
  limits limits_;
  state state_ = state::preamble;
  std::string buf_;
  std::size_t parts_ = 0;
  std::optional<error> failure_;
};

} // namespace sandboxd::e2b
