// The E2B endpoint's pure parts: Connect's framing and errors, the proto3 JSON of envd's
// process and filesystem messages, the sandbox API's JSON, multipart uploads and the sealed
// envd access tokens. The wire samples are what the stock SDKs send (e2b 2.63.0 on PyPI,
// captured from its connectrpc client and httpx).
#define BOOST_TEST_MODULE e2b_core
#include <boost/test/unit_test.hpp>

#include "e2b/access_token.hpp"
#include "e2b/connect_protocol.hpp"
#include "e2b/filesystem_messages.hpp"
#include "e2b/lifecycle_json.hpp"
#include "e2b/multipart_reader.hpp"
#include "e2b/process_messages.hpp"
#include "e2b/proto_json.hpp"

#include <csignal>
#include <string>

using namespace sandboxd;
using namespace sandboxd::e2b;

namespace {

std::string frame(std::uint8_t flags, std::string_view body) {
  std::string out = envelope(body);
  out[0] = static_cast<char>(flags);
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(connect_framing)

BOOST_AUTO_TEST_CASE(an_envelope_is_flags_then_a_big_endian_length) {
  const auto e = envelope("{}");
  BOOST_TEST(e.size() == 7u);
  BOOST_TEST(e[0] == 0);
  BOOST_TEST(e.substr(1, 4) == std::string("\0\0\0\x02", 4));
  BOOST_TEST(e.substr(5) == "{}");
  const auto end = end_of_stream(std::nullopt);
  BOOST_TEST(end[0] == 2);
  BOOST_TEST(end.substr(5) == "{}");
  const auto failed = end_of_stream(connect_error{connect_code::deadline_exceeded, "too slow"});
  BOOST_TEST(failed.substr(5) == R"({"error":{"code":"deadline_exceeded","message":"too slow"}})");
}

BOOST_AUTO_TEST_CASE(messages_split_anywhere_are_put_back_together) {
  const std::string stream = frame(0, R"({"start":{}})") + frame(0, "{\"a\":1}") + frame(2, "{}");
  for (std::size_t step = 1; step <= stream.size(); ++step) {
    envelope_reader r(1024);
    std::vector<envelope_reader::message> got;
    for (std::size_t i = 0; i < stream.size(); i += step)
      BOOST_REQUIRE(r.feed(std::string_view(stream).substr(i, step), got));
    BOOST_TEST(r.finish());
    BOOST_REQUIRE(got.size() == 3u);
    BOOST_TEST(got[0].bytes == R"({"start":{}})");
    BOOST_TEST(got[1].bytes == "{\"a\":1}");
    BOOST_TEST(got[2].end_of_stream);
  }
}

BOOST_AUTO_TEST_CASE(a_frame_over_the_limit_is_refused_from_its_header_alone) {
  envelope_reader r(100);
  std::vector<envelope_reader::message> got;
  std::string header("\0\x7f\xff\xff\xff", 5);
  BOOST_TEST(!r.feed(header, got));
  BOOST_REQUIRE(r.failure());
  BOOST_TEST((r.failure()->code == connect_code::resource_exhausted));
  BOOST_TEST(r.failure()->message.find("at most 100") != std::string::npos);
  BOOST_TEST(!r.feed("more", got)); // nothing more is read
}

BOOST_AUTO_TEST_CASE(compressed_unknown_flags_truncated_and_trailing_frames_are_refused) {
  std::vector<envelope_reader::message> got;
  envelope_reader compressed(100);
  BOOST_TEST(!compressed.feed(frame(1, "{}"), got));
  envelope_reader unknown(100);
  BOOST_TEST(!unknown.feed(frame(0x80, "{}"), got));
  envelope_reader truncated(100);
  BOOST_TEST(truncated.feed(envelope("{}").substr(0, 6), got));
  BOOST_TEST(!truncated.finish());
  envelope_reader trailing(100);
  BOOST_TEST(!trailing.feed(frame(2, "{}") + frame(0, "{}"), got));
  BOOST_TEST((trailing.failure()->code == connect_code::invalid_argument));
}

BOOST_AUTO_TEST_CASE(codes_map_to_the_sdks_expectations) {
  BOOST_TEST(http_status(connect_code::unauthenticated) == 401);
  BOOST_TEST(http_status(connect_code::not_found) == 404);
  BOOST_TEST(wire_name(connect_code::failed_precondition) == "failed_precondition");
  BOOST_TEST(wire_name(to_connect({errc::conflict, "paused"}).code) == "failed_precondition");
  BOOST_TEST(wire_name(to_connect({errc::not_a_directory, "x"}).code) == "invalid_argument");
  BOOST_TEST(error_body({connect_code::not_found, "no"}) ==
             R"({"code":"not_found","message":"no"})");
  BOOST_TEST(*parse_timeout_ms("60000") == 60000);
  BOOST_TEST(!parse_timeout_ms("12345678901").has_value());
  BOOST_TEST(!parse_timeout_ms("-1").has_value());
  BOOST_TEST(!parse_timeout_ms("").has_value());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(envd_process_messages)

BOOST_AUTO_TEST_CASE(a_start_request_as_the_python_sdk_sends_it) {
  // commands.run("echo hi", envs={"A": "1"}, cwd="/tmp", background=True, stdin=True)
  auto r = parse_start_request(
    R"({"process":{"cmd":"/bin/bash","args":["-l","-c","echo hi"],"envs":{"A":"1"},)"
    R"("cwd":"/tmp"},"stdin":true,"unknownField":1})");
  BOOST_REQUIRE(r);
  BOOST_TEST(r->process.cmd == "/bin/bash");
  BOOST_TEST(r->process.args.size() == 3u);
  BOOST_TEST(r->process.args[2] == "echo hi");
  BOOST_REQUIRE(r->process.envs.size() == 1u);
  BOOST_TEST(r->process.envs[0].second == "1");
  BOOST_TEST(*r->process.cwd == "/tmp");
  BOOST_TEST(r->stdin);
  BOOST_TEST(!r->pty);
}

BOOST_AUTO_TEST_CASE(selectors_take_pids_as_numbers_or_strings_and_bytes_in_either_alphabet) {
  auto a = parse_send_input(R"({"process":{"pid":"1234"},"input":{"stdin":"aGk_Pz4-"}})");
  BOOST_REQUIRE(a);
  BOOST_TEST(*a->process.pid == 1234u);
  BOOST_TEST(a->data == "hi?"
                        "?>>");
  auto b = parse_send_input(R"({"process":{"pid":7},"input":{"stdin":"aGk/Pz4+"}})");
  BOOST_REQUIRE(b);
  BOOST_TEST(b->data == a->data);
  auto padded = parse_send_input(R"({"process":{"pid":7},"input":{"stdin":"aGk="}})");
  BOOST_REQUIRE(padded);
  BOOST_TEST(padded->data == "hi");
  BOOST_TEST(!parse_send_input(R"({"process":{"pid":-1},"input":{}})").ok());
  BOOST_TEST(!parse_send_input(R"({"process":{"pid":7},"input":{"stdin":"a*b"}})").ok());
  BOOST_TEST(!parse_send_input(R"({"input":{"stdin":""}})").ok());
  BOOST_TEST(!parse_send_input(R"([1,2])").ok());
  BOOST_TEST(!parse_send_input(std::string(100, '[') + std::string(100, ']')).ok());
}

BOOST_AUTO_TEST_CASE(signals_by_enum_name_or_number) {
  auto kill = parse_send_signal(R"({"process":{"pid":3},"signal":"SIGNAL_SIGKILL"})");
  BOOST_REQUIRE(kill);
  BOOST_TEST(kill->signal == SIGKILL);
  auto term = parse_send_signal(R"({"process":{"pid":3},"signal":15})");
  BOOST_REQUIRE(term);
  BOOST_TEST(term->signal == SIGTERM);
  BOOST_TEST(!parse_send_signal(R"({"process":{"pid":3},"signal":"SIGNAL_SIGSTOP"})").ok());
  BOOST_TEST(!parse_send_signal(R"({"process":{"pid":3},"signal":2})").ok());
}

BOOST_AUTO_TEST_CASE(events_are_written_in_the_json_mapping) {
  BOOST_TEST(start_event(42) == R"({"event":{"start":{"pid":42}}})");
  BOOST_TEST(data_event(false, "10\n") == R"({"event":{"data":{"stdout":"MTAK"}}})");
  BOOST_TEST(data_event(true, "x") == R"({"event":{"data":{"stderr":"eA=="}}})");
  BOOST_TEST(end_event(end_of(0, 0)) ==
             R"({"event":{"end":{"exitCode":0,"exited":true,"status":"exit status 0"}}})");
  BOOST_TEST(
    end_event(end_of(-1, SIGKILL)) ==
    R"({"event":{"end":{"error":"signal: killed","exitCode":-1,"exited":false,"status":"signal: killed"}}})");
  BOOST_TEST(keepalive_event() == R"({"event":{"keepalive":{}}})");
  process_view p;
  p.config.cmd = "/bin/bash";
  p.config.args = {"-l", "-c", "sleep 9"};
  p.pid = 5;
  BOOST_TEST(
    list_response({p}) ==
    R"({"processes":[{"config":{"args":["-l","-c","sleep 9"],"cmd":"/bin/bash","envs":{}},"pid":5}]})");
}

BOOST_AUTO_TEST_CASE(stream_input_messages) {
  auto start = parse_stream_input(R"({"start":{"process":{"pid":9}}})");
  BOOST_REQUIRE(start);
  BOOST_TEST((start->type == stream_input_event::kind::start));
  auto data = parse_stream_input(R"({"data":{"input":{"stdin":"YQ=="}}})");
  BOOST_REQUIRE(data);
  BOOST_TEST(data->data == "a");
  auto ka = parse_stream_input(R"({"keepalive":{}})");
  BOOST_TEST((ka->type == stream_input_event::kind::keepalive));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(envd_filesystem_messages)

BOOST_AUTO_TEST_CASE(requests_and_entries) {
  BOOST_TEST(parse_path_request(R"({"path":"/a"})")->path == "/a");
  auto mv = parse_move_request(R"({"source":"/a","destination":"/b"})");
  BOOST_TEST(mv->destination == "/b");
  BOOST_TEST(parse_list_dir_request(R"({"path":"/"})")->depth == 1u);
  BOOST_TEST(parse_list_dir_request(R"({"path":"/","depth":3})")->depth == 3u);
  entry_view dir{"work", entry_type::directory, "/work", 4096, 0755, 1'700'000'000'500'000'000};
  BOOST_TEST(go_mode_text(dir) == "drwxr-xr-x");
  BOOST_TEST(go_file_mode(dir) == ((1u << 31) | 0755u));
  BOOST_TEST(
    entry_response(dir) ==
    R"({"entry":{"group":"root","isSymlink":false,"mode":2147484141,"modifiedTime":"2023-11-14T22:13:20.5Z","name":"work","owner":"root","path":"/work","permissions":"drwxr-xr-x","size":"4096","type":"FILE_TYPE_DIRECTORY"}})");
  entry_view file{"f", entry_type::file, "/f", 3, 0644, 0};
  BOOST_TEST(upload_response({file}) == R"([{"name":"f","path":"/f","type":"file"}])");
  BOOST_TEST(base_name("/a/b/") == "b");
  BOOST_TEST(base_name("/") == "/");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sandbox_api_json)

BOOST_AUTO_TEST_CASE(a_create_as_the_python_sdk_sends_it) {
  auto r = parse_new_sandbox(R"({"templateID":"python","autoPause":false,"metadata":{"k":"v"},)"
                             R"("timeout":120,"envVars":{"A":"1"},"secure":true})");
  BOOST_REQUIRE(r);
  BOOST_TEST(r->template_name == "python");
  BOOST_TEST(r->timeout_s == 120);
  BOOST_REQUIRE(r->metadata.size() == 1u);
  BOOST_TEST(r->metadata[0].key == "k");
  BOOST_TEST(r->env[0].first == "A");
  BOOST_TEST(!r->allow_internet_access);
  auto defaults = parse_new_sandbox(R"({"templateID":"base","metadata":{},"envVars":{}})");
  BOOST_TEST(defaults->timeout_s == k_default_timeout_s);
}

BOOST_AUTO_TEST_CASE(what_sandboxd_does_not_do_is_refused_by_name) {
  auto mcp = parse_new_sandbox(R"({"templateID":"base","mcp":{"x":{}}})");
  BOOST_REQUIRE(!mcp);
  BOOST_TEST(mcp.err().message.find("mcp") == 0u);
  BOOST_TEST(!parse_new_sandbox(R"({"templateID":"base","volumeMounts":[{"name":"v"}]})").ok());
  BOOST_TEST(!parse_new_sandbox(R"({"templateID":"base","autoResume":{"enabled":true}})").ok());
  BOOST_TEST(!parse_new_sandbox(R"({"templateID":"base","timeout":0})").ok());
  BOOST_TEST(!parse_new_sandbox(R"({"metadata":{}})").ok());
  BOOST_TEST(!parse_new_sandbox(R"({"templateID":"base","metadata":{"k":1}})").ok());
  BOOST_TEST(parse_new_sandbox(R"({"templateID":"base","network":null,"volumeMounts":[]})").ok());
}

BOOST_AUTO_TEST_CASE(sandboxes_as_the_sdk_reads_them) {
  sandbox_view s;
  s.id = "sb_1";
  s.template_name = "python";
  s.started_ns = 1'000'000'000;
  s.end_ns = 301'000'000'000;
  s.memory_mib = 512;
  s.cpu_millicores = 1500;
  s.metadata = {{"k", "v"}};
  s.envd_access_token = "sbxat_x";
  BOOST_TEST(
    sandbox_json(s) ==
    R"({"alias":"python","clientID":"sandboxd","domain":null,"envdAccessToken":"sbxat_x","envdVersion":"0.5.7","sandboxID":"sb_1","templateID":"python","trafficAccessToken":null})");
  const auto listed = listed_sandboxes_json({s});
  BOOST_TEST(listed.find(R"("cpuCount":2)") != std::string::npos);
  BOOST_TEST(listed.find(R"("endAt":"1970-01-01T00:05:01Z")") != std::string::npos);
  BOOST_TEST(listed.find(R"("state":"running")") != std::string::npos);
  BOOST_TEST(listed.find("envdAccessToken") == std::string::npos);
  s.paused = true;
  s.on_timeout_pause = true;
  const auto detail = sandbox_detail_json(s);
  BOOST_TEST(detail.find(R"("state":"paused")") != std::string::npos);
  BOOST_TEST(detail.find(R"("onTimeout":"pause")") != std::string::npos);
  BOOST_TEST(api_error_json(404, "gone") == R"({"code":404,"message":"gone"})");
}

BOOST_AUTO_TEST_CASE(list_filters_decode_as_often_as_the_sdk_encodes) {
  // Sandbox.list(query=SandboxQuery(metadata={"a b": "x&y=z"}, state=[RUNNING])): the SDK
  // quotes each key and value, urlencodes the pairs, and httpx encodes the parameter once more;
  // the server's query parsing takes the outer layer off.
  auto q = parse_list_query("a%2520b=x%2526y%253Dz&k=v", "running");
  BOOST_REQUIRE(q);
  BOOST_REQUIRE(q->metadata.size() == 2u);
  BOOST_TEST(q->metadata[0].key == "a b");
  BOOST_TEST(q->metadata[0].value == "x&y=z");
  BOOST_TEST(q->running);
  BOOST_TEST(!q->paused);
  BOOST_TEST(!parse_list_query("", "deleted").ok());
  BOOST_TEST(!parse_list_query("a=%zz", "").ok());
  auto pairs = parse_query("metadata=a%3Db&state=running%2Cpaused&x");
  BOOST_REQUIRE(pairs);
  BOOST_TEST((*pairs)[0].second == "a=b");
  BOOST_TEST((*pairs)[1].second == "running,paused");
  BOOST_TEST((*pairs)[2].first == "x");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(multipart_uploads)

const std::string k_body =
  "--XyZ\r\n"
  "Content-Disposition: form-data; name=\"file\"; filename=\"/a/b.txt\"\r\n"
  "Content-Type: application/octet-stream\r\n"
  "\r\n"
  "hello\r\n--X not yet\r\n"
  "--XyZ\r\n"
  "Content-Disposition: form-data; name=\"file\"; filename=\"q\\\"d\"\r\n"
  "\r\n"
  "\r\n"
  "--XyZ--\r\n";

BOOST_AUTO_TEST_CASE(parts_come_out_whole_however_the_body_is_cut) {
  for (std::size_t step = 1; step <= k_body.size(); ++step) {
    multipart_reader r("XyZ");
    std::vector<multipart_reader::piece> got;
    for (std::size_t i = 0; i < k_body.size(); i += step)
      BOOST_REQUIRE(r.feed(std::string_view(k_body).substr(i, step), got));
    BOOST_REQUIRE(r.finish());
    std::vector<std::string> names, contents(1);
    for (auto& p : got) {
      if (p.type == multipart_reader::piece::kind::part_begin)
        names.push_back(p.filename);
      else if (p.type == multipart_reader::piece::kind::data)
        contents.back() += p.bytes;
      else
        contents.emplace_back();
    }
    BOOST_REQUIRE(names.size() == 2u);
    BOOST_TEST(names[0] == "/a/b.txt");
    BOOST_TEST(names[1] == "q\"d");
    BOOST_TEST(contents[0] == "hello\r\n--X not yet");
    BOOST_TEST(contents[1] == "");
  }
}

BOOST_AUTO_TEST_CASE(bounds_and_malformed_bodies) {
  BOOST_TEST(*multipart_reader::boundary_of("multipart/form-data; boundary=\"a b\"") == "a b");
  BOOST_TEST(!multipart_reader::boundary_of("application/json").ok());
  BOOST_TEST(!multipart_reader::boundary_of("multipart/form-data").ok());
  std::vector<multipart_reader::piece> got;
  multipart_reader endless("b");
  BOOST_TEST(endless.feed("--b\r\nContent-Disposition: form-data; name=x\r\n", got));
  BOOST_TEST(!endless.feed(std::string(9000, 'h'), got));
  multipart_reader unfinished("b");
  BOOST_TEST(unfinished.feed("--b\r\nContent-Disposition: form-data; name=x\r\n\r\ndata", got));
  BOOST_TEST(!unfinished.finish());
  multipart_reader no_disposition("b");
  BOOST_TEST(!no_disposition.feed("--b\r\nX: y\r\n\r\n", got));
  multipart_reader many("b", {8192, 2});
  BOOST_TEST(!many.feed("--b\r\nContent-Disposition: form-data; name=x\r\n\r\n\r\n"
                        "--b\r\nContent-Disposition: form-data; name=x\r\n\r\n\r\n"
                        "--b\r\nContent-Disposition: form-data; name=x\r\n\r\n\r\n--b--",
                        got));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(access_tokens)

BOOST_AUTO_TEST_CASE(a_token_opens_for_its_sandbox_only) {
  token_sealer sealer(std::string(32, 'k'));
  const auto t = sealer.seal("sb_1", "sbd_secret");
  BOOST_TEST(t.rfind("sbxat_", 0) == 0u);
  BOOST_TEST(t.find("sbd_secret") == std::string::npos);
  BOOST_TEST(*sealer.open(t, "sb_1") == "sbd_secret");
  BOOST_TEST(!sealer.open(t, "sb_2"));
  BOOST_TEST(sealer.seal("sb_1", "sbd_secret") != t); // a fresh nonce each time
  std::string altered = t;
  altered[10] = altered[10] == 'A' ? 'B' : 'A';
  BOOST_TEST(!sealer.open(altered, "sb_1"));
  BOOST_TEST(!token_sealer(std::string(32, 'j')).open(t, "sb_1"));
  BOOST_TEST(!sealer.open("sbxat_", "sb_1"));
  BOOST_TEST(!sealer.open("sbd_secret", "sb_1"));
  BOOST_CHECK_THROW(token_sealer(std::string(16, 'k')), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
