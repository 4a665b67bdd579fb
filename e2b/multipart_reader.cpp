#include "e2b/multipart_reader.hpp"

#include <algorithm>
#include <cctype>

namespace sandboxd::e2b {

namespace {

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos)
    return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

// Whether `word`, blanks around it left out, is `name` (lowercase) in any case.
bool is(std::string_view word, std::string_view name) {
  word = trim(word);
  return word.size() == name.size() &&
         std::equal(word.begin(), word.end(), name.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == b;
         });
}

// The parameters of a header value "type; a=b; c="d"": each name lowercased, each value a
// token or an unescaped quoted string. Nothing for a malformed quoted string.
std::optional<std::vector<std::pair<std::string, std::string>>> parameters(std::string_view v) {
  std::vector<std::pair<std::string, std::string>> out;
  auto semi = v.find(';');
  if (semi == std::string_view::npos)
    return out;
  v.remove_prefix(semi + 1);
  while (true) {
    v = trim(v);
    if (v.empty())
      return out;
    const auto eq = v.find('=');
    if (eq == std::string_view::npos)
      return std::nullopt;
    std::string name(trim(v.substr(0, eq)));
    for (auto& c : name)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    v.remove_prefix(eq + 1);
    v = trim(v);
    std::string value;
    if (!v.empty() && v.front() == '"') {
      std::size_t i = 1;
      bool closed = false;
      for (; i < v.size(); ++i) {
        if (v[i] == '\\' && i + 1 < v.size()) {
          value.push_back(v[++i]);
        } else if (v[i] == '"') {
          closed = true;
          break;
        } else {
          value.push_back(v[i]);
        }
      }
      if (!closed)
        return std::nullopt;
      v.remove_prefix(i + 1);
      v = trim(v);
      if (!v.empty() && v.front() != ';')
        return std::nullopt;
    } else {
      const auto end = v.find(';');
      value = std::string(trim(v.substr(0, end)));
      v = end == std::string_view::npos ? std::string_view{} : v.substr(end);
    }
    out.emplace_back(std::move(name), std::move(value));
    if (!v.empty() && v.front() == ';')
      v.remove_prefix(1);
  }
}

} // namespace

result<std::string> multipart_reader::boundary_of(std::string_view content_type) {
  const auto semi = content_type.find(';');
  if (!is(content_type.substr(0, semi), "multipart/form-data"))
    return make_error(errc::invalid_argument,
                      "Content-Type " + std::string(content_type) + " is not multipart/form-data");
  auto params = parameters(content_type);
  if (params)
    for (const auto& [name, value] : *params)
      if (name == "boundary") {
        if (value.empty() || value.size() > 70)
          return make_error(errc::invalid_argument,
                            "the multipart boundary must have 1 to 70 characters");
        return value;
      }
  return make_error(errc::invalid_argument, "Content-Type multipart/form-data has no boundary");
}

multipart_reader::multipart_reader(std::string_view boundary, limits l)
    : delimiter_("\r\n--" + std::string(boundary)), limits_(l) {
  // The first delimiter may open the body without a line break before it.
  buf_ = "\r\n";
}

bool multipart_reader::fail(std::string message) {
  failure_ = make_error(errc::invalid_argument, "malformed multipart body: " + std::move(message));
  buf_.clear();
  return false;
}

bool multipart_reader::read_headers(std::string_view block, piece& begin) {
  bool disposition = false;
  while (!block.empty()) {
    const auto eol = block.find("\r\n");
    const auto line = block.substr(0, eol);
    block = eol == std::string_view::npos ? std::string_view{} : block.substr(eol + 2);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos)
      return fail("a part header without a colon");
    if (!is(line.substr(0, colon), "content-disposition"))
      continue;
    const auto value = trim(line.substr(colon + 1));
    if (!is(value.substr(0, value.find(';')), "form-data"))
      return fail("a part that is not form-data");
    auto params = parameters(value);
    if (!params)
      return fail("a Content-Disposition that cannot be read");
    for (auto& [name, v] : *params) {
      if (name == "name")
        begin.name = std::move(v);
      else if (name == "filename")
        begin.filename = std::move(v);
    }
    disposition = true;
  }
  if (!disposition)
    return fail("a part without Content-Disposition");
  return true;
}

bool multipart_reader::feed(std::string_view bytes, std::vector<piece>& out) {
  if (failure_)
    return false;
  if (state_ == state::done)
    return true; // the epilogue is ignored
  buf_.append(bytes);
  while (true) {
    switch (state_) {
    case state::preamble: {
      const auto at = buf_.find(delimiter_);
      if (at == std::string::npos) {
        // Keep only what could begin a delimiter.
        if (buf_.size() >= delimiter_.size())
          buf_.erase(0, buf_.size() - (delimiter_.size() - 1));
        return true;
      }
      buf_.erase(0, at + delimiter_.size());
      state_ = state::after_delimiter;
      break;
    }
    case state::after_delimiter: {
      // "--" ends the body; otherwise optional blanks, then CRLF.
      if (buf_.size() < 2)
        return true;
      if (buf_.compare(0, 2, "--") == 0) {
        state_ = state::done;
        buf_.clear();
        return true;
      }
      std::size_t i = 0;
      while (i < buf_.size() && (buf_[i] == ' ' || buf_[i] == '\t'))
        ++i;
      if (buf_.size() - i < 2) {
        if (i > 64)
          return fail("blanks after a delimiter");
        return true;
      }
      if (buf_.compare(i, 2, "\r\n") != 0)
        return fail("a delimiter not followed by a line break");
      buf_.erase(0, i + 2);
      if (++parts_ > limits_.parts)
        return fail("more than " + std::to_string(limits_.parts) + " parts");
      state_ = state::headers;
      break;
    }
    case state::headers: {
      std::size_t end;
      if (buf_.compare(0, 2, "\r\n") == 0)
        end = 0; // no headers at all
      else {
        end = buf_.find("\r\n\r\n");
        if (end == std::string::npos) {
          if (buf_.size() > limits_.header_bytes)
            return fail("a part's headers are longer than " + std::to_string(limits_.header_bytes) +
                        " bytes");
          return true;
        }
        if (end > limits_.header_bytes)
          return fail("a part's headers are longer than " + std::to_string(limits_.header_bytes) +
                      " bytes");
      }
      piece begin;
      begin.type = piece::kind::part_begin;
      if (!read_headers(std::string_view(buf_).substr(0, end), begin))
        return false;
      out.push_back(std::move(begin));
      buf_.erase(0, end == 0 ? 2 : end + 4);
      state_ = state::body;
      break;
    }
    case state::body: {
      const auto at = buf_.find(delimiter_);
      if (at == std::string::npos) {
        if (buf_.size() >= delimiter_.size()) {
          const auto keep = delimiter_.size() - 1;
          piece data;
          data.bytes = buf_.substr(0, buf_.size() - keep);
          buf_.erase(0, buf_.size() - keep);
          out.push_back(std::move(data));
        }
        return true;
      }
      if (at > 0) {
        piece data;
        data.bytes = buf_.substr(0, at);
        out.push_back(std::move(data));
      }
      piece end;
      end.type = piece::kind::part_end;
      out.push_back(std::move(end));
      buf_.erase(0, at + delimiter_.size());
      state_ = state::after_delimiter;
      break;
    }
    case state::done:
      return true;
    }
  }
}

bool multipart_reader::finish() {
  if (failure_)
    return false;
  if (state_ != state::done)
    return fail("the body ended before its closing delimiter");
  return true;
}

} // namespace sandboxd::e2b
