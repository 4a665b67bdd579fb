#include "console/metrics_view.hpp"

#include <prometheus/metric_family.h>

#include <cmath>

namespace sandboxd::console {
namespace {

const char* type_name(prometheus::MetricType t) {
  switch (t) {
  case prometheus::MetricType::Counter:
    return "counter";
  case prometheus::MetricType::Gauge:
    return "gauge";
  case prometheus::MetricType::Summary:
    return "summary";
  case prometheus::MetricType::Histogram:
    return "histogram";
  case prometheus::MetricType::Untyped:
    break;
  }
  return "untyped";
}

// JSON has no NaN or infinity: such a value is null.
nlohmann::ordered_json number(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}

} // namespace

nlohmann::ordered_json metrics_json(const std::vector<prometheus::MetricFamily>& families) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& f : families) {
    nlohmann::ordered_json samples = nlohmann::ordered_json::array();
    for (const auto& m : f.metric) {
      nlohmann::ordered_json s;
      s["labels"] = nlohmann::ordered_json::object();
      for (const auto& l : m.label)
        s["labels"][l.name] = l.value;
      switch (f.type) {
      case prometheus::MetricType::Counter:
        s["value"] = number(m.counter.value);
        break;
      case prometheus::MetricType::Gauge:
        s["value"] = number(m.gauge.value);
        break;
      case prometheus::MetricType::Untyped:
        s["value"] = number(m.untyped.value);
        break;
      case prometheus::MetricType::Histogram:
        s["count"] = m.histogram.sample_count;
        s["sum"] = number(m.histogram.sample_sum);
        break;
      case prometheus::MetricType::Summary:
        s["count"] = m.summary.sample_count;
        s["sum"] = number(m.summary.sample_sum);
        break;
      }
      samples.push_back(std::move(s));
    }
    out.push_back({{"name", f.name},
                   {"help", f.help},
                   {"type", type_name(f.type)},
                   {"samples", std::move(samples)}});
  }
  return {{"families", std::move(out)}};
}

} // namespace sandboxd::console
