// pool_settings.cpp — a warm pool's key as text, and the checks of its settings.
#include "actors/pool_settings.hpp"

#include <cmath>

namespace sandboxd::actors {

std::string to_string(const pool_key& k) {
  const auto& l = k.limits;
  return k.template_name + "/" + events::to_string(k.runtime) + "/m" +
         std::to_string(l.memory_mib) + "/c" + std::to_string(l.cpu_millicores) + "/p" +
         std::to_string(l.pids) + "/d" + std::to_string(l.disk_mib);
}

pool_key key_of(const events::created& spec) {
  return pool_key{spec.template_name, spec.runtime, spec.limits};
}

std::optional<std::string> check(const pool_settings& s) {
  const auto& k = s.key;
  if (k.template_name.empty())
    return "a pool needs a template; name one of the node's templates";
  if (k.template_name.find('/') != std::string::npos)
    return "template name '" + k.template_name + "' holds '/'; name one of the node's templates";
  if (k.limits.memory_mib == 0 || k.limits.cpu_millicores == 0)
    return "pool " + to_string(k) + ": memory and CPU limits must be positive";
  if (s.maximum < s.size)
    return "pool " + to_string(k) + ": maximum " + std::to_string(s.maximum) + " is below size " +
           std::to_string(s.size) + "; set maximum to at least size";
  if (!std::isfinite(s.refill_per_second) || s.refill_per_second <= 0)
    return "pool " + to_string(k) + ": refill_per_second must be positive";
  return std::nullopt;
}

} // namespace sandboxd::actors
