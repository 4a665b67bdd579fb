// Template specs and the build cache, the pure parts (templates/build_spec.hpp,
// dockerfile.hpp, spec_toml.hpp, build_cache.hpp): both formats parse to the same steps with
// the same canonical text, everything outside the subset is refused naming its line and the
// problem, COPY sources stay inside the context, variables expand as documented, and a step's
// cache key changes with each of its inputs and is found only by the tenant that may reuse it.
// Built into test_template_catalog (no binary of its own).
#include <boost/test/unit_test.hpp>

#include "templates/build_cache.hpp"
#include "templates/dockerfile.hpp"
#include "templates/spec_toml.hpp"

using namespace sandboxd;
using namespace sandboxd::templates;
namespace ev = sandboxd::events;

namespace {

build_spec parsed(const result<build_spec>& r) {
  BOOST_TEST_REQUIRE(r.ok(), (r.ok() ? "" : r.err().message));
  return r.value();
}

std::vector<std::string> texts(const build_spec& s) {
  std::vector<std::string> out;
  for (const auto& step : s.steps)
    out.push_back(step_text(step));
  return out;
}

// The refusal of `text` (in `format`): invalid_argument whose message holds every `part`.
void refused(spec_format format, const std::string& text, std::vector<std::string> parts) {
  auto r = parse_spec(format, text);
  BOOST_TEST_REQUIRE(!r.ok(), "accepted: " << text);
  BOOST_TEST(r.code() == errc::invalid_argument);
  for (const auto& p : parts)
    BOOST_TEST(r.err().message.find(p) != std::string::npos,
               "'" << r.err().message << "' lacks '" << p << "'");
}

const char* const k_dockerfile = R"(# syntax=docker/dockerfile:1
# a comment
FROM base
ENV GREETING="hello world" PATH=/app/bin:$PATH
WORKDIR /app
copy tool.sh /app/bin/
RUN echo one \
  # a comment inside a continued line
  && echo two
RUN ["/bin/sh", "-c", "echo three"]
USER app
)";

const char* const k_toml = R"(from = "base"

[[steps]]
env = { GREETING = "hello world", PATH = "/app/bin:$PATH" }

[[steps]]
workdir = "/app"

[[steps]]
copy = "tool.sh"
to = "/app/bin/"

[[steps]]
run = "echo one && echo two"

[[steps]]
run = ["/bin/sh", "-c", "echo three"]

[[steps]]
user = "app"
)";

} // namespace

BOOST_AUTO_TEST_SUITE(build_spec_parsing)

BOOST_AUTO_TEST_CASE(a_dockerfile_parses_to_its_steps_in_order) {
  const auto s = parsed(parse_dockerfile(k_dockerfile));
  BOOST_TEST(s.from == "base");
  BOOST_TEST(s.from_line == 3u);
  BOOST_TEST_REQUIRE(s.steps.size() == 6u);
  BOOST_TEST(s.steps[0].env.size() == 2u);
  BOOST_TEST(s.steps[0].env[0].second == "hello world");
  BOOST_TEST(s.steps[0].env[1].second == "/app/bin:$PATH"); // expanded when built
  BOOST_TEST(s.steps[3].line == 7u);
  BOOST_TEST(s.steps[3].args ==
             (std::vector<std::string>{"/bin/sh", "-c", "echo one && echo two"}));
  BOOST_TEST(s.steps[4].args == (std::vector<std::string>{"/bin/sh", "-c", "echo three"}));
  BOOST_TEST(!s.steps[4].shell_form);
  BOOST_TEST(texts(s) == (std::vector<std::string>{
                           "ENV GREETING=\"hello world\" PATH=/app/bin:$PATH",
                           "WORKDIR /app",
                           "COPY tool.sh /app/bin/",
                           "RUN echo one && echo two",
                           "RUN [\"/bin/sh\",\"-c\",\"echo three\"]",
                           "USER app",
                         }));
}

BOOST_AUTO_TEST_CASE(a_toml_spec_and_its_dockerfile_are_the_same_steps) {
  auto toml = parsed(parse_spec_toml(k_toml));
  auto docker = parsed(parse_dockerfile(k_dockerfile));
  BOOST_TEST(texts(toml) == texts(docker));
  BOOST_TEST(toml.from == docker.from);
  // TOML's tables are in name order: GREETING before PATH here as in the Dockerfile.
  BOOST_TEST(toml.steps[0].env == docker.steps[0].env);
  BOOST_TEST(toml.steps[2].args == docker.steps[2].args);
}

BOOST_AUTO_TEST_CASE(env_quoting_and_the_old_form_are_read_as_docker_reads_them) {
  auto s = parsed(parse_dockerfile("FROM base\nENV A='single $X' B=\"dq \\\"q\\\" \\$Y\" C=a\\ b\n"
                                   "ENV OLD some value here\n"));
  BOOST_TEST_REQUIRE(s.steps.size() == 2u);
  // A `$` that must stay literal is kept as \$ for expansion to unescape.
  BOOST_TEST(s.steps[0].env[0].second == "single \\$X");
  BOOST_TEST(s.steps[0].env[1].second == "dq \"q\" \\$Y");
  BOOST_TEST(s.steps[0].env[2].second == "a b");
  BOOST_TEST(s.steps[1].env[0].first == "OLD");
  BOOST_TEST(s.steps[1].env[0].second == "some value here");
  auto a = expand_variables(s.steps[0].env[0].second, {{"X", "x"}});
  BOOST_TEST_REQUIRE(a.ok());
  BOOST_TEST(a.value() == "single $X");
}

BOOST_AUTO_TEST_CASE(everything_outside_the_subset_is_refused_naming_line_and_problem) {
  const auto d = spec_format::dockerfile;
  refused(d, "FROM base\n\nADD x /x\n", {"line 3", "ADD is not supported", "COPY"});
  refused(d, "FROM base\nCMD [\"sh\"]\n", {"line 2", "CMD is not supported"});
  refused(d, "FROM base\nARG V=1\n", {"line 2", "ARG is not supported"});
  refused(d, "FROM base\nFROBNICATE x\n", {"line 2", "'FROBNICATE' is not a Dockerfile"});
  refused(d, "FROM base AS build\n", {"line 1", "multi-stage"});
  refused(d, "FROM base\nFROM python\n", {"line 2", "second FROM"});
  refused(d, "FROM --platform=linux/arm64 base\n", {"line 1", "FROM --platform"});
  refused(d, "FROM python:3.12\n", {"line 1", "not a template name", "not an image"});
  refused(d, "RUN true\nFROM base\n", {"line 1", "RUN before FROM"});
  refused(d, "# just a comment\n", {"no FROM"});
  refused(d, "FROM base\nRUN --mount=type=cache,target=/x true\n", {"line 2", "RUN --mount"});
  refused(d, "FROM base\nCOPY --from=build /a /b\n", {"line 2", "COPY --from"});
  refused(d, "FROM base\nCOPY --chown=app a /a\n", {"line 2", "COPY --chown"});
  refused(d, "FROM base\nRUN echo \\\n", {"line 2", "ends inside a continued line"});
  refused(d, "# escape=`\nFROM base\n", {"line 1", "escape directive"});
  refused(d, "FROM base\nENV 1X=y\n", {"line 2", "'1X' is not a variable name"});
  refused(d, "FROM base\nENV A=\"open\n", {"line 2", "not closed"});
  refused(d, "FROM base\nRUN\n", {"line 2", "RUN has no command"});
  refused(d, "FROM base\nWORKDIR /a /b\n", {"line 2", "WORKDIR takes one value"});
  refused(d, "FROM base\nUSER app\nRUN id\n", {"line 3", "RUN after USER app", "root"});
  refused(d, "FROM base\nCOPY a b /dir\n", {"line 2", "ending in '/'"});
  // USER root (or 0) before RUN is fine.
  BOOST_TEST(parse_dockerfile("FROM base\nUSER root\nRUN id\nUSER 0:0\nRUN id\n").ok());

  const auto t = spec_format::toml;
  refused(t, "from = \"base\"\n[[steps]]\nrun = \"x\"\ncopy = \"y\"\nto = \"/\"\n",
          {"both", "one instruction per step"});
  refused(t, "from = \"base\"\n[[steps]]\nadd = \"x\"\n", {"line 3", "unknown key 'add'"});
  refused(t, "from = \"base\"\nname = \"x\"\n", {"line 2", "unknown key 'name'"});
  refused(t, "from = \"base\"\n[[steps]]\ncopy = \"x\"\n", {"line 3", "copy needs 'to'"});
  refused(t, "from = \"base\"\n[[steps]]\nrun = \"x\"\nto = \"/\"\n", {"line 4", "copy steps"});
  refused(t, "from = \"base\"\n[[steps]]\nrun = 3\n", {"line 3", "array of strings"});
  refused(t, "from = \"base\"\n[[steps]]\nenv = \"A=b\"\n", {"line 3", "must be a table"});
  refused(t, "from = \"base\n", {"line 1"});
  refused(t, "[[steps]]\nrun = \"x\"\n", {"no FROM"});
}

BOOST_AUTO_TEST_CASE(a_copy_source_stays_inside_the_build_context) {
  const auto d = spec_format::dockerfile;
  refused(d, "FROM base\nCOPY ../secret /x\n",
          {"line 2", "'../secret'", "leaves the build context"});
  refused(d, "FROM base\nCOPY a/../../b /x\n", {"line 2", "leaves the build context"});
  refused(d, "FROM base\nCOPY /etc/passwd /x\n", {"line 2", "'/etc/passwd' is absolute"});
  refused(d, "FROM base\nCOPY [\"/etc\", \"/x\"]\n", {"line 2", "is absolute"});
  refused(d, "FROM base\nCOPY *.py /x/\n", {"line 2", "wildcard"});
  refused(spec_format::toml, "from = \"base\"\n[[steps]]\ncopy = [\"..\"]\nto = \"/x\"\n",
          {"line 3", "leaves the build context"});
  auto whole = copy_source_parts(".");
  BOOST_TEST_REQUIRE(whole.ok());
  BOOST_TEST(whole->empty());
  auto inner = copy_source_parts("./a//b/./c/");
  BOOST_TEST_REQUIRE(inner.ok());
  BOOST_TEST(inner.value() == (std::vector<std::string>{"a", "b", "c"}));
}

BOOST_AUTO_TEST_CASE(variables_expand_as_documented) {
  const std::vector<std::pair<std::string, std::string>> env{{"A", "1"}, {"B", "two"}, {"A", "3"}};
  auto x = [&](const std::string& in) {
    auto r = expand_variables(in, env);
    BOOST_TEST_REQUIRE(r.ok(), (r.ok() ? "" : r.err().message));
    return r.value();
  };
  BOOST_TEST(x("$A-${B}-$C-\\$A-$") == "3-two--$A-$");
  BOOST_TEST(x("${B}x$Bx") == "twox");
  BOOST_TEST(!expand_variables("${A:-d}", env).ok());
  BOOST_TEST(!expand_variables("${A", env).ok());
  BOOST_TEST(resolve_directory("", "app") == "/app");
  BOOST_TEST(resolve_directory("/srv", "app/../lib/.") == "/srv/lib");
  BOOST_TEST(resolve_directory("/srv", "/opt//x/") == "/opt/x");
  BOOST_TEST(resolve_directory("/srv", "../../..") == "/");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(build_cache)

namespace {

sha256_digest d(std::uint8_t seed) {
  sha256_digest out{};
  out.fill(seed);
  return out;
}

step_inputs sample() {
  step_inputs in;
  in.layers = {d(1), d(2)};
  in.env = {{"PATH", "/bin"}, {"A", "b"}};
  in.working_directory = "/app";
  in.text = "RUN make";
  return in;
}

// A catalog with one spec build `name` of `tenant` in `scope` whose step 1 had `key` and made
// layer `layer`, then settled (`live`: ready, else deleted).
void add_build(catalog& c, const std::string& id, const std::string& tenant,
               ev::template_scope scope, const sha256_digest& key, const sha256_digest& layer,
               bool live) {
  template_state t;
  t.id = id;
  t.name = id;
  t.scope = scope;
  auto at = ev::time_point(ev::nanoseconds(1'000'000'000));
  auto emit = [&](ev::template_change ch) {
    apply(c, next_event(c, t, tenant, "p", at, std::move(ch)));
  };
  ev::template_created cr;
  cr.source = ev::template_source::spec;
  emit(cr);
  emit(ev::template_step_started{1, "RUN make", key});
  ev::template_step_finished f;
  f.index = 1;
  f.layer = layer;
  emit(f);
  ev::template_layer_added a;
  a.sha256 = layer;
  a.bytes = 100;
  emit(a);
  if (live) {
    ev::template_ready r;
    r.layers = {{layer, 100}};
    emit(r);
  } else {
    emit(ev::template_deleted{"user"});
  }
}

} // namespace

BOOST_AUTO_TEST_CASE(a_step_key_changes_with_each_of_its_inputs) {
  const auto base = step_cache_key(sample());
  BOOST_TEST(step_cache_key(sample()) == base);
  auto changed = [&](auto change) {
    auto in = sample();
    change(in);
    return step_cache_key(in) != base;
  };
  BOOST_TEST(changed([](step_inputs& in) { in.layers.back() = d(3); }));
  BOOST_TEST(changed([](step_inputs& in) { std::swap(in.layers[0], in.layers[1]); }));
  BOOST_TEST(changed([](step_inputs& in) { in.layers.pop_back(); }));
  BOOST_TEST(changed([](step_inputs& in) { in.env[1].second = "c"; }));
  BOOST_TEST(changed([](step_inputs& in) { std::swap(in.env[0], in.env[1]); }));
  BOOST_TEST(changed([](step_inputs& in) { in.working_directory = "/"; }));
  BOOST_TEST(changed([](step_inputs& in) { in.text = "RUN make "; }));
  BOOST_TEST(changed([](step_inputs& in) { in.files = d(9); }));
  // Fields cannot bleed into each other: "A=b" + "" is not "A=" + "b".
  auto x = sample(), y = sample();
  x.env = {{"A", "b=c"}};
  y.env = {{"A=b", "c"}};
  BOOST_TEST(step_cache_key(x) != step_cache_key(y));
}

BOOST_AUTO_TEST_CASE(a_cached_step_is_found_by_its_own_tenant_and_from_global_builds_only) {
  catalog c;
  const auto key = step_cache_key(sample());
  add_build(c, "tpl_a", "acme", ev::template_scope::tenant, key, d(7), true);
  const asker acme{"acme", "alice", false}, globex{"globex", "gus", false};
  auto hit = find_cached(c, acme, key);
  BOOST_TEST_REQUIRE(hit.has_value());
  BOOST_TEST(hit->template_id == "tpl_a");
  BOOST_TEST(hit->index == 1u);
  BOOST_TEST((hit->layer == d(7)));
  BOOST_TEST(!find_cached(c, globex, key).has_value()); // another tenant's build: no reuse
  BOOST_TEST(!find_cached(c, acme, d(0)).has_value());
  add_build(c, "tpl_g", "ops", ev::template_scope::global, key, d(8), true);
  auto from_global = find_cached(c, globex, key);
  BOOST_TEST_REQUIRE(from_global.has_value());
  BOOST_TEST(from_global->template_id == "tpl_g");
}

BOOST_AUTO_TEST_CASE(the_cache_keeps_the_latest_layers_of_builds_no_longer_live_within_its_bytes) {
  catalog c;
  add_build(c, "tpl_live", "acme", ev::template_scope::tenant, d(1), d(11), true);
  add_build(c, "tpl_old", "acme", ev::template_scope::tenant, d(2), d(12), false);
  add_build(c, "tpl_new", "acme", ev::template_scope::tenant, d(3), d(13), false);
  // Live templates hold their layers themselves: the cache keeps only the others'.
  BOOST_TEST(cache_kept_layers(c, 1000) == (std::set<std::string>{to_hex(d(12)), to_hex(d(13))}));
  BOOST_TEST(cache_kept_layers(c, 150) == (std::set<std::string>{to_hex(d(13))}));
  BOOST_TEST(cache_kept_layers(c, 0).empty());
  // A deleted build's step is still found (its layer is kept for exactly that).
  BOOST_TEST(find_cached(c, {"acme", "a", false}, d(2)).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
