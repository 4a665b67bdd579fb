// event_view — one event of the log as sandboxctl shows it (`events`, `watch`).
//
// Text: one line per event, "TIME  SANDBOX  SEQ  KIND  PRINCIPAL  key=value ...", the
// key=value pairs being the payload's essentials. JSON (one document per line): time,
// sandbox_id, sequence, kind, tenant, principal, event_id, partition, offset,
// correlation_id, causation_id, payload {the same essentials}. Both come from one function
// (payload_json), so the two views never disagree. The text line shows every string as
// terminal_text (cli/terminal_text.hpp): a label, path or argv holding ESC or a newline is
// escaped (`\x1b`, `\x0a`), so one event is always one line.
#pragma once

#include "api/client.hpp"
#include "cli/json_util.hpp"

#include <string>

namespace sandboxd::cli {

// The payload's essentials: what a person needs to follow the history (sizes, codes,
// argv, paths); secret values and exec output are never in the log to begin with.
json payload_json(const events::payload& p);

json event_json(const api::streamed_event& e);
std::string event_line(const api::streamed_event& e);

// key=value pairs of a flat JSON object: strings with blanks, quotes or `=` are quoted
// ("a b", a quote as \"), control bytes and backslashes escaped as terminal_text, arrays are
// [a b c], keys ending in _seconds show a duration under the key without the suffix.
std::string pairs_text(const json& object);

} // namespace sandboxd::cli
