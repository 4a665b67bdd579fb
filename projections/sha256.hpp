// sha256 — SHA-256 digests (OpenSSL) as lowercase hex, for migration checksums and
// the audit hash chain. The hex form is what both compare (the audit tables store the
// bytes; see docs/audit-log.md).
#pragma once

#include <string>
#include <string_view>

namespace sandboxd::projections {

// The SHA-256 of `data` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

// The SHA-256 of `a` followed by `b` (without joining them first), as sha256_hex.
std::string sha256_hex(std::string_view a, std::string_view b);

} // namespace sandboxd::projections
