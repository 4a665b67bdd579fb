// The node's pure parts: the daemon's config file and settings, listen addresses, the
// tokens file and token lookup, the choice of runtimes, JSON log lines.
#define BOOST_TEST_MODULE node_settings
#include <boost/test/unit_test.hpp>

#include "node/daemon_settings.hpp"
#include "node/listen_address.hpp"
#include "node/logging.hpp"
#include "node/resource_bounds.hpp"
#include "node/runtime_set.hpp"
#include "node/start_error.hpp"
#include "node/tokens.hpp"

#include <nlohmann/json.hpp>

#include <map>

namespace nd = sandboxd::node;
namespace ev = sandboxd::events;

namespace {

std::string hex_of(const nd::token_digest& d) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (auto b : d) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

std::string entry(const std::string& token, const std::string& tenant,
                  const std::string& scopes = "[\"sandboxes\"]") {
  return "[[token]]\nsha256 = \"" + hex_of(nd::token_sha256(token)) + "\"\ntenant = \"" + tenant +
         "\"\nprincipal = \"" + tenant + "-bot\"\nscopes = " + scopes + "\n";
}

// A machine where `available` runtimes can run and the others cannot.
nd::unavailable_fn machine_with(std::vector<ev::runtime_kind> available) {
  return [available](ev::runtime_kind k) -> std::optional<std::string> {
    for (auto a : available)
      if (a == k)
        return std::nullopt;
    return ev::to_string(k) + " is not installed";
  };
}

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const nd::start_error& e) {
    return e.what();
  }
  return "";
}

} // namespace

BOOST_AUTO_TEST_SUITE(config_file)

BOOST_AUTO_TEST_CASE(every_documented_key_is_read) {
  nd::daemon_settings s;
  const auto e = nd::apply_config(s, R"(
data_dir = "/srv/sandboxd"
listen = ["unix:/srv/sandboxd/api.sock", "tcp:127.0.0.1:7000"]
metrics_addr = "127.0.0.1:9464"
[log]
format = "json"
level = "debug"
[event_log]
kind = "kafka"
partitions = 16
[kafka]
brokers = "k1:9092,k2:9092"
topic = "events"
replication_factor = 3
[kafka.properties]
"security.protocol" = "SSL"
[postgres]
conninfo = "host=db dbname=sandboxd"
bin_dir = "/opt/pg/bin"
[runtimes]
enabled = ["runsc", "crun"]
default = "crun"
[tokens]
file = "/etc/sandboxd/tokens.toml"
dev_token = false
[projections]
projectors = 4
)",
                                  "test.toml");
  BOOST_REQUIRE(!e);
  BOOST_TEST(s.data_dir == "/srv/sandboxd");
  BOOST_TEST(s.listen.size() == 2u);
  BOOST_TEST(s.metrics_addr == "127.0.0.1:9464");
  BOOST_TEST(s.log_format == "json");
  BOOST_TEST(s.log_level == "debug");
  BOOST_TEST(s.event_log == "kafka");
  BOOST_TEST(s.partitions == 16);
  BOOST_TEST(s.kafka_brokers == "k1:9092,k2:9092");
  BOOST_TEST(s.kafka_topic == "events");
  BOOST_TEST(s.kafka_replication == 3);
  BOOST_REQUIRE_EQUAL(s.kafka_properties.size(), 1u);
  BOOST_TEST(s.kafka_properties[0].second == "SSL");
  BOOST_TEST(s.postgres == "host=db dbname=sandboxd");
  BOOST_TEST(s.postgres_bin_dir == "/opt/pg/bin");
  BOOST_TEST((s.runtimes == std::vector<std::string>{"runsc", "crun"}));
  BOOST_TEST(s.default_runtime == "crun");
  BOOST_TEST(s.tokens_file == "/etc/sandboxd/tokens.toml");
  BOOST_TEST(!s.dev_token);
  BOOST_TEST(s.projectors == 4);

  auto c = nd::to_daemon_config(s);
  BOOST_REQUIRE(c.value);
  BOOST_TEST((c.value->node.log == nd::log_kind::kafka));
  BOOST_TEST(c.value->node.kafka.replication_factor == 3);
  BOOST_TEST(
    (c.value->node.runtimes == std::vector{ev::runtime_kind::runsc, ev::runtime_kind::crun}));
  BOOST_TEST((c.value->node.default_runtime == ev::runtime_kind::crun));
  BOOST_TEST(c.value->listen.size() == 2u);
  BOOST_TEST(c.value->metrics->port == 9464);
  BOOST_TEST((c.value->format == nd::log_format::json));
}

BOOST_AUTO_TEST_CASE(keys_absent_from_the_file_keep_their_values) {
  nd::daemon_settings s;
  s.data_dir = "/from/flags";
  BOOST_REQUIRE(!nd::apply_config(s, "[log]\nlevel = \"warn\"\n", "t.toml"));
  BOOST_TEST(s.data_dir == "/from/flags");
  BOOST_TEST(s.log_level == "warn");
  BOOST_TEST(s.event_log == "file");
}

BOOST_AUTO_TEST_CASE(an_unknown_key_is_refused_by_name) {
  nd::daemon_settings s;
  auto e = nd::apply_config(s, "[kafka]\nbrokres = \"k:9092\"\n", "t.toml");
  BOOST_REQUIRE(e);
  BOOST_TEST((e->code == ev::errc::invalid_argument));
  BOOST_TEST(e->message.find("brokres") != std::string::npos);
  BOOST_TEST(e->message.find("[kafka]") != std::string::npos);
  e = nd::apply_config(s, "[metrics]\naddr = \"x\"\n", "t.toml");
  BOOST_REQUIRE(e);
  BOOST_TEST(e->message.find("metrics") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_value_of_the_wrong_type_is_refused_by_name) {
  nd::daemon_settings s;
  auto e = nd::apply_config(s, "[event_log]\npartitions = \"8\"\n", "t.toml");
  BOOST_REQUIRE(e);
  BOOST_TEST(e->message.find("partitions") != std::string::npos);
  BOOST_TEST(e->message.find("integer") != std::string::npos);
  e = nd::apply_config(s, "listen = \"unix:/x\"\n", "t.toml");
  BOOST_REQUIRE(e);
  BOOST_TEST(e->message.find("array of strings") != std::string::npos);
  BOOST_TEST(s.partitions == 8);
}

BOOST_AUTO_TEST_CASE(a_syntax_error_names_the_line) {
  nd::daemon_settings s;
  auto e = nd::apply_config(s, "data_dir = \"/x\"\n\n[log\n", "t.toml");
  BOOST_REQUIRE(e);
  BOOST_TEST(e->message.find("line 3") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(printed_settings_read_back_the_same) {
  nd::daemon_settings s;
  s.data_dir = "/srv/\"quoted\" dir";
  s.listen = {"tcp:[::1]:7000"};
  s.kafka_properties = {{"sasl.mechanism", "PLAIN"}};
  s.runtimes = {"crun"};
  s.dev_token = false;
  s.projectors = 3;
  nd::daemon_settings back;
  BOOST_REQUIRE(!nd::apply_config(back, nd::to_toml(s), "printed"));
  BOOST_TEST(back.data_dir == s.data_dir);
  BOOST_TEST(back.listen == s.listen);
  BOOST_TEST(back.kafka_properties == s.kafka_properties);
  BOOST_TEST(back.runtimes == s.runtimes);
  BOOST_TEST(back.dev_token == s.dev_token);
  BOOST_TEST(back.projectors == s.projectors);
}

// The template quotas: keys of [quotas] like the others, printed and read back, reaching the
// node's bounds; unset, a node with a template pool gives each tenant 100 templates and half
// the pool; a node without one (hollow only) none.
// A warm pool whose sandboxes pass a ceiling could never serve a create (the create is
// refused first): the daemon refuses to start with it, naming the pool, field and ceiling.
BOOST_AUTO_TEST_CASE(a_pool_over_a_ceiling_is_named_and_one_within_them_passes) {
  const ev::sandbox_limits ceilings{4096, 2000, 1024, 20480};
  BOOST_TEST(!nd::pool_over_ceilings("p", {512, 1000, 512, 10240}, ceilings).has_value());
  BOOST_TEST(!nd::pool_over_ceilings("p", ceilings, ceilings).has_value(), "at the ceiling");
  BOOST_TEST(!nd::pool_over_ceilings("p", {1 << 20, 64000, 1 << 20, 1 << 30}, {}).has_value(),
             "no ceilings set");
  auto why = nd::pool_over_ceilings("base/crun/m8192", {8192, 1000, 512, 10240}, ceilings);
  BOOST_TEST_REQUIRE(why.has_value());
  BOOST_TEST(*why == "pool base/crun/m8192: memory_mib 8192 is over this node's ceiling of 4096, "
                     "so no create could be served from it; lower the pool's memory_mib or raise "
                     "the ceiling ([limits])");
  for (auto over :
       {ev::sandbox_limits{512, 2001, 512, 10240}, ev::sandbox_limits{512, 1000, 1025, 10240},
        ev::sandbox_limits{512, 1000, 512, 20481}})
    BOOST_TEST(nd::pool_over_ceilings("p", over, ceilings).has_value());
}

BOOST_AUTO_TEST_CASE(the_template_quotas_are_settings_with_defaults) {
  nd::daemon_settings s;
  BOOST_REQUIRE(!nd::apply_config(s, "[quotas]\ntemplates = 3\ntemplate_mib = 512\n", "t.toml"));
  BOOST_TEST(*s.quota_templates == 3);
  BOOST_TEST(*s.quota_template_mib == 512);
  nd::daemon_settings back;
  BOOST_REQUIRE(!nd::apply_config(back, nd::to_toml(s), "printed"));
  BOOST_TEST(*back.quota_templates == 3);
  BOOST_TEST(*back.quota_template_mib == 512);
  auto c = nd::to_daemon_config(s);
  BOOST_REQUIRE(c.value);
  nd::node_capacity cap;
  cap.template_mib = 40'000;
  auto set = nd::resolve(c.value->bounds, cap);
  BOOST_TEST(set.quota.templates == 3u);
  BOOST_TEST(set.quota.template_mib == 512u);
  auto unset = nd::resolve({}, cap);
  BOOST_TEST(unset.quota.templates == 100u);
  BOOST_TEST(unset.quota.template_mib == 20'000u);
  auto none = nd::resolve({}, nd::node_capacity{});
  BOOST_TEST(none.quota.templates == 0u);
  BOOST_TEST(none.quota.template_mib == 0u);
  s.quota_template_mib = -1;
  auto bad = nd::to_daemon_config(s);
  BOOST_TEST(!bad.value);
  BOOST_TEST(
    (bad.failure && bad.failure->message.find("quotas.template_mib") != std::string::npos));
}

BOOST_AUTO_TEST_CASE(settings_are_checked) {
  auto refused = [](auto change, const std::string& word) {
    nd::daemon_settings s;
    change(s);
    auto c = nd::to_daemon_config(s);
    BOOST_TEST(!c.value);
    BOOST_TEST((c.failure && c.failure->message.find(word) != std::string::npos),
               "expected a message naming " << word << ", got "
                                            << (c.failure ? c.failure->message : "none"));
  };
  refused([](auto& s) { s.event_log = "s3"; }, "s3");
  refused([](auto& s) { s.event_log = "kafka"; }, "--kafka-brokers");
  refused([](auto& s) { s.log_format = "xml"; }, "xml");
  refused([](auto& s) { s.log_level = "loud"; }, "loud");
  refused([](auto& s) { s.runtimes = {"docker"}; }, "docker");
  refused([](auto& s) { s.default_runtime = "kata"; }, "kata");
  refused([](auto& s) { s.partitions = 0; }, "partitions");
  refused([](auto& s) { s.projectors = 0; }, "projectors");
  refused([](auto& s) { s.listen = {"http://x"}; }, "unix:");
  refused([](auto& s) { s.metrics_addr = "9464"; }, "metrics");
}

// [[pools]] (docs/pools.md): read, defaulted to a create's limits, checked, printed back.
BOOST_AUTO_TEST_CASE(warm_pools_are_read_checked_and_printed_back) {
  nd::daemon_settings s;
  BOOST_REQUIRE(!nd::apply_config(s, R"(
[[pools]]
template = "python"
runtime = "crun"
size = 4
maximum = 16
refill_per_second = 12.5
[[pools]]
runtime = "runsc"
memory_mib = 1024
size = 2
)",
                                  "pools.toml"));
  BOOST_REQUIRE_EQUAL(s.pools.size(), 2u);
  auto c = nd::to_daemon_config(s);
  BOOST_REQUIRE(c.value);
  const auto& pools = c.value->node.plane.pools;
  BOOST_REQUIRE_EQUAL(pools.size(), 2u);
  BOOST_TEST(sandboxd::actors::to_string(pools[0].key) == "python/crun/m512/c1000/p512/d10240");
  BOOST_TEST(pools[0].size == 4u);
  BOOST_TEST(pools[0].maximum == 16u);
  BOOST_TEST(pools[0].refill_per_second == 12.5);
  BOOST_TEST(sandboxd::actors::to_string(pools[1].key) == "base/runsc/m1024/c1000/p512/d10240");
  BOOST_TEST(pools[1].maximum == 2u, "maximum defaults to the size");
  nd::daemon_settings back;
  BOOST_REQUIRE(!nd::apply_config(back, nd::to_toml(s), "printed"));
  BOOST_TEST((back.pools == s.pools));

  auto refused = [](const std::string& toml, const std::string& word) {
    nd::daemon_settings s;
    auto e = nd::apply_config(s, toml, "pools.toml");
    auto c = e ? nd::daemon_config_result{} : nd::to_daemon_config(s);
    const std::string m = e ? e->message : (c.failure ? c.failure->message : "");
    BOOST_TEST(m.find(word) != std::string::npos, "expected " << word << ", got: " << m);
  };
  refused("[[pools]]\nruntime = \"crun\"\nsize = 4\nmaximum = 2\n", "maximum 2 is below size 4");
  refused("[[pools]]\nsize = 1\n", "runtime");
  refused("[[pools]]\nruntime = \"crun\"\nsizes = 1\n", "sizes");
  refused("[[pools]]\nruntime = \"crun\"\n[[pools]]\nruntime = \"crun\"\n", "two [[pools]]");
  refused("[[pools]]\nruntime = \"crun\"\nrefill_per_second = 0\n", "refill_per_second");
}

BOOST_AUTO_TEST_CASE(the_console_address_is_loopback_by_default_and_tls_only_elsewhere) {
  nd::daemon_settings s;
  s.console_addr = "8470"; // a port alone: loopback
  auto c = nd::to_daemon_config(s);
  BOOST_REQUIRE(c.value);
  BOOST_REQUIRE(c.value->console);
  BOOST_TEST(c.value->console->to_string() == "tcp:127.0.0.1:8470");
  s.console_addr = "0.0.0.0:8470"; // off loopback without a certificate: refused
  c = nd::to_daemon_config(s);
  BOOST_TEST(!c.value);
  BOOST_TEST((c.failure && c.failure->message.find("--tls-cert") != std::string::npos));
  s.tls_certificate = "/etc/sandboxd/cert.pem";
  s.tls_key = "/etc/sandboxd/key.pem";
  c = nd::to_daemon_config(s);
  BOOST_REQUIRE(c.value);
  BOOST_TEST(c.value->console->to_string() == "tcp:0.0.0.0:8470");
  s.console_addr = "";
  BOOST_TEST(!nd::to_daemon_config(s).value->console);
}

BOOST_AUTO_TEST_CASE(the_e2b_address_is_loopback_by_default_and_tls_only_elsewhere) {
  nd::daemon_settings s;
  BOOST_TEST(!nd::to_daemon_config(s).value->e2b); // off by default
  BOOST_TEST(!nd::apply_config(s, "e2b_addr = \"3000\"\n", "test"));
  auto c = nd::to_daemon_config(s);
  BOOST_REQUIRE(c.value);
  BOOST_REQUIRE(c.value->e2b);
  BOOST_TEST(c.value->e2b->to_string() == "tcp:127.0.0.1:3000");
  nd::daemon_settings again; // the printed config reads back to the same address
  BOOST_TEST(!nd::apply_config(again, nd::to_toml(s), "printed"));
  BOOST_TEST(again.e2b_addr == "3000");
  s.e2b_addr = "0.0.0.0:3000";
  c = nd::to_daemon_config(s);
  BOOST_TEST(!c.value);
  BOOST_TEST((c.failure && c.failure->message.find("E2B endpoint address 0.0.0.0:3000 is not "
                                                   "loopback") != std::string::npos));
  s.tls_certificate = "/etc/sandboxd/cert.pem";
  s.tls_key = "/etc/sandboxd/key.pem";
  c = nd::to_daemon_config(s);
  BOOST_REQUIRE(c.value);
  BOOST_TEST(c.value->e2b->to_string() == "tcp:0.0.0.0:3000");
}

BOOST_AUTO_TEST_CASE(the_default_listen_address_is_the_data_directorys_socket) {
  nd::daemon_settings s;
  s.data_dir = "/srv/sbd/";
  auto c = nd::to_daemon_config(s);
  BOOST_REQUIRE(c.value);
  BOOST_REQUIRE_EQUAL(c.value->listen.size(), 1u);
  BOOST_TEST(c.value->listen[0].to_string() == "unix:/srv/sbd/sandboxd.sock");
  BOOST_TEST(c.value->node.data_dir == "/srv/sbd");
  BOOST_TEST(!c.value->metrics);
  BOOST_TEST(c.value->node.postgres.empty());
  BOOST_TEST(c.value->node.runtimes.empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(listen_addresses)

BOOST_AUTO_TEST_CASE(valid_forms_parse) {
  auto u = nd::parse_listen_address("unix:/run/sbd.sock");
  BOOST_REQUIRE(u.value);
  BOOST_TEST((u.value->type == nd::listen_address::kind::unix_socket));
  BOOST_TEST(u.value->path == "/run/sbd.sock");
  BOOST_TEST(u.value->loopback());
  auto t = nd::parse_listen_address("tcp:0.0.0.0:7000");
  BOOST_REQUIRE(t.value);
  BOOST_TEST(t.value->host == "0.0.0.0");
  BOOST_TEST(t.value->port == 7000);
  BOOST_TEST(!t.value->loopback());
  auto v6 = nd::parse_listen_address("tcp:[::1]:7000");
  BOOST_REQUIRE(v6.value);
  BOOST_TEST(v6.value->host == "::1");
  BOOST_TEST(v6.value->loopback());
  BOOST_TEST(v6.value->to_string() == "tcp:[::1]:7000");
  BOOST_TEST(nd::parse_listen_address("tcp:localhost:1").value->loopback());
  BOOST_TEST(nd::parse_listen_address("tcp:127.1.2.3:65535").value->loopback());
  BOOST_TEST(nd::parse_tcp_endpoint("127.0.0.1:9464").value->port == 9464);
}

BOOST_AUTO_TEST_CASE(invalid_forms_say_what_is_expected) {
  for (const char* bad : {"", "unix:", "tcp:", "tcp:host", "tcp:host:0", "tcp:host:65536",
                          "tcp:host:80x", "tcp:::1:80", "tcp:[::1:80", "tcp:[zz]:80",
                          "tcp:bad host:80", "http://x:80", "/run/sbd.sock"}) {
    auto r = nd::parse_listen_address(bad);
    BOOST_TEST(!r.value, bad);
    BOOST_TEST((r.failure && r.failure->code == ev::errc::invalid_argument), bad);
  }
  auto r = nd::parse_listen_address("unix:/" + std::string(200, 'a'));
  BOOST_REQUIRE(!r.value);
  BOOST_TEST(r.failure->message.find("at most 107") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(tokens)

BOOST_AUTO_TEST_CASE(a_token_maps_to_its_entry_and_no_other) {
  auto t = nd::parse_tokens(
    entry("tok-a", "acme") + entry("tok-b", "beta", "[\"admin\", \"sandboxes\"]"), "tokens.toml");
  BOOST_REQUIRE(t.value);
  BOOST_TEST(t.value->size() == 2u);
  auto a = t.value->authenticate("tok-a");
  BOOST_REQUIRE(a);
  BOOST_TEST(a->tenant == "acme");
  BOOST_TEST(a->principal == "acme-bot");
  BOOST_TEST(a->has(nd::scope::sandboxes));
  BOOST_TEST(!a->has(nd::scope::admin));
  auto b = t.value->authenticate("tok-b");
  BOOST_REQUIRE(b);
  BOOST_TEST(b->tenant == "beta");
  BOOST_TEST(b->has(nd::scope::admin));
  BOOST_TEST(!t.value->authenticate("tok-c"));
  BOOST_TEST(!t.value->authenticate("tok-a "));
  BOOST_TEST(!t.value->authenticate(""));
  // The file holds hashes: the hash itself is not a token.
  BOOST_TEST(!t.value->authenticate(hex_of(nd::token_sha256("tok-a"))));
}

BOOST_AUTO_TEST_CASE(a_bad_file_is_refused_whole_naming_the_entry) {
  auto refused = [](const std::string& text, const std::string& word) {
    auto t = nd::parse_tokens(text, "tokens.toml");
    BOOST_TEST(!t.value);
    BOOST_TEST((t.failure && t.failure->message.find(word) != std::string::npos),
               "expected " << word << " in " << (t.failure ? t.failure->message : "no failure"));
  };
  refused(entry("a", "acme") + entry("b", "beta", "[\"root\"]"), "#2");
  refused(entry("a", "acme", "[\"root\"]"), "root");
  refused(entry("a", "acme", "[]"), "scopes");
  refused(entry("a", "acme") + entry("a", "beta"), "twice");
  refused(entry("a", "bad tenant"), "tenant");
  refused("[[token]]\nsha256 = \"abc\"\ntenant = \"t\"\nprincipal = \"p\"\nscopes = [\"admin\"]\n",
          "sha256");
  refused(entry("a", "acme") + "secret = \"x\"\n", "secret");
  refused("[tokens]\n", "tokens");
  refused("[[token]\n", "line 1");
}

BOOST_AUTO_TEST_CASE(made_tokens_are_random_and_well_formed) {
  const auto a = nd::make_token(), b = nd::make_token();
  BOOST_TEST(a != b);
  BOOST_TEST(a.size() == 4u + 64u);
  BOOST_TEST(a.rfind("sbd_", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(sha256_is_the_standard_one) {
  // FIPS 180-2 test vector.
  BOOST_TEST(hex_of(nd::token_sha256("abc")) ==
             "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(runtime_choice)

using ev::runtime_kind;

BOOST_AUTO_TEST_CASE(nothing_configured_takes_runsc_and_crun_with_runsc_the_default) {
  auto c = nd::choose_runtimes({}, {}, machine_with({runtime_kind::runsc, runtime_kind::crun}));
  BOOST_TEST((c.kinds == std::vector{runtime_kind::runsc, runtime_kind::crun}));
  BOOST_TEST((c.default_kind == runtime_kind::runsc));
  BOOST_TEST(c.warnings.empty());
}

BOOST_AUTO_TEST_CASE(nothing_configured_without_crun_takes_runsc_with_a_warning) {
  auto c = nd::choose_runtimes({}, {}, machine_with({runtime_kind::runsc}));
  BOOST_TEST((c.kinds == std::vector{runtime_kind::runsc}));
  BOOST_TEST((c.default_kind == runtime_kind::runsc));
  BOOST_REQUIRE_EQUAL(c.warnings.size(), 1u);
  BOOST_TEST(c.warnings[0].find("crun cannot run sandboxes here") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(nothing_configured_falls_back_to_crun_with_a_warning) {
  auto c = nd::choose_runtimes({}, {}, machine_with({runtime_kind::crun}));
  BOOST_TEST((c.kinds == std::vector{runtime_kind::crun}));
  BOOST_TEST((c.default_kind == runtime_kind::crun));
  BOOST_REQUIRE_EQUAL(c.warnings.size(), 1u);
  BOOST_TEST(c.warnings[0].find("runsc is not installed") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(no_runtime_at_all_is_refused) {
  const auto m = refusal([] { nd::choose_runtimes({}, {}, machine_with({})); });
  BOOST_TEST(m.find("runsc") != std::string::npos);
  BOOST_TEST(m.find("crun") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_configured_runtime_that_cannot_run_is_refused) {
  const auto m = refusal([] {
    nd::choose_runtimes({runtime_kind::crun, runtime_kind::runsc}, {},
                        machine_with({runtime_kind::crun}));
  });
  BOOST_TEST(m.find("runtime runsc cannot run") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_default_must_be_held) {
  const auto m = refusal([] {
    nd::choose_runtimes({runtime_kind::crun}, runtime_kind::runsc,
                        machine_with({runtime_kind::crun, runtime_kind::runsc}));
  });
  BOOST_TEST(m.find("not among") != std::string::npos);
  auto c = nd::choose_runtimes({runtime_kind::crun, runtime_kind::runsc, runtime_kind::crun}, {},
                               machine_with({runtime_kind::crun, runtime_kind::runsc}));
  BOOST_TEST((c.kinds == std::vector{runtime_kind::crun, runtime_kind::runsc}));
  BOOST_TEST((c.default_kind == runtime_kind::runsc));
  c = nd::choose_runtimes({runtime_kind::hollow}, {}, machine_with({runtime_kind::hollow}));
  BOOST_TEST((c.default_kind == runtime_kind::hollow));
  BOOST_TEST(c.warnings.size() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(json_log_lines_are_json_whatever_the_message) {
  const std::string message = std::string("quote \" backslash \\ newline \n tab \t nul ") +
                              std::string(1, '\0') + " bad utf-8 \xff\xfe ok é 😀 end";
  const auto line = nd::json_log_line("2026-12-01T00:00:00.000Z", "info", message);
  BOOST_TEST(line.find('\n') == std::string::npos);
  const auto j = nlohmann::json::parse(line);
  BOOST_TEST(j["level"] == "info");
  const std::string back = j["message"];
  BOOST_TEST(back.find("quote \" backslash \\ newline \n tab \t nul ") == 0u);
  BOOST_TEST(back.find("ok é 😀 end") != std::string::npos);
  BOOST_TEST(back.find("\xef\xbf\xbd\xef\xbf\xbd") != std::string::npos);
}

// [network]: the link range and resolver reach the node, the ceilings the RPC server; printed
// and read back; a mode or rule that does not parse is refused naming the key.
BOOST_AUTO_TEST_CASE(the_network_settings_reach_the_node_and_the_ceilings) {
  nd::daemon_settings s;
  BOOST_REQUIRE(!nd::apply_config(s,
                                  "[network]\nlink_range = \"10.200.0.0/16\"\n"
                                  "upstream_dns = \"192.0.2.53\"\nceiling = \"allowlist\"\n"
                                  "within = [\"*.example.test\"]\n"
                                  "[network.tenants]\ntrial = \"none\"\n",
                                  "t.toml"));
  auto c = nd::to_daemon_config(s);
  BOOST_REQUIRE(c.value);
  BOOST_TEST(c.value->node.network.link_range == "10.200.0.0/16");
  BOOST_TEST(c.value->node.network.upstream_dns == "192.0.2.53");
  BOOST_TEST((c.value->network_ceiling.widest == sandboxd::events::network_mode::allow_list));
  BOOST_TEST(c.value->network_ceiling.within.size() == 1u);
  BOOST_REQUIRE(c.value->network_ceilings.count("trial") == 1u);
  BOOST_TEST(
    (c.value->network_ceilings.at("trial").widest == sandboxd::events::network_mode::none));
  nd::daemon_settings back;
  BOOST_REQUIRE(!nd::apply_config(back, nd::to_toml(s), "printed"));
  BOOST_TEST(back.network_link_range == s.network_link_range);
  BOOST_TEST(back.network_within == s.network_within);
  BOOST_TEST(back.network_tenant_ceilings == s.network_tenant_ceilings);
  s.network_ceiling = "everything";
  auto bad = nd::to_daemon_config(s);
  BOOST_REQUIRE(bad.failure);
  BOOST_TEST(bad.failure->message.find("network.ceiling") != std::string::npos);
  s.network_ceiling = "all";
  s.network_within = {"10.1.2.3/16"};
  bad = nd::to_daemon_config(s);
  BOOST_REQUIRE(bad.failure);
  BOOST_TEST(bad.failure->message.find("network.within") != std::string::npos);
}
