// test_first_bytes — the wire formats the egress proxy and resolver read before anything is
// dialled: the server name of a TLS ClientHello, the host of an HTTP/1 request head, and DNS
// questions and answers (network/tls_hello.hpp, http_head.hpp, dns_message.hpp). Each
// refusal is a way to name one host to the proxy and reach another.
#define BOOST_TEST_MODULE first_bytes
#include <boost/test/unit_test.hpp>

#include "network/dns_message.hpp"
#include "network/http_head.hpp"
#include "network/tls_hello.hpp"
#include "tests/network/client_hello.hpp"

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

using namespace sandboxd;
using namespace sandboxd::network;

namespace sandboxd::network {
std::ostream& operator<<(std::ostream& out, first_bytes_status s) {
  return out << to_string(s);
}
} // namespace sandboxd::network

namespace {

using namespace sandboxd::test::tls;

bytes hex(std::string_view h) {
  bytes out;
  for (std::size_t i = 0; i + 1 < h.size(); i += 2)
    out.push_back(std::uint8_t(std::stoul(std::string(h.substr(i, 2)), nullptr, 16)));
  return out;
}

bytes text(std::string_view s) {
  return bytes(s.begin(), s.end());
}

// The ClientHello Python's ssl module (OpenSSL 3.0) sent for server_hostname
// "Api.Example.TEST", as captured on a socket: one record of 512 bytes, TLS 1.3 and 1.2
// offered, padding extension included.
const char* k_captured_hello =
  "1603010200010001fc03037916c4701a16d9791ff641a9d632b3d8515c7634aa3adb6d4ee34541c017800f20f1"
  "033de43fcba2684242ce068b64fa115421de6fc9237b2a97741caadecf64960024130213031301c02cc030c02b"
  "c02fcca9cca8c024c028c023c027009f009e006b006700ff0100018f0000001500130000104170692e4578616d"
  "706c652e54455354000b000403000102000a00160014001d0017001e0019001801000101010201030104002300"
  "000016000000170000000d002a0028040305030603080708080809080a080b0804080508060401050106010303"
  "03010302040205020602002b00050403040303002d00020101003300260024001d00209e65feb0742c822c55a6"
  "d0df50082e2e11ce01382d1862a545ab211fdfb10e36001500dd00000000000000000000000000000000000000"
  "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
  "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
  "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
  "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
  "00000000000000000000000000000000000000000000";

tls_hello hello(const bytes& b) {
  return read_tls_hello(b);
}

http_head head(std::string_view s) {
  auto b = text(s);
  return read_http_head(b);
}

} // namespace

BOOST_AUTO_TEST_SUITE(tls)

BOOST_AUTO_TEST_CASE(captured_client_hello_names_its_server_in_normal_form) {
  auto h = hello(hex(k_captured_hello));
  BOOST_TEST(h.status == first_bytes_status::complete);
  BOOST_TEST(h.server_name == "api.example.test");
}

BOOST_AUTO_TEST_CASE(every_prefix_of_a_hello_is_incomplete) {
  auto full = hex(k_captured_hello);
  for (std::size_t n = 0; n < full.size(); ++n) {
    auto h = read_tls_hello(std::span(full).first(n));
    BOOST_TEST_REQUIRE(h.status == first_bytes_status::incomplete, "prefix of " << n);
  }
}

BOOST_AUTO_TEST_CASE(a_hello_split_over_records_is_joined) {
  auto m = hello_message({sni_extension({"pypi.org"})});
  auto h = hello(records(m, 7));
  BOOST_TEST(h.status == first_bytes_status::complete);
  BOOST_TEST(h.server_name == "pypi.org");
  // Bytes after the hello (a client that sends early data) do not matter.
  auto more = records(m);
  more.insert(more.end(), {23, 3, 3, 0, 1, 0});
  BOOST_TEST(hello(more).server_name == "pypi.org");
}

BOOST_AUTO_TEST_CASE(a_hello_without_a_name_is_complete_and_names_none) {
  for (const auto& m : {hello_message({}), hello_message({}, false)}) {
    auto h = hello(records(m));
    BOOST_TEST(h.status == first_bytes_status::complete);
    BOOST_TEST(h.server_name.empty());
  }
}

BOOST_AUTO_TEST_CASE(bytes_that_are_not_tls_are_other) {
  BOOST_TEST(hello(text("GET / HTTP/1.1\r\n")).status == first_bytes_status::other);
  BOOST_TEST(hello({0x16, 0x02}).status == first_bytes_status::other);       // not version 3
  BOOST_TEST(hello({0x80, 0x2e, 0x01}).status == first_bytes_status::other); // SSL 2
}

BOOST_AUTO_TEST_CASE(hellos_that_could_name_two_hosts_are_malformed) {
  auto two_entries = hello(records(hello_message({sni_extension({"a.test", "b.test"})})));
  BOOST_TEST(two_entries.status == first_bytes_status::malformed);
  auto two_extensions =
    hello(records(hello_message({sni_extension({"a.test"}), sni_extension({"b.test"})})));
  BOOST_TEST(two_extensions.status == first_bytes_status::malformed);
  BOOST_TEST(two_extensions.problem.find("more than one") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_server_name_that_is_not_a_host_name_is_malformed) {
  for (const std::string& bad :
       std::vector<std::string>{"192.0.2.1", "a_b.test", std::string("a.test\0b.test", 13), "",
                                "a..test", std::string(300, 'a')}) {
    auto h = hello(records(hello_message({sni_extension({bad})})));
    BOOST_TEST(h.status == first_bytes_status::malformed, "name of " << bad.size() << " bytes");
  }
}

BOOST_AUTO_TEST_CASE(lengths_that_disagree_are_malformed) {
  // The extension block claims one byte more than there is.
  auto m = hello_message({sni_extension({"a.test"})});
  auto cut = m;
  cut[3] = std::uint8_t(cut[3] - 1); // handshake length one short of the body
  BOOST_TEST(hello(records(cut)).status == first_bytes_status::malformed);
  auto server_name = sni_extension({"a.test"});
  server_name[3] += 1; // extension length one past its list
  auto odd = hello_message({server_name});
  BOOST_TEST(hello(records(odd)).status == first_bytes_status::malformed);
}

BOOST_AUTO_TEST_CASE(a_record_other_than_handshake_inside_the_hello_is_malformed) {
  auto m = hello_message({sni_extension({"a.test"})});
  auto first = records(bytes(m.begin(), m.begin() + 10));
  auto rest = records(bytes(m.begin() + 10, m.end()), 16384, 23); // application data
  first.insert(first.end(), rest.begin(), rest.end());
  BOOST_TEST(hello(first).status == first_bytes_status::malformed);
}

BOOST_AUTO_TEST_CASE(a_handshake_that_is_not_a_client_hello_is_malformed) {
  auto m = hello_message({sni_extension({"a.test"})});
  m[0] = 2; // ServerHello
  BOOST_TEST(hello(records(m)).status == first_bytes_status::malformed);
}

BOOST_AUTO_TEST_CASE(a_hello_longer_than_the_limit_is_malformed_before_it_arrives) {
  bytes big(20000, 0);
  bytes padding;
  put16(padding, 21);
  put16(padding, big.size());
  padding.insert(padding.end(), big.begin(), big.end());
  auto m = hello_message({sni_extension({"a.test"}), padding});
  auto all = records(m);
  auto h = hello(bytes(all.begin(), all.begin() + 100));
  BOOST_TEST(h.status == first_bytes_status::malformed);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(http)

BOOST_AUTO_TEST_CASE(an_origin_form_request_names_its_host_header) {
  auto h = head("GET /simple/ HTTP/1.1\r\nUser-Agent: pip\r\nhost:  PyPI.org:8080 \r\n\r\nbody");
  BOOST_TEST(h.status == first_bytes_status::complete);
  BOOST_TEST(h.method == "GET");
  BOOST_TEST(!h.connect);
  BOOST_TEST(h.host == "pypi.org");
  BOOST_TEST(h.port.value_or(0) == 8080);
  BOOST_TEST(h.head_length == std::string("GET /simple/ HTTP/1.1\r\nUser-Agent: pip\r\nhost:  "
                                          "PyPI.org:8080 \r\n\r\n")
                                .size());
}

BOOST_AUTO_TEST_CASE(a_head_is_incomplete_until_its_blank_line) {
  std::string full = "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n";
  for (std::size_t n = 0; n < full.size(); ++n)
    BOOST_TEST_REQUIRE(head(full.substr(0, n)).status == first_bytes_status::incomplete,
                       "prefix of " << n);
  BOOST_TEST(head(full).status == first_bytes_status::complete);
}

BOOST_AUTO_TEST_CASE(bytes_that_are_not_a_request_are_other) {
  BOOST_TEST(head(std::string("\x16\x03\x01\x02\x00", 5)).status == first_bytes_status::other);
  BOOST_TEST(head("SSH-2.0-OpenSSH_9.2\r\n").status == first_bytes_status::other);
  BOOST_TEST(head(" GET / HTTP/1.1\r\n").status == first_bytes_status::other);
}

BOOST_AUTO_TEST_CASE(addresses_are_read_as_addresses) {
  auto v4 = head("GET / HTTP/1.1\r\nHost: 198.51.100.7\r\n\r\n");
  BOOST_TEST(v4.status == first_bytes_status::complete);
  BOOST_TEST(v4.host.empty());
  BOOST_TEST(to_string(*v4.address) == "198.51.100.7");
  auto v6 = head("GET / HTTP/1.1\r\nHost: [2001:db8::1]:80\r\n\r\n");
  BOOST_TEST(v6.status == first_bytes_status::complete);
  BOOST_TEST(to_string(*v6.address) == "2001:db8::1");
  BOOST_TEST(v6.port.value_or(0) == 80);
}

BOOST_AUTO_TEST_CASE(connect_names_its_target) {
  auto h = head("CONNECT api.github.com:443 HTTP/1.1\r\nHost: api.github.com:443\r\n\r\n");
  BOOST_TEST(h.status == first_bytes_status::complete);
  BOOST_TEST(h.connect);
  BOOST_TEST(h.host == "api.github.com");
  BOOST_TEST(h.port.value_or(0) == 443);
  BOOST_TEST(head("CONNECT api.github.com:443 HTTP/1.1\r\n\r\n").status ==
             first_bytes_status::complete);
  BOOST_TEST(head("CONNECT api.github.com HTTP/1.1\r\n\r\n").status ==
             first_bytes_status::malformed);
}

BOOST_AUTO_TEST_CASE(an_absolute_target_must_agree_with_host) {
  auto agree = head("GET http://a.test:81/x HTTP/1.1\r\nHost: a.test:81\r\n\r\n");
  BOOST_TEST(agree.status == first_bytes_status::complete);
  BOOST_TEST(agree.host == "a.test");
  for (const char* r : {"GET http://a.test/x HTTP/1.1\r\nHost: b.test\r\n\r\n",
                        "GET http://a.test:81/ HTTP/1.1\r\nHost: a.test:82\r\n\r\n",
                        "CONNECT a.test:443 HTTP/1.1\r\nHost: b.test:443\r\n\r\n",
                        "GET https://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n"}) {
    auto h = head(r);
    BOOST_TEST(h.status == first_bytes_status::malformed, r);
  }
}

BOOST_AUTO_TEST_CASE(heads_that_could_name_two_hosts_are_malformed) {
  for (const char* r : {
         "GET / HTTP/1.1\r\nHost: a.test\r\nhost: b.test\r\n\r\n", // two Hosts
         "GET / HTTP/1.1\r\nX: 1\r\n\r\n",                         // none
         "GET / HTTP/1.1\r\nHost: a.test\r\n b.test\r\n\r\n",      // folded
         "GET / HTTP/1.1\r\nHost: a.test\nHost: b.test\r\n\r\n",   // bare LF
         "GET / HTTP/1.1\r\nHost: a.test\rHost: b.test\r\n\r\n",   // bare CR
         "GET / HTTP/1.1\r\nHost : b.test\r\n\r\n",                // space before colon
         "GET / HTTP/1.1\r\nHost: user@b.test\r\n\r\n",            // userinfo
         "GET / HTTP/1.1\r\nHost: b.test/x\r\n\r\n",               // a path
         "GET / HTTP/1.1\r\nHost: :80\r\n\r\n",                    // no host
         "GET / HTTP/1.1\r\nHost: a.test:0\r\n\r\n",               // port 0
         "GET / HTTP/1.1\r\nHost: a.test:99999\r\n\r\n",           // no such port
         "GET / HTTP/1.1\r\nHost: 2001:db8::1\r\n\r\n",            // unbracketed IPv6
         "GET / HTTP/2.0\r\nHost: a.test\r\n\r\n",                 // another version
         "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",                       // h2 prior knowledge
         "GET  / HTTP/1.1\r\nHost: a.test\r\n\r\n",                // two spaces
         "GET a.test HTTP/1.1\r\nHost: a.test\r\n\r\n",            // no such target form
       }) {
    auto h = head(r);
    BOOST_TEST(h.status == first_bytes_status::malformed, r);
    BOOST_TEST(!h.problem.empty());
  }
  const char with_nul[] = "GET / HTTP/1.1\r\nHost: a.test\0.b.test\r\n\r\n";
  auto nul = head(std::string(with_nul, sizeof with_nul - 1));
  BOOST_TEST(nul.status == first_bytes_status::malformed);
}

BOOST_AUTO_TEST_CASE(a_head_longer_than_the_limit_is_malformed) {
  std::string r = "GET / HTTP/1.1\r\nHost: a.test\r\nX: " + std::string(k_first_bytes_limit, 'x');
  BOOST_TEST(head(r).status == first_bytes_status::malformed);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(dns)

// What `dig example.com` sends: id 0x1234, RD and AD, one question, an EDNS OPT record.
const char* k_dig_query = "123401200001000000000001076578616d706c6503636f6d00000100010000291000"
                          "000000000000";

BOOST_AUTO_TEST_CASE(a_query_names_its_question) {
  auto q = parse_query(hex(k_dig_query));
  BOOST_TEST_REQUIRE(q.ok());
  BOOST_TEST(q->id == 0x1234);
  BOOST_TEST(q->recursion_desired);
  BOOST_TEST(q->name == "example.com");
  BOOST_TEST(q->name_text == "example.com.");
  BOOST_TEST(q->type == dns_type::a);
  BOOST_TEST(q->klass == 1);
  BOOST_TEST(q->question_end == 29u);
}

BOOST_AUTO_TEST_CASE(a_label_that_is_not_a_host_label_names_no_host) {
  // Labels as a tunnel writes them: a dot inside a label, binary bytes, an underscore.
  for (const char* h : {"00010000000100000000000003612e62047465737400000100"
                        "01", // "a.b" as one label
                        "000100000001000000000000"
                        "04ff00fe0104746573740000010001",
                        "000100000001000000000000"
                        "035f61610474657374000010"
                        "0001"}) {
    auto q = parse_query(hex(h));
    BOOST_TEST_REQUIRE(q.ok(), h);
    BOOST_TEST(q->name.empty(), q->name_text);
    BOOST_TEST(!q->name_text.empty());
  }
  auto q = parse_query(hex("00010000000100000000000004ff00fe0104746573740000010001"));
  BOOST_TEST(q->name_text == "\\255\\000\\254\\001.test.");
}

BOOST_AUTO_TEST_CASE(queries_other_than_one_standard_question_are_invalid) {
  for (const char* h : {
         "1234812000010000000000000161000001 0001",              // a response (QR)
         "123428000001000000000000016100000100 01",              // opcode UPDATE
         "1234010000020000000000000161000001000101620000010001", // two questions
         "123401000001000000000000c00c00010001",                 // a pointer in the question
         "12340100000100000000000001610000",                     // the question cut short
         "1234010000010000000000000561",                         // a label past the end
         "123401",                                               // shorter than a header
       }) {
    std::string compact;
    for (const char* c = h; *c; ++c)
      if (*c != ' ')
        compact += *c;
    BOOST_TEST(!parse_query(hex(compact)).ok(), h);
  }
}

BOOST_AUTO_TEST_CASE(an_answer_carries_the_addresses_of_the_question_type) {
  auto query = hex(k_dig_query);
  auto q = *parse_query(query);
  auto response = make_response(
    query, q, dns_rcode::no_error,
    {*parse_address("192.0.2.1"), *parse_address("2001:db8::1"), *parse_address("192.0.2.2")}, 60);
  // Header, question echoed, two A records by a pointer to the question's name.
  BOOST_TEST(response == hex("12348180000100020000000007"
                             "6578616d706c6503636f6d0000010001"
                             "c00c000100010000003c0004c0000201"
                             "c00c000100010000003c0004c0000202"));
  auto back = parse_response(response, 0x1234, "example.com", dns_type::a);
  BOOST_TEST_REQUIRE(back.ok());
  BOOST_TEST(back->addresses.size() == 2u);
  BOOST_TEST(back->ttl == 60u);
}

BOOST_AUTO_TEST_CASE(a_refusal_has_no_answers) {
  auto query = hex(k_dig_query);
  auto q = *parse_query(query);
  auto r = make_response(query, q, dns_rcode::refused, {*parse_address("192.0.2.1")});
  BOOST_TEST((r[3] & 0xf) == dns_rcode::refused);
  auto back = parse_response(r, 0x1234, "example.com", dns_type::a);
  BOOST_TEST_REQUIRE(back.ok());
  BOOST_TEST(back->rcode == dns_rcode::refused);
  BOOST_TEST(back->addresses.empty());
}

BOOST_AUTO_TEST_CASE(a_query_is_the_one_dig_would_send_without_edns) {
  BOOST_TEST(make_query(0x1234, "example.com", dns_type::aaaa) ==
             hex("123401000001000000000000076578616d706c6503636f6d00001c0001"));
}

// An upstream answer for www.example.com: a CNAME to cdn.example.net (compressed against
// the question), its A record, and an A record for another name that must not be taken.
const char* k_cname_answer = "beef8180000100030000000003777777076578616d706c6503636f6d0000010001"
                             "c00c000500010000012c00110363646e076578616d706c65036e657400"
                             "c02d000100010000001e0004c6336407"
                             "03657669c0100001000100000e1000040a000001";

BOOST_AUTO_TEST_CASE(an_upstream_answer_follows_its_cname_chain_and_nothing_else) {
  auto a = parse_response(hex(k_cname_answer), 0xbeef, "www.example.com", dns_type::a);
  BOOST_TEST_REQUIRE(a.ok(), (a.ok() ? "" : a.err().message));
  BOOST_TEST(a->rcode == dns_rcode::no_error);
  BOOST_TEST_REQUIRE(a->addresses.size() == 1u);
  BOOST_TEST(to_string(a->addresses[0]) == "198.51.100.7");
  BOOST_TEST(a->ttl == 30u);
}

BOOST_AUTO_TEST_CASE(an_upstream_answer_to_another_question_is_invalid) {
  auto m = hex(k_cname_answer);
  BOOST_TEST(!parse_response(m, 0xbeee, "www.example.com", dns_type::a).ok());
  BOOST_TEST(!parse_response(m, 0xbeef, "example.com", dns_type::a).ok());
  BOOST_TEST(!parse_response(m, 0xbeef, "www.example.com", dns_type::aaaa).ok());
}

BOOST_AUTO_TEST_CASE(a_malformed_upstream_answer_is_invalid) {
  // A pointer forward to itself (a loop), and an A record of five bytes.
  auto loop = hex("beef81800001000100000000"
                  "0161000001"
                  "0001"
                  "c01c000100010000001e0004c6336407");
  BOOST_TEST(!parse_response(loop, 0xbeef, "a", dns_type::a).ok());
  auto five = hex("beef81800001000100000000"
                  "0161000001"
                  "0001"
                  "c00c000100010000001e0005c633640701");
  BOOST_TEST(!parse_response(five, 0xbeef, "a", dns_type::a).ok());
  auto cut = hex(k_cname_answer);
  cut.resize(cut.size() - 2);
  BOOST_TEST(!parse_response(cut, 0xbeef, "www.example.com", dns_type::a).ok());
}

BOOST_AUTO_TEST_SUITE_END()
