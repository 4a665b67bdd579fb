// utf8.hpp — whether bytes are text, and text made of any bytes.
//
// Tenants choose many strings that reach the log and the read models (labels, paths,
// command lines, reasons). PostgreSQL's text and jsonb take only well-formed UTF-8 without
// NUL, and a value it refuses would stop the projection for everyone: the read models store
// `text_of(bytes)`, the API and the state machine refuse what must be exact (`is_utf8`).
#pragma once

#include <string>
#include <string_view>

namespace sandboxd {

// Well-formed UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF.
// NUL is a valid character here; `is_text` also refuses it.
bool is_utf8(std::string_view bytes);
bool is_text(std::string_view bytes);

// The bytes as text: each byte that does not belong to a well-formed sequence, and each NUL,
// becomes U+FFFD; everything else is kept. Returns the bytes unchanged when they are text.
std::string text_of(std::string_view bytes);

} // namespace sandboxd
