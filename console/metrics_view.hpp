// metrics_view — the node's Prometheus families (node/node_probe.hpp) as JSON for the
// console's Node page: the same figures the /metrics endpoint serves, read from the same
// probe at the same moment, for a person.
//
// {"families": [{"name", "help", "type": "counter"|"gauge"|"histogram"|"summary"|"untyped",
//   "samples": [{"labels": {name: value}, "value"} (counter, gauge, untyped) or
//               {"labels", "count", "sum"} (histogram, summary)]}]}
#pragma once

#include <nlohmann/json.hpp>

#include <vector>

namespace prometheus {
struct MetricFamily;
}

namespace sandboxd::console {

nlohmann::ordered_json metrics_json(const std::vector<prometheus::MetricFamily>& families);

} // namespace sandboxd::console
