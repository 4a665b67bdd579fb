// assets — the console's front end (console/web/: the page, its ES modules, its stylesheet
// and icon), compiled into sandboxd: the daemon serves every byte the page needs and fetches
// nothing from anywhere else. console/embed_assets.cmake writes the table at build time from
// the files as they are in the tree (no build step of the front end itself: the modules are
// served as written).
#pragma once

#include <string_view>
#include <vector>

namespace sandboxd::console {

struct asset {
  std::string_view path;         // below console/web/: "index.html", "pages/timeline.js"
  std::string_view content_type; // "text/javascript; charset=utf-8", ...
  std::string_view body;
  std::string_view etag; // "\"<first 32 hex digits of the SHA-256 of the body>\""
};

const std::vector<asset>& all_assets();
// The asset at `path`, or null.
const asset* find_asset(std::string_view path);

} // namespace sandboxd::console
