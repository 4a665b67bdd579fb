// build_cache — the spec build cache (docs/templates.md "The build cache"): a RUN or COPY step
// whose inputs an earlier build already had reuses that build's layer instead of running.
// Pure: the cache is the template stream itself (each step_started's key, its
// step_finished's layer), folded in the catalog; it has no file of its own.
//
// A step's key is the SHA-256 of
//   "sandboxd build step v1\n"
//   "layer <hex>\n"           for each layer below the step, lowest first
//   "env NAME\0VALUE\0\n"     for each variable in effect, in order
//   "workdir <dir>\0\n"       the working directory in effect ("" = "/")
//   "step <text>\0\n"         the step's canonical text (build_spec.hpp)
//   "files <hex>\n"           COPY only: the digest of the files it copies (copied_files)
// so it changes when anything the step's result depends on changes.
//
// The cache is per tenant: a build reuses the steps of its own tenant's builds and of global
// templates, never another tenant's (whose builds it must not learn anything about).
#pragma once

#include "base/sha256.hpp"
#include "templates/template_catalog.hpp"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace sandboxd::templates {

struct step_inputs {
  std::vector<sha256_digest> layers; // the stack below the step, lowest first
  std::vector<std::pair<std::string, std::string>> env;
  std::string working_directory;
  std::string text;
  std::optional<sha256_digest> files; // COPY: the copied files' digest
};

sha256_digest step_cache_key(const step_inputs& in);

struct cached_step {
  std::string template_id; // the build whose step it was
  std::uint32_t index = 0;
  std::optional<sha256_digest> layer; // none: the step changed nothing
};

// The most recent completed step with `key` among the builds `who` may reuse, or nullopt.
std::optional<cached_step> find_cached(const catalog& c, const asker& who,
                                       const sha256_digest& key);

// The layers the cache keeps from collection: those made by completed steps of templates
// that are no longer live (failed or deleted; live ones hold their layers anyway), the most
// recently made first, as long as their bytes together stay within `max_bytes`.
std::set<std::string> cache_kept_layers(const catalog& c, std::uint64_t max_bytes);

} // namespace sandboxd::templates
