#include "node/daemon_settings.hpp"

#include "node/runtime_set.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <sstream>

namespace sandboxd::node {
namespace {

events::error invalid(std::string message) {
  return events::make_error(events::errc::invalid_argument, std::move(message));
}

// Reads one table of the config file; the first problem found is kept.
class table_reader {
public:
  table_reader(const toml::table& t, std::string where, std::optional<events::error>& failure)
      : t_(t), where_(std::move(where)), failure_(failure) {}

  void allow(std::initializer_list<std::string_view> keys) {
    for (auto&& [key, value] : t_)
      if (std::find(keys.begin(), keys.end(), key.str()) == keys.end()) {
        std::string list;
        for (auto k : keys)
          list += (list.empty() ? "" : ", ") + std::string(k);
        fail("unknown key `" + std::string(key.str()) + "`; the keys here are: " + list);
        return;
      }
  }
  void read(std::string_view key, std::string& out) {
    if (auto* n = present(key)) {
      if (auto v = n->value<std::string>())
        out = *v;
      else
        fail_type(key, "a string");
    }
  }
  void read(std::string_view key, std::int64_t& out) {
    if (auto* n = present(key)) {
      if (auto v = n->value<std::int64_t>(); v && n->is_integer())
        out = *v;
      else
        fail_type(key, "an integer");
    }
  }
  void read(std::string_view key, std::optional<std::int64_t>& out) {
    std::int64_t v = 0;
    if (present(key)) {
      read(key, v);
      if (!failure_)
        out = v;
    }
  }
  void read(std::string_view key, double& out) {
    if (auto* n = present(key)) {
      if (auto v = n->value<double>(); v && (n->is_floating_point() || n->is_integer()))
        out = *v;
      else
        fail_type(key, "a number");
    }
  }
  void read(std::string_view key, bool& out) {
    if (auto* n = present(key)) {
      if (auto v = n->value<bool>(); v && n->is_boolean())
        out = *v;
      else
        fail_type(key, "true or false");
    }
  }
  void read(std::string_view key, std::vector<std::string>& out) {
    if (auto* n = present(key)) {
      const toml::array* a = n->as_array();
      std::vector<std::string> v;
      for (std::size_t i = 0; a && i < a->size(); ++i) {
        auto s = (*a)[i].value<std::string>();
        if (!s) {
          a = nullptr;
          break;
        }
        v.push_back(*s);
      }
      if (a)
        out = std::move(v);
      else
        fail_type(key, "an array of strings");
    }
  }
  // A sub-table; nullptr when absent (or not a table: then failed).
  const toml::table* table(std::string_view key) {
    auto* n = present(key);
    if (!n)
      return nullptr;
    if (!n->is_table()) {
      fail_type(key, "a table");
      return nullptr;
    }
    return n->as_table();
  }
  std::string where(std::string_view sub) const { return where_ + "[" + std::string(sub) + "]"; }

private:
  const toml::node* present(std::string_view key) {
    if (failure_)
      return nullptr;
    return t_.get(key);
  }
  void fail(const std::string& what) {
    if (!failure_)
      failure_ = invalid(where_ + ": " + what);
  }
  void fail_type(std::string_view key, const char* expected) {
    fail("`" + std::string(key) + "` must be " + expected);
  }

  const toml::table& t_;
  std::string where_;
  std::optional<events::error>& failure_;
};

std::string toml_string(const std::string& s) {
  std::ostringstream o;
  o << toml::value<std::string>(s);
  return o.str();
}

std::string toml_strings(const std::vector<std::string>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i)
    out += (i ? ", " : "") + toml_string(v[i]);
  return out + "]";
}

// The keys of `t` and their string values into `out` (replaced whole), unless `failure` is
// set or becomes set: a value that is not a string fails, naming `where`, the key and `must`.
void read_string_pairs(const toml::table& t, const std::string& where, const char* must,
                       std::optional<events::error>& failure,
                       std::vector<std::pair<std::string, std::string>>& out) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (auto&& [key, value] : t) {
    auto v = value.value<std::string>();
    if (!v || !value.is_string()) {
      if (!failure)
        failure = invalid(where + ": `" + std::string(key.str()) + "` " + must);
      return;
    }
    pairs.emplace_back(std::string(key.str()), *v);
  }
  if (!failure)
    out = std::move(pairs);
}

} // namespace

std::optional<events::error> apply_config(daemon_settings& s, std::string_view toml_text,
                                          const std::string& source) {
  toml::table doc;
  try {
    doc = toml::parse(toml_text, source);
  } catch (const toml::parse_error& e) {
    std::ostringstream m;
    m << "config file " << source << " line " << e.source().begin.line << ": " << e.description()
      << "; fix the TOML syntax";
    return invalid(m.str());
  }
  std::optional<events::error> failure;
  const std::string where = "config file " + source;
  table_reader top(doc, where + " ", failure);
  top.allow({"data_dir", "listen", "metrics_addr", "console_addr", "e2b_addr", "log", "event_log",
             "kafka", "postgres", "runtimes", "tokens", "projections", "tls", "quotas", "limits",
             "templates", "pools", "network"});
  top.read("data_dir", s.data_dir);
  top.read("listen", s.listen);
  top.read("metrics_addr", s.metrics_addr);
  top.read("console_addr", s.console_addr);
  top.read("e2b_addr", s.e2b_addr);
  if (const auto* t = top.table("log")) {
    table_reader r(*t, top.where("log"), failure);
    r.allow({"format", "level"});
    r.read("format", s.log_format);
    r.read("level", s.log_level);
  }
  if (const auto* t = top.table("event_log")) {
    table_reader r(*t, top.where("event_log"), failure);
    r.allow({"kind", "partitions"});
    r.read("kind", s.event_log);
    r.read("partitions", s.partitions);
  }
  if (const auto* t = top.table("kafka")) {
    table_reader r(*t, top.where("kafka"), failure);
    r.allow({"brokers", "topic", "replication_factor", "min_insync_replicas", "properties"});
    r.read("brokers", s.kafka_brokers);
    r.read("topic", s.kafka_topic);
    r.read("replication_factor", s.kafka_replication);
    r.read("min_insync_replicas", s.kafka_min_insync);
    if (const auto* p = r.table("properties"))
      read_string_pairs(*p, r.where("properties"),
                        "must be a string (librdkafka properties are strings)", failure,
                        s.kafka_properties);
  }
  if (const auto* t = top.table("postgres")) {
    table_reader r(*t, top.where("postgres"), failure);
    r.allow({"conninfo", "bin_dir"});
    r.read("conninfo", s.postgres);
    r.read("bin_dir", s.postgres_bin_dir);
  }
  if (const auto* t = top.table("runtimes")) {
    table_reader r(*t, top.where("runtimes"), failure);
    r.allow({"enabled", "default"});
    r.read("enabled", s.runtimes);
    r.read("default", s.default_runtime);
  }
  if (const auto* t = top.table("tokens")) {
    table_reader r(*t, top.where("tokens"), failure);
    r.allow({"file", "dev_token"});
    r.read("file", s.tokens_file);
    r.read("dev_token", s.dev_token);
  }
  if (const auto* t = top.table("tls")) {
    table_reader r(*t, top.where("tls"), failure);
    r.allow({"certificate", "key"});
    r.read("certificate", s.tls_certificate);
    r.read("key", s.tls_key);
  }
  if (const auto* t = top.table("quotas")) {
    table_reader r(*t, top.where("quotas"), failure);
    r.allow({"sandboxes", "memory_mib", "cpu_millicores", "pids", "disk_mib", "log_mib_per_hour",
             "templates", "template_mib", "snapshots"});
    r.read("sandboxes", s.quota_sandboxes);
    r.read("memory_mib", s.quota_memory_mib);
    r.read("cpu_millicores", s.quota_cpu_millicores);
    r.read("pids", s.quota_pids);
    r.read("disk_mib", s.quota_disk_mib);
    r.read("log_mib_per_hour", s.quota_log_mib_per_hour);
    r.read("templates", s.quota_templates);
    r.read("template_mib", s.quota_template_mib);
    r.read("snapshots", s.quota_snapshots);
  }
  if (const auto* t = top.table("limits")) {
    table_reader r(*t, top.where("limits"), failure);
    r.allow({"max_memory_mib", "max_cpu_millicores", "max_pids", "max_disk_mib"});
    r.read("max_memory_mib", s.max_memory_mib);
    r.read("max_cpu_millicores", s.max_cpu_millicores);
    r.read("max_pids", s.max_pids);
    r.read("max_disk_mib", s.max_disk_mib);
  }
  if (const auto* t = top.table("templates")) {
    table_reader r(*t, top.where("templates"), failure);
    r.allow({"cache"});
    r.read("cache", s.template_cache);
  }
  if (const auto* t = top.table("network")) {
    table_reader r(*t, top.where("network"), failure);
    r.allow({"link_range", "upstream_dns", "ceiling", "within", "tenants"});
    r.read("link_range", s.network_link_range);
    r.read("upstream_dns", s.network_upstream_dns);
    r.read("ceiling", s.network_ceiling);
    r.read("within", s.network_within);
    if (const auto* p = r.table("tenants"))
      read_string_pairs(*p, r.where("tenants"), "must be a string: none, allowlist or all", failure,
                        s.network_tenant_ceilings);
  }
  if (const auto* t = top.table("projections")) {
    table_reader r(*t, top.where("projections"), failure);
    r.allow({"projectors"});
    r.read("projectors", s.projectors);
  }
  if (const auto* n = doc.get("pools"); n && !failure) {
    const auto* list = n->as_array();
    if (!list || !list->is_array_of_tables())
      return invalid(where + ": `pools` must be an array of tables ([[pools]])");
    std::vector<pool_entry> pools;
    for (std::size_t i = 0; i < list->size() && !failure; ++i) {
      table_reader r(*(*list)[i].as_table(), where + " [[pools]] #" + std::to_string(i + 1),
                     failure);
      r.allow({"template", "runtime", "memory_mib", "cpu_millicores", "pids", "disk_mib", "size",
               "maximum", "refill_per_second"});
      pool_entry p;
      r.read("template", p.template_name);
      r.read("runtime", p.runtime);
      r.read("memory_mib", p.memory_mib);
      r.read("cpu_millicores", p.cpu_millicores);
      r.read("pids", p.pids);
      r.read("disk_mib", p.disk_mib);
      r.read("size", p.size);
      r.read("maximum", p.maximum);
      r.read("refill_per_second", p.refill_per_second);
      pools.push_back(std::move(p));
    }
    if (!failure)
      s.pools = std::move(pools);
  }
  return failure;
}

std::optional<events::error> load_config_file(daemon_settings& s, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return events::make_error(events::errc::not_found,
                              "cannot read config file " + path + "; fix --config");
  std::stringstream ss;
  ss << in.rdbuf();
  return apply_config(s, ss.str(), path);
}

std::string to_toml(const daemon_settings& s) {
  std::ostringstream o;
  o << "data_dir = " << toml_string(s.data_dir) << "\n"
    << "listen = " << toml_strings(s.listen) << "\n"
    << "metrics_addr = " << toml_string(s.metrics_addr) << "\n"
    << "console_addr = " << toml_string(s.console_addr) << "\n"
    << "e2b_addr = " << toml_string(s.e2b_addr) << "\n\n"
    << "[log]\nformat = " << toml_string(s.log_format) << "\nlevel = " << toml_string(s.log_level)
    << "\n\n"
    << "[event_log]\nkind = " << toml_string(s.event_log) << "\npartitions = " << s.partitions
    << "\n\n"
    << "[kafka]\nbrokers = " << toml_string(s.kafka_brokers)
    << "\ntopic = " << toml_string(s.kafka_topic)
    << "\nreplication_factor = " << s.kafka_replication
    << "\nmin_insync_replicas = " << s.kafka_min_insync << "\n\n[kafka.properties]\n";
  for (const auto& [k, v] : s.kafka_properties)
    o << toml_string(k) << " = " << toml_string(v) << "\n";
  o << "\n[postgres]\nconninfo = " << toml_string(s.postgres)
    << "\nbin_dir = " << toml_string(s.postgres_bin_dir) << "\n\n"
    << "[runtimes]\nenabled = " << toml_strings(s.runtimes)
    << "\ndefault = " << toml_string(s.default_runtime) << "\n\n"
    << "[tokens]\nfile = " << toml_string(s.tokens_file)
    << "\ndev_token = " << (s.dev_token ? "true" : "false") << "\n\n"
    << "[projections]\nprojectors = " << s.projectors << "\n\n"
    << "[tls]\ncertificate = " << toml_string(s.tls_certificate)
    << "\nkey = " << toml_string(s.tls_key) << "\n\n"
    << "[templates]\ncache = " << toml_string(s.template_cache) << "\n\n"
    << "[network]\nlink_range = " << toml_string(s.network_link_range)
    << "\nupstream_dns = " << toml_string(s.network_upstream_dns)
    << "\nceiling = " << toml_string(s.network_ceiling)
    << "\nwithin = " << toml_strings(s.network_within) << "\n\n[network.tenants]\n";
  for (const auto& [k, v] : s.network_tenant_ceilings)
    o << toml_string(k) << " = " << toml_string(v) << "\n";
  // Bounds left unset stay unset: they are the node's fair share, resolved at start.
  const auto put = [&o](const char* key, const std::optional<std::int64_t>& v) {
    if (v)
      o << key << " = " << *v << "\n";
  };
  o << "\n[quotas]\n";
  put("sandboxes", s.quota_sandboxes);
  put("memory_mib", s.quota_memory_mib);
  put("cpu_millicores", s.quota_cpu_millicores);
  put("pids", s.quota_pids);
  put("disk_mib", s.quota_disk_mib);
  put("log_mib_per_hour", s.quota_log_mib_per_hour);
  put("templates", s.quota_templates);
  put("template_mib", s.quota_template_mib);
  put("snapshots", s.quota_snapshots);
  o << "\n[limits]\n";
  put("max_memory_mib", s.max_memory_mib);
  put("max_cpu_millicores", s.max_cpu_millicores);
  put("max_pids", s.max_pids);
  put("max_disk_mib", s.max_disk_mib);
  for (const auto& p : s.pools) {
    o << "\n[[pools]]\ntemplate = " << toml_string(p.template_name)
      << "\nruntime = " << toml_string(p.runtime) << "\nmemory_mib = " << p.memory_mib
      << "\ncpu_millicores = " << p.cpu_millicores << "\npids = " << p.pids
      << "\ndisk_mib = " << p.disk_mib << "\nsize = " << p.size << "\n";
    put("maximum", p.maximum);
    o << "refill_per_second = " << toml::value<double>(p.refill_per_second) << "\n";
  }
  return o.str();
}

daemon_config_result to_daemon_config(const daemon_settings& s) {
  daemon_config_result r;
  auto fail = [&](std::string m) {
    r.failure = invalid(std::move(m));
    return r;
  };
  daemon_config c;
  if (s.data_dir.empty())
    return fail("data_dir is empty; give --data-dir");
  c.node.data_dir = std::filesystem::absolute(s.data_dir).lexically_normal().string();
  while (c.node.data_dir.size() > 1 && c.node.data_dir.back() == '/')
    c.node.data_dir.pop_back();

  if (s.log_format == "text")
    c.format = log_format::text;
  else if (s.log_format == "json")
    c.format = log_format::json;
  else
    return fail("log format \"" + s.log_format + "\" is unknown; use text or json");
  static const std::vector<std::string> levels{"trace", "debug", "info", "warn", "error"};
  if (std::find(levels.begin(), levels.end(), s.log_level) == levels.end())
    return fail("log level \"" + s.log_level +
                "\" is unknown; use trace, debug, info, warn or error");
  c.log_level = s.log_level;

  if (s.event_log == "file") {
    c.node.log = log_kind::file;
  } else if (s.event_log == "kafka") {
    c.node.log = log_kind::kafka;
    if (s.kafka_brokers.empty())
      return fail("the kafka event log needs brokers; give --kafka-brokers HOST:PORT[,...]");
    if (s.kafka_topic.empty())
      return fail("the kafka topic is empty; give --kafka-topic");
  } else {
    return fail("event log \"" + s.event_log + "\" is unknown; use file or kafka");
  }
  if (s.partitions < 1 || s.partitions > 1024)
    return fail("partitions must be 1 to 1024 (it is " + std::to_string(s.partitions) + ")");
  c.node.partitions = static_cast<std::int32_t>(s.partitions);
  c.node.template_cache = s.template_cache;
  if (s.kafka_replication < 1 || s.kafka_replication > 32767)
    return fail("the kafka replication factor must be 1 to 32767 (it is " +
                std::to_string(s.kafka_replication) + ")");
  if (s.kafka_min_insync < 1 || s.kafka_min_insync > s.kafka_replication)
    return fail("the kafka min_insync_replicas must be 1 to the replication factor " +
                std::to_string(s.kafka_replication) + " (it is " +
                std::to_string(s.kafka_min_insync) + ")");
  c.node.kafka.brokers = s.kafka_brokers;
  c.node.kafka.topic = s.kafka_topic;
  c.node.kafka.replication_factor = static_cast<std::int16_t>(s.kafka_replication);
  c.node.kafka.min_insync_replicas = static_cast<std::int32_t>(s.kafka_min_insync);
  c.node.kafka.config = s.kafka_properties;

  c.node.postgres = s.postgres;
  c.node.postgres_bin_dir = s.postgres_bin_dir;

  for (const auto& name : s.runtimes) {
    auto k = parse_runtime_kind(name);
    if (!k)
      return fail("runtime \"" + name + "\" is unknown; use runsc, crun or hollow");
    c.node.runtimes.push_back(*k);
  }
  if (!s.default_runtime.empty()) {
    auto k = parse_runtime_kind(s.default_runtime);
    if (!k)
      return fail("default runtime \"" + s.default_runtime +
                  "\" is unknown; use runsc, crun or hollow");
    c.node.default_runtime = *k;
  }

  c.node.tokens_file = s.tokens_file.empty()
                         ? ""
                         : std::filesystem::absolute(s.tokens_file).lexically_normal().string();
  c.node.dev_token = s.dev_token;
  if (s.projectors < 1 || s.projectors > 64)
    return fail("projectors must be 1 to 64 (it is " + std::to_string(s.projectors) + ")");
  c.node.projectors = static_cast<std::size_t>(s.projectors);

  const std::vector<std::string> listen =
    s.listen.empty() ? std::vector<std::string>{"unix:" + c.node.data_dir + "/sandboxd.sock"}
                     : s.listen;
  for (const auto& text : listen) {
    auto a = parse_listen_address(text);
    if (!a.value)
      return fail(a.failure->message);
    c.listen.push_back(*a.value);
  }
  if (!s.metrics_addr.empty()) {
    auto a = parse_tcp_endpoint(s.metrics_addr);
    if (!a.value)
      return fail("metrics address: " + a.failure->message);
    c.metrics = a.value;
  }
  if (s.tls_certificate.empty() != s.tls_key.empty())
    return fail("TLS needs both a certificate and a key; give --tls-cert and --tls-key");
  auto absolute = [](const std::string& p) {
    return p.empty() ? p : std::filesystem::absolute(p).lexically_normal().string();
  };
  c.tls_certificate = absolute(s.tls_certificate);
  c.tls_key = absolute(s.tls_key);
  // An HTTP surface of the daemon (the console, the E2B endpoint): a port alone is loopback,
  // and anywhere else is served over TLS only.
  auto http_address = [&](const char* what, const std::string& text,
                          std::optional<listen_address>& out) -> std::optional<std::string> {
    if (text.empty())
      return std::nullopt;
    const bool port_only = text.find_first_not_of("0123456789") == std::string::npos;
    auto a = parse_tcp_endpoint(port_only ? "127.0.0.1:" + text : text);
    if (!a.value)
      return std::string(what) + " address: " + a.failure->message;
    if (!a.value->loopback() && c.tls_certificate.empty())
      return std::string(what) + " address " + text + " is not loopback: the " + what +
             " is served there over TLS only; give --tls-cert and --tls-key, or a loopback "
             "address (127.0.0.1:PORT)";
    out = a.value;
    return std::nullopt;
  };
  if (auto why = http_address("console", s.console_addr, c.console))
    return fail(*why);
  if (auto why = http_address("E2B endpoint", s.e2b_addr, c.e2b))
    return fail(*why);
  const std::pair<const char*, const std::optional<std::int64_t>*> bounds[] = {
    {"quotas.sandboxes", &s.quota_sandboxes},
    {"quotas.memory_mib", &s.quota_memory_mib},
    {"quotas.cpu_millicores", &s.quota_cpu_millicores},
    {"quotas.pids", &s.quota_pids},
    {"quotas.disk_mib", &s.quota_disk_mib},
    {"quotas.log_mib_per_hour", &s.quota_log_mib_per_hour},
    {"quotas.templates", &s.quota_templates},
    {"quotas.template_mib", &s.quota_template_mib},
    {"quotas.snapshots", &s.quota_snapshots},
    {"limits.max_memory_mib", &s.max_memory_mib},
    {"limits.max_cpu_millicores", &s.max_cpu_millicores},
    {"limits.max_pids", &s.max_pids},
    {"limits.max_disk_mib", &s.max_disk_mib}};
  for (const auto& [name, v] : bounds)
    if (*v && **v < 0)
      return fail(std::string(name) + " is negative; use 0 for no limit");
  const auto u = [](const std::optional<std::int64_t>& v) -> std::optional<std::uint64_t> {
    if (!v)
      return std::nullopt;
    return static_cast<std::uint64_t>(*v);
  };
  c.bounds.quota_sandboxes = u(s.quota_sandboxes);
  c.bounds.quota_memory_mib = u(s.quota_memory_mib);
  c.bounds.quota_cpu_millicores = u(s.quota_cpu_millicores);
  c.bounds.quota_pids = u(s.quota_pids);
  c.bounds.quota_disk_mib = u(s.quota_disk_mib);
  c.bounds.quota_log_mib_per_hour = u(s.quota_log_mib_per_hour);
  c.bounds.max_memory_mib = u(s.max_memory_mib);
  c.bounds.max_cpu_millicores = u(s.max_cpu_millicores);
  c.bounds.max_pids = u(s.max_pids);
  c.bounds.max_disk_mib = u(s.max_disk_mib);
  c.bounds.quota_templates = u(s.quota_templates);
  c.bounds.quota_template_mib = u(s.quota_template_mib);
  for (const auto& p : s.pools) {
    const auto where = "pool of template " + p.template_name + ": ";
    auto kind = parse_runtime_kind(p.runtime);
    if (!kind)
      return fail(where + "runtime \"" + p.runtime + "\" is unknown; use runsc, crun or hollow");
    for (auto v : {p.memory_mib, p.cpu_millicores, p.pids, p.disk_mib, p.size})
      if (v < 0 || v > std::numeric_limits<std::uint32_t>::max())
        return fail(where + "limits and size must be 0 to 4294967295");
    const auto maximum = p.maximum.value_or(p.size);
    if (maximum < 0 || maximum > std::numeric_limits<std::uint32_t>::max())
      return fail(where + "maximum must be 0 to 4294967295");
    actors::pool_settings ps;
    ps.key.template_name = p.template_name;
    ps.key.runtime = *kind;
    ps.key.limits = {static_cast<std::uint32_t>(p.memory_mib),
                     static_cast<std::uint32_t>(p.cpu_millicores),
                     static_cast<std::uint32_t>(p.pids), static_cast<std::uint32_t>(p.disk_mib)};
    ps.size = static_cast<std::uint32_t>(p.size);
    ps.maximum = static_cast<std::uint32_t>(maximum);
    ps.refill_per_second = p.refill_per_second;
    if (auto why = actors::check(ps))
      return fail(*why);
    for (const auto& other : c.node.plane.pools)
      if (other.key == ps.key)
        return fail("two [[pools]] have the key " + actors::to_string(ps.key) +
                    "; give each key one pool");
    c.node.plane.pools.push_back(std::move(ps));
  }
  c.bounds.quota_snapshots = u(s.quota_snapshots);
  // Networks.
  c.node.network.link_range = s.network_link_range;
  c.node.network.upstream_dns = s.network_upstream_dns;
  const auto mode_of = [](const std::string& m) -> std::optional<events::network_mode> {
    if (m == "none")
      return events::network_mode::none;
    if (m == "allowlist")
      return events::network_mode::allow_list;
    if (m == "all")
      return events::network_mode::full;
    return std::nullopt;
  };
  const auto ceiling = mode_of(s.network_ceiling);
  if (!ceiling)
    return fail("network.ceiling \"" + s.network_ceiling +
                "\" is not a mode; use none, allowlist or all");
  c.network_ceiling.widest = *ceiling;
  for (const auto& w : s.network_within) {
    auto rule = network::parse_rule(w);
    if (!rule)
      return fail("network.within: " + rule.err().message);
    c.network_ceiling.within.push_back(std::move(rule).value());
  }
  for (const auto& [tenant, m] : s.network_tenant_ceilings) {
    const auto mode = mode_of(m);
    if (!mode)
      return fail("network.tenants." + tenant + " \"" + m +
                  "\" is not a mode; use none, allowlist or all");
    auto tc = c.network_ceiling;
    tc.widest = *mode;
    c.network_ceilings[tenant] = std::move(tc);
  }
  r.value = std::move(c);
  return r;
}

} // namespace sandboxd::node
