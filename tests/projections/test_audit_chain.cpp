// The audit hash chain as pure functions: links, and a change to any field breaks them; the
// verifier, which names each kind of tampering as its own problem; the SHA-256 and
// array-literal helpers the chain and the writer rely on.
#define BOOST_TEST_MODULE audit_chain
#include <boost/test/unit_test.hpp>

#include "base/sha256.hpp"
#include "projections/audit_chain.hpp"
#include "projections/audit_log.hpp"
#include "projections/audit_verifier.hpp"
#include "projections/pg_array.hpp"
#include "tests/support/test_seed.hpp"

#include <algorithm>
#include <random>

using namespace sandboxd::projections;
using sandboxd::sha256_hex;

namespace {

audit_row sample(int64_t position) {
  audit_row r;
  r.tenant = "acme";
  r.partition = 3;
  r.position = position;
  r.event_id = "ev-" + std::to_string(position);
  r.occurred_at_ns = 1'700'000'000'000'000'000 + position;
  r.principal = "alice";
  r.action = "exec";
  r.sandbox_id = "sb_1";
  r.outcome = "accepted";
  r.detail = "echo hi";
  return r;
}

// A chain of `n` rows as the projection writes it, and its head.
struct chain {
  std::vector<audit_row> rows;
  std::optional<recorded_head> head;
};

chain written(int n) {
  chain c;
  std::string prev = audit_genesis_hash();
  for (int i = 1; i <= n; ++i) {
    auto r = sample(i);
    link(r, prev);
    prev = r.hash;
    c.rows.push_back(r);
  }
  c.head = recorded_head{n, prev};
  return c;
}

std::vector<audit_finding> verify(chain c) {
  std::sort(c.rows.begin(), c.rows.end(),
            [](const auto& a, const auto& b) { return a.position < b.position; });
  return verify_chain("acme", 3, c.rows, c.head);
}

// "problem@position" for each finding, in order.
std::vector<std::string> problems(const std::vector<audit_finding>& findings) {
  std::vector<std::string> out;
  for (const auto& f : findings)
    out.push_back(std::string(to_string(f.problem)) + "@" + std::to_string(f.position));
  return out;
}

using names = std::vector<std::string>;

} // namespace

BOOST_AUTO_TEST_CASE(first_row_links_to_the_genesis_hash) {
  auto r = sample(1);
  link(r, audit_genesis_hash());
  BOOST_TEST(r.prev_hash == std::string(64, '0'));
  BOOST_TEST(r.hash.size() == 64u);
  BOOST_TEST(r.hash == chain_hash(audit_genesis_hash(), r));
}

BOOST_AUTO_TEST_CASE(known_vector_pins_the_canonical_encoding) {
  audit_row r;
  r.tenant = "t";
  r.position = 1;
  // "sandboxd-audit-v2\n" then length:value\n for each field, in the documented order, the
  // detail as its SHA-256 (hex); version 1 (rows stored before) with the detail's text.
  BOOST_TEST(canonical_row(r) ==
             "sandboxd-audit-v2\n1:t\n1:0\n1:1\n0:\n1:0\n0:\n0:\n0:\n0:\n"
             "64:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n");
  r.hash_version = 1;
  BOOST_TEST(canonical_row(r) == "sandboxd-audit-v1\n1:t\n1:0\n1:1\n0:\n1:0\n0:\n0:\n0:\n0:\n0:\n");
}

BOOST_AUTO_TEST_CASE(a_redacted_row_hashes_as_it_did_with_its_detail) {
  auto r = sample(1);
  r.action = "exec_started";
  link(r, audit_genesis_hash());
  auto redacted = r;
  redacted.detail_sha256 = detail_digest(r);
  redacted.detail.clear();
  redacted.redacted = true;
  BOOST_TEST(chain_hash(r.prev_hash, redacted) == r.hash);
  BOOST_TEST(verify_chain(r.tenant, r.partition, {redacted}, recorded_head{1, r.hash}).size() ==
             1u); // no redaction of its sandbox follows: bad_redaction
  // A wrong digest is an edit.
  redacted.detail_sha256[0] = redacted.detail_sha256[0] == 'a' ? 'b' : 'a';
  BOOST_TEST(chain_hash(r.prev_hash, redacted) != r.hash);
}

BOOST_AUTO_TEST_CASE(redactions_need_a_redaction_of_their_sandbox_after_them) {
  auto row = [](std::int64_t pos, std::string action, std::string sandbox) {
    audit_row r;
    r.tenant = "acme";
    r.partition = 1;
    r.position = pos;
    r.event_id = sandbox + ":" + std::to_string(pos);
    r.action = std::move(action);
    r.sandbox_id = std::move(sandbox);
    r.outcome = "accepted";
    r.detail = "/workspace/secret-" + std::to_string(pos);
    return r;
  };
  std::vector<audit_row> rows{row(1, "exec_started", "sb-a"), row(2, "file_written", "sb-b"),
                              row(3, "created", "sb-a"), row(4, "redacted", "sb-a"),
                              row(5, "file_read", "sb-a")};
  auto redact = [](audit_row& r) {
    r.detail_sha256 = detail_digest(r);
    r.detail.clear();
    r.redacted = true;
  };
  auto chain_of = [](std::vector<audit_row> v) {
    std::string prev = audit_genesis_hash();
    for (auto& r : v) {
      link(r, prev);
      prev = r.hash;
    }
    return v;
  };
  auto findings = [&](std::vector<audit_row> v) {
    auto chained = chain_of(v);
    // Redact after chaining, as the projection does.
    for (std::size_t i = 0; i < v.size(); ++i)
      if (v[i].redacted) {
        chained[i].detail_sha256 = v[i].detail_sha256;
        chained[i].detail.clear();
        chained[i].redacted = true;
      }
    std::vector<std::string> out;
    for (const auto& f : verify_chain("acme", 1, chained,
                                      recorded_head{chained.back().position, chained.back().hash}))
      out.push_back(std::string(to_string(f.problem)) + "@" + std::to_string(f.position));
    return out;
  };
  auto honest = rows;
  redact(honest[0]); // sb-a's exec, before its redaction: explained
  BOOST_TEST(findings(honest).empty());
  auto hidden = honest;
  redact(hidden[1]); // sb-b was never redacted: a detail hidden
  BOOST_TEST(findings(hidden) == std::vector<std::string>{"bad_redaction@2"},
             boost::test_tools::per_element());
  auto later = honest;
  redact(later[4]); // sb-a's read after its redaction: not explained by it
  BOOST_TEST(findings(later) == std::vector<std::string>{"bad_redaction@5"},
             boost::test_tools::per_element());
  auto lifecycle = honest;
  redact(lifecycle[2]); // `created` holds no private detail
  BOOST_TEST(findings(lifecycle) == std::vector<std::string>{"bad_redaction@3"},
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(changing_any_field_changes_the_hash) {
  auto base = sample(2);
  std::string h = chain_hash(audit_genesis_hash(), base);
  std::vector<audit_row> variants(10, base);
  variants[0].tenant = "acme2";
  variants[1].partition = 4;
  variants[2].position = 3;
  variants[3].event_id = "ev-x";
  variants[4].occurred_at_ns += 1;
  variants[5].principal = "mallory";
  variants[6].action = "pause";
  variants[7].sandbox_id = "sb_2";
  variants[8].outcome = "conflict";
  variants[9].detail = "echo hj";
  for (const auto& v : variants)
    BOOST_TEST(chain_hash(audit_genesis_hash(), v) != h);
  BOOST_TEST(chain_hash(std::string(63, '0') + "1", base) != h);
}

BOOST_AUTO_TEST_CASE(field_boundaries_cannot_be_shifted) {
  auto a = sample(1);
  auto b = sample(1);
  a.principal = "ab";
  a.action = "c";
  b.principal = "a";
  b.action = "bc";
  BOOST_TEST(canonical_row(a) != canonical_row(b));
}

BOOST_AUTO_TEST_CASE(sha256_matches_the_published_vectors_in_one_part_or_two) {
  // FIPS 180-2, appendix B.1 and B.2.
  BOOST_TEST(sha256_hex("abc") ==
             "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  const std::string expected = "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";
  BOOST_TEST(sha256_hex(two_blocks) == expected);
  BOOST_TEST(sha256_hex(two_blocks.substr(0, 7), two_blocks.substr(7)) == expected);
  BOOST_TEST(sha256_hex("", "abc") == sha256_hex("abc"));
  BOOST_TEST(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

BOOST_AUTO_TEST_CASE(pg_array_escapes_quotes_and_backslashes_anywhere_in_an_element) {
  pg_array a;
  a.add("plain").add("a\"b").add("\\").add("x\\y\"").add("");
  BOOST_TEST(a.str() == R"({"plain","a\"b","\\","x\\y\"",""})");
}

BOOST_AUTO_TEST_CASE(an_intact_chain_has_no_finding) {
  BOOST_TEST(verify(written(8)).empty());
  BOOST_TEST(verify(written(1)).empty());
  BOOST_TEST(verify(chain{}).empty());
}

BOOST_AUTO_TEST_CASE(a_row_edited_in_place_is_a_hash_mismatch) {
  auto c = written(8);
  c.rows[2].detail = "nothing to see";
  auto f = verify(c);
  BOOST_TEST_REQUIRE(problems(f) == names{"hash_mismatch@3"});
  BOOST_TEST(f[0].event_id == "ev-3");
  BOOST_TEST(f[0].message.find("audit row 3 of tenant acme partition 3 (event ev-3)") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_row_replaced_with_its_hash_recomputed_is_a_broken_link) {
  auto c = written(8);
  c.rows[2].outcome = "accepted";
  c.rows[2].detail = "rm -rf / (never happened)";
  link(c.rows[2], c.rows[1].hash); // the row verifies on its own
  BOOST_REQUIRE(chain_hash(c.rows[2].prev_hash, c.rows[2]) == c.rows[2].hash);
  auto f = verify(c);
  BOOST_TEST_REQUIRE(problems(f) == names{"broken_link@3"});
  BOOST_TEST(f[0].event_id == "ev-3");

  // The last row: the head is what it no longer links to.
  auto d = written(8);
  d.rows[7].principal = "mallory";
  link(d.rows[7], d.rows[6].hash);
  BOOST_TEST(problems(verify(d)) == names{"broken_link@8"});
}

BOOST_AUTO_TEST_CASE(a_swapped_pair_is_out_of_order_at_both_places) {
  auto c = written(8);
  std::swap(c.rows[1].position, c.rows[2].position); // rows 2 and 3 trade places
  auto f = verify(c);
  BOOST_TEST_REQUIRE(problems(f) == names({"out_of_order@2", "out_of_order@3"}));
  BOOST_TEST(f[0].event_id == "ev-3"); // the row now at 2 belongs at 3
  BOOST_TEST(f[0].message.find("belongs at row 3") != std::string::npos, f[0].message);
  BOOST_TEST(f[1].event_id == "ev-2");

  // Not neighbours, and the first row.
  auto d = written(8);
  std::swap(d.rows[0].position, d.rows[5].position);
  BOOST_TEST(problems(verify(d)) == names({"out_of_order@1", "out_of_order@6"}));
}

BOOST_AUTO_TEST_CASE(a_deleted_row_is_a_missing_row) {
  auto c = written(8);
  c.rows.erase(c.rows.begin() + 3);
  auto f = verify(c);
  BOOST_TEST_REQUIRE(problems(f) == names{"missing_row@4"});
  BOOST_TEST(f[0].event_id == "");

  auto first = written(8);
  first.rows.erase(first.rows.begin(), first.rows.begin() + 2);
  auto g = verify(first);
  BOOST_TEST_REQUIRE(problems(g) == names{"missing_row@1"});
  BOOST_TEST(g[0].message.find("lacks rows 1 to 2") != std::string::npos, g[0].message);
}

BOOST_AUTO_TEST_CASE(a_truncated_tail_is_seen_against_the_head) {
  auto c = written(8);
  c.rows.resize(6);
  auto f = verify(c);
  BOOST_TEST_REQUIRE(problems(f) == names{"truncated_tail@7"});
  BOOST_TEST(f[0].message.find("rows 7 to 8 were deleted from its end") != std::string::npos,
             f[0].message);

  auto all = written(8);
  all.rows.clear();
  BOOST_TEST(problems(verify(all)) == names{"truncated_tail@1"});
}

BOOST_AUTO_TEST_CASE(rows_past_the_head_or_without_one_are_beyond_the_head) {
  auto c = written(8);
  c.head = recorded_head{6, c.rows[5].hash}; // rows 7 and 8 appended by someone else
  BOOST_TEST(problems(verify(c)) == names{"beyond_head@7"});

  auto d = written(8);
  d.head.reset();
  BOOST_TEST(problems(verify(d)) == names{"beyond_head@1"});
}

BOOST_AUTO_TEST_CASE(the_problem_types_have_distinct_names) {
  std::vector<std::string> all;
  for (auto p :
       {audit_problem::hash_mismatch, audit_problem::broken_link, audit_problem::out_of_order,
        audit_problem::missing_row, audit_problem::truncated_tail, audit_problem::beyond_head})
    all.emplace_back(to_string(p));
  BOOST_TEST(all == names({"hash_mismatch", "broken_link", "out_of_order", "missing_row",
                           "truncated_tail", "beyond_head"}));
}

// Whatever is done to the rows or the head, something is reported: random edits, swaps,
// deletions, rehashed replacements, renumberings and head changes, one to three at a time
// (except a chain deleted whole with its head, which leaves nothing to verify).
BOOST_AUTO_TEST_CASE(every_tampering_is_reported) {
  std::mt19937_64 rng(sandboxd::test::test_seed("audit every_tampering_is_reported"));
  auto pick = [&](std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
  };
  for (int round = 0; round < 2000; ++round) {
    auto c = written(static_cast<int>(2 + pick(10)));
    const auto original = c;
    for (std::size_t t = 0, changes = 1 + pick(3); t < changes && !c.rows.empty(); ++t) {
      auto& r = c.rows[pick(c.rows.size())];
      switch (pick(7)) {
      case 0:
        r.detail += "!";
        break;
      case 1:
        std::swap(r.position, c.rows[pick(c.rows.size())].position);
        break;
      case 2:
        c.rows.erase(c.rows.begin() + static_cast<std::ptrdiff_t>(pick(c.rows.size())));
        break;
      case 3:
        r.action = "pause";
        link(r, r.prev_hash);
        break;
      case 4:
        for (auto& later : c.rows)
          if (later.position > r.position)
            --later.position; // a deletion hidden by renumbering
        break;
      case 5:
        c.head->position += static_cast<std::int64_t>(pick(3)) - 1;
        break;
      case 6:
        c.head.reset();
        break;
      }
    }
    std::sort(c.rows.begin(), c.rows.end(),
              [](const auto& a, const auto& b) { return a.position < b.position; });
    // Positions stay unique (the primary key): a renumbering that collides is not a state the
    // table can hold.
    bool unique =
      std::adjacent_find(c.rows.begin(), c.rows.end(), [](const auto& a, const auto& b) {
        return a.position == b.position;
      }) == c.rows.end();
    if (!unique)
      continue;
    if (c.rows.empty() && !c.head)
      continue; // the whole chain gone, head too: only the log knows it was there (rebuild)
    bool changed = c.rows != original.rows || c.head.has_value() != original.head.has_value() ||
                   (c.head && (c.head->position != original.head->position ||
                               c.head->hash != original.head->hash));
    auto f = verify(c);
    BOOST_TEST(f.empty() == !changed, "round " << round << ": " << f.size() << " findings");
  }
}

// An operation's outcome event carries its own outcome into the audit row: the error code
// when the runtime refused it, `interrupted` when a restart cut it off, `accepted` when it
// completed; its intent is a row of its own.
BOOST_AUTO_TEST_CASE(an_operations_outcome_is_its_audit_rows_outcome) {
  using namespace sandboxd::events;
  auto row = [](payload body) {
    event e;
    e.event_id = "sb_1:9";
    e.sandbox_id = "sb_1";
    e.sequence = 9;
    e.tenant = "acme";
    e.principal = "system";
    e.body = std::move(body);
    return audit_row_of(e, 0);
  };
  file_op_finished refused;
  refused.op_id = "op-1";
  refused.outcome = op_outcome::failed;
  refused.failure = error{sandboxd::errc::resource_exhausted, "disk limit of 512 MiB reached"};
  auto r = row(refused);
  BOOST_TEST(r.action == "file_op_finished");
  BOOST_TEST(r.outcome == "resource_exhausted");
  BOOST_TEST(r.detail.find("disk limit of 512 MiB reached") != std::string::npos);

  exec_finished cut;
  cut.exec_id = "x1";
  cut.outcome = op_outcome::interrupted;
  BOOST_TEST(row(cut).outcome == "interrupted");

  exec_finished done;
  done.exec_id = "x1";
  done.exit_code = 42;
  BOOST_TEST(row(done).outcome == "accepted"); // it ran; its exit code is its own business
  BOOST_TEST(row(done).detail == "x1: exit 42");

  file_read missing;
  missing.path = "/nope";
  missing.failure = error{sandboxd::errc::not_found, "/nope does not exist"};
  BOOST_TEST(row(missing).outcome == "not_found");

  file_op_requested intent;
  intent.op_id = "op-2";
  intent.kind = file_op_kind::rename;
  intent.path = "/a";
  intent.to_path = "/b";
  BOOST_TEST(row(intent).outcome == "accepted");
  BOOST_TEST(row(intent).detail == "op-2: rename /a -> /b");
}
