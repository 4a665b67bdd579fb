#include "templates/build_cache.hpp"

#include <algorithm>
#include <map>

namespace sandboxd::templates {

sha256_digest step_cache_key(const step_inputs& in) {
  sandboxd::sha256 h;
  h.add("sandboxd build step v1\n");
  for (const auto& l : in.layers)
    h.add("layer " + to_hex(l) + "\n");
  for (const auto& [name, value] : in.env) {
    h.add("env ");
    h.add(name);
    h.add(std::string_view("\0", 1));
    h.add(value);
    h.add(std::string_view("\0\n", 2));
  }
  h.add("workdir ");
  h.add(in.working_directory);
  h.add(std::string_view("\0\nstep ", 7));
  h.add(in.text);
  h.add(std::string_view("\0\n", 2));
  if (in.files)
    h.add("files " + to_hex(*in.files) + "\n");
  return h.finish();
}

std::optional<cached_step> find_cached(const catalog& c, const asker& who,
                                       const sha256_digest& key) {
  std::optional<cached_step> best;
  std::uint64_t best_sequence = 0;
  for (const auto& [id, t] : c.by_id) {
    if (t.scope != events::template_scope::global && t.tenant != who.tenant)
      continue;
    if (t.created.source != events::template_source::spec || t.last_sequence < best_sequence)
      continue;
    for (const auto& s : t.steps) {
      if (!s.started.cache_key || *s.started.cache_key != key || !s.finished ||
          s.finished->outcome != events::op_outcome::completed)
        continue;
      best = cached_step{t.id, s.started.index, s.finished->layer};
      best_sequence = t.last_sequence;
    }
  }
  return best;
}

std::set<std::string> cache_kept_layers(const catalog& c, std::uint64_t max_bytes) {
  // Every step layer of a template that is no longer live, with its bytes and how recent.
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> made; // hex -> (sequence, bytes)
  for (const auto& [id, t] : c.by_id) {
    if (t.live() || t.created.source != events::template_source::spec)
      continue;
    for (const auto& s : t.steps) {
      if (!s.finished || s.finished->outcome != events::op_outcome::completed || !s.finished->layer)
        continue;
      std::uint64_t bytes = 0;
      for (const auto& a : t.layers_added)
        if (a.sha256 == *s.finished->layer)
          bytes = a.bytes;
      auto& m = made[to_hex(*s.finished->layer)];
      m.first = std::max(m.first, t.last_sequence);
      m.second = bytes;
    }
  }
  std::vector<std::pair<std::uint64_t, std::string>> order; // (sequence, hex), latest first
  for (const auto& [hex, m] : made)
    order.emplace_back(m.first, hex);
  std::sort(order.begin(), order.end(), std::greater<>());
  std::set<std::string> out;
  std::uint64_t total = 0;
  for (const auto& [sequence, hex] : order) {
    const auto bytes = made[hex].second;
    if (total + bytes > max_bytes)
      break;
    total += bytes;
    out.insert(hex);
  }
  return out;
}

} // namespace sandboxd::templates
