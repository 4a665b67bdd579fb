// test_event_fuzz.cpp — hostile bytes against the decoder: 100,000 random and mutated
// records must decode or be rejected, never crash, and never make the decoder allocate more
// than a small multiple of their size. scripts/test runs it again under ASan and UBSan.
#define BOOST_TEST_MODULE event_fuzz
#include <boost/test/unit_test.hpp>

#include "events/event.hpp"
#include "schemas/events.capnp.h"
#include "tests/events/sample_events.hpp"
#include "tests/support/test_seed.hpp"

#include <capnp/any.h>
#include <capnp/message.h>
#include <capnp/serialize.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>

// Allocation accounting for the decoder: every operator new in this binary adds its size.
// (g++ cannot see that the replaced new and delete pair malloc with free.)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
namespace {
std::atomic<std::size_t> g_allocated{0};
}

void* operator new(std::size_t n) {
  g_allocated.fetch_add(n, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1))
    return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

using namespace sandboxd::events;
using sandboxd::events::testing::samples;

namespace {

// The most the decoder may allocate for `size` input bytes: strings and lists are copies
// of what is in the record (a list element costs a few words), plus fixed overhead.
std::size_t allocation_bound(std::size_t size) {
  return 64 * size + 64 * 1024;
}

struct decode_probe {
  std::size_t worst_ratio_inputs = 0;
  std::size_t accepted = 0;
  std::size_t rejected = 0;

  void run(const std::string& bytes) {
    std::size_t before = g_allocated.load();
    auto d = decode(bytes);
    std::size_t used = g_allocated.load() - before;
    BOOST_REQUIRE_MESSAGE(used <= allocation_bound(bytes.size()),
                          "decoding " << bytes.size() << " bytes allocated " << used);
    if (!d.ok()) {
      ++rejected;
      BOOST_REQUIRE(d.failure().code == errc::invalid_argument);
      return;
    }
    ++accepted;
    // Whatever decodes is an event the encoder can write again, unless its payload is from
    // a newer version (a payload, or a template event's change); the second decode gives the same
    // event.
    if (std::holds_alternative<unknown>(d.get().body))
      return;
    if (auto* t = std::get_if<template_event>(&d.get().body);
        t && std::holds_alternative<template_unknown>(t->change))
      return;
    auto again = decode(encode(d.get()));
    BOOST_REQUIRE(again.ok());
    BOOST_REQUIRE(again.get() == d.get());
  }
};

class mutator {
public:
  explicit mutator(std::uint64_t seed) : rng_(seed) {}

  std::uint64_t pick(std::uint64_t n) {
    return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng_);
  }

  std::string random_bytes(std::size_t n) {
    std::string s(n, '\0');
    for (auto& c : s)
      c = static_cast<char>(pick(256));
    return s;
  }

  // A few edits of a valid record: bit flips, byte and word overwrites (with values that
  // matter to Cap'n Proto pointers: 0, ~0, small and huge counts), truncation, extension
  // and splices from another record.
  std::string mutate(std::string s, const std::string& other) {
    int edits = 1 + static_cast<int>(pick(4));
    for (int i = 0; i < edits && !s.empty(); ++i) {
      // Word edits (2 and 6) need a whole word.
      switch (s.size() < 8 ? pick(2) : pick(7)) {
      case 0:
        s[pick(s.size())] ^= static_cast<char>(1u << pick(8));
        break;
      case 1:
        s[pick(s.size())] = static_cast<char>(pick(256));
        break;
      case 2: {
        static constexpr std::uint64_t interesting[] = {0,
                                                        ~0ULL,
                                                        1,
                                                        0xfffffffcULL,
                                                        0x7fffffffULL << 35,
                                                        0xffffffff00000001ULL,
                                                        (0x1fffffffULL << 35) | (7ULL << 32) | 1,
                                                        (0x1fffffffULL << 35) | 1};
        auto at = pick(s.size() / 8) * 8;
        std::memcpy(s.data() + at, &interesting[pick(std::size(interesting))], 8);
        break;
      }
      case 3:
        s.resize(pick(s.size() + 1));
        break;
      case 4:
        s += random_bytes(8 * (1 + pick(4)));
        break;
      case 5: {
        auto at = pick(s.size());
        auto from = pick(other.size());
        auto n = std::min<std::size_t>(pick(64), std::min(s.size() - at, other.size() - from));
        s.replace(at, n, other, from, n);
        break;
      }
      default: {
        auto at = pick(s.size() / 8) * 8;
        std::uint64_t w;
        std::memcpy(&w, s.data() + at, 8);
        w += pick(2) ? 1 : -1;
        std::memcpy(s.data() + at, &w, 8);
        break;
      }
      }
    }
    return s;
  }

private:
  std::mt19937_64 rng_;
};

} // namespace

BOOST_AUTO_TEST_SUITE(event_fuzz)

BOOST_AUTO_TEST_CASE(random_and_mutated_records_never_crash_or_allocate_without_bound) {
  std::vector<std::string> seeds;
  for (const auto& e : samples())
    seeds.push_back(encode(e));
  mutator m(sandboxd::test::test_seed("event fuzz"));
  decode_probe probe;
  constexpr int k_inputs = 100'000;
  for (int i = 0; i < k_inputs; ++i) {
    if (i % 10 == 0) {
      // Pure noise, with a plausible segment table half the time.
      auto s = m.random_bytes(8 * m.pick(64));
      if (s.size() >= 8 && m.pick(2)) {
        std::uint32_t table[2] = {0, static_cast<std::uint32_t>(s.size() / 8 - 1)};
        std::memcpy(s.data(), table, 8);
      }
      probe.run(s);
    } else {
      const auto& base = seeds[m.pick(seeds.size())];
      probe.run(m.mutate(base, seeds[m.pick(seeds.size())]));
    }
  }
  BOOST_TEST_MESSAGE(probe.accepted << " decoded, " << probe.rejected << " rejected");
  // Both outcomes must occur, or the mutations are too weak (or too strong) to test much.
  BOOST_TEST(probe.accepted > 1000u);
  BOOST_TEST(probe.rejected > 1000u);
}

// A list of zero-sized elements can claim 2^29 elements in one pointer word; Cap'n Proto
// charges each as a word of traversal, so the decoder's limit rejects it before it builds
// half a billion labels.
BOOST_AUTO_TEST_CASE(an_amplified_list_is_rejected_without_allocating_it) {
  capnp::MallocMessageBuilder mb;
  auto root = mb.initRoot<sandboxd::schema::Event>();
  root.setSandboxId("sb_1");
  root.setSequence(1);
  auto created = root.getPayload().initCreated();
  created.setTemplate("t");
  constexpr unsigned k_labels_pointer = 4; // template, limits, timeouts, network, labels
  capnp::AnyStruct::Builder any(kj::mv(created));
  any.getPointerSection()[k_labels_pointer].initAsAnyList(capnp::ElementSize::VOID, (1u << 29) - 1);
  BOOST_TEST_REQUIRE(root.asReader().getPayload().getCreated().getLabels().size() ==
                     (1u << 29) - 1);
  auto words = capnp::messageToFlatArray(mb);
  auto bytes = words.asBytes();
  std::size_t before = g_allocated.load();
  auto d = decode(bytes.begin(), bytes.size());
  BOOST_TEST(g_allocated.load() - before <= allocation_bound(bytes.size()));
  BOOST_TEST_REQUIRE(!d.ok());
  BOOST_TEST_MESSAGE(d.failure().message);
  BOOST_TEST(d.failure().message.find("not a sandboxd Event") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(deeply_nested_or_cyclic_pointers_are_rejected) {
  // A root pointer that points at itself: a struct whose pointer section is its own
  // pointer, followed forever by a naive reader.
  std::string s(16, '\0');
  std::uint32_t table[2] = {0, 1};
  std::memcpy(s.data(), table, 8);
  // Struct pointer, offset -1 (to itself), data 0 words, 1 pointer.
  std::uint64_t self =
    (std::uint64_t{1} << 48) | ((static_cast<std::uint64_t>(-1) << 2) & 0xffffffffULL);
  std::memcpy(s.data() + 8, &self, 8);
  auto d = decode(s);
  BOOST_TEST(!d.ok());
}

BOOST_AUTO_TEST_SUITE_END()
