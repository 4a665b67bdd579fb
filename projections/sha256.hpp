// sha256 — SHA-256 digests (OpenSSL) as lowercase hex, for migration checksums and
// the audit hash chain. The hex form is what both store and compare.
#pragma once

#include <string>
#include <string_view>

namespace sandboxd::projections {

// The SHA-256 of `data` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

} // namespace sandboxd::projections
