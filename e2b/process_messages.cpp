#include "e2b/process_messages.hpp"

#include "cli/json_util.hpp"
#include "e2b/proto_json.hpp"

#include <csignal>

namespace sandboxd::e2b {

namespace {

result<process_selector> read_selector(const json* v) {
  process_selector s;
  if (!v)
    return make_error(errc::invalid_argument, "no process given; name it by its pid");
  if (!v->is_object())
    return make_error(errc::invalid_argument, "field process must be an object");
  if (auto* pid = member(*v, "pid")) {
    E2B_TRY(n, read_uint32(pid, "process.pid"));
    s.pid = *n;
  } else if (auto* tag = member(*v, "tag")) {
    E2B_TRY(t, read_string(tag, "process.tag"));
    s.tag = *t;
  } else {
    return make_error(errc::invalid_argument, "no process given; name it by its pid");
  }
  return s;
}

// ProcessInput: {"stdin": bytes} or {"pty": bytes}.
result<void> read_input(const json* v, std::string& data, bool& pty) {
  if (!v)
    return {};
  if (!v->is_object())
    return make_error(errc::invalid_argument, "field input must be an object");
  if (auto* p = member(*v, "pty")) {
    E2B_TRY(b, read_bytes(p, "input.pty"));
    data = std::move(*b);
    pty = true;
    return {};
  }
  E2B_TRY(b, read_bytes(member(*v, "stdin"), "input.stdin"));
  data = std::move(*b);
  return {};
}

json event_json(json inner) {
  json j;
  j["event"] = std::move(inner);
  return j;
}

} // namespace

result<start_request> parse_start_request(std::string_view body) {
  E2B_TRY(j, parse_object(body, "StartRequest"));
  start_request r;
  const json* p = member(*j, "process");
  if (!p || !p->is_object())
    return make_error(errc::invalid_argument, "StartRequest has no process to start");
  E2B_TRY(cmd, read_string(member(*p, "cmd"), "process.cmd"));
  r.process.cmd = std::move(*cmd);
  if (auto* args = member(*p, "args")) {
    if (!args->is_array())
      return make_error(errc::invalid_argument, "field process.args must be a list of strings");
    for (const auto& a : *args) {
      E2B_TRY(s, read_string(&a, "process.args"));
      r.process.args.push_back(std::move(*s));
    }
  }
  if (auto* envs = member(*p, "envs")) {
    if (!envs->is_object())
      return make_error(errc::invalid_argument, "field process.envs must be an object of strings");
    for (auto it = envs->begin(); it != envs->end(); ++it) {
      E2B_TRY(s, read_string(&it.value(), "process.envs"));
      r.process.envs.emplace_back(it.key(), std::move(*s));
    }
  }
  if (auto* cwd = member(*p, "cwd")) {
    E2B_TRY(s, read_string(cwd, "process.cwd"));
    r.process.cwd = std::move(*s);
  }
  r.pty = member(*j, "pty") != nullptr;
  if (auto* tag = member(*j, "tag")) {
    E2B_TRY(s, read_string(tag, "tag"));
    r.tag = std::move(*s);
  }
  E2B_TRY(in, read_bool(member(*j, "stdin"), "stdin"));
  r.stdin = *in;
  return r;
}

result<input_request> parse_send_input(std::string_view body) {
  E2B_TRY(j, parse_object(body, "SendInputRequest"));
  input_request r;
  E2B_TRY(s, read_selector(member(*j, "process")));
  r.process = std::move(*s);
  E2B_TRY(ok, read_input(member(*j, "input"), r.data, r.pty));
  return r;
}

result<signal_request> parse_send_signal(std::string_view body) {
  E2B_TRY(j, parse_object(body, "SendSignalRequest"));
  signal_request r;
  E2B_TRY(s, read_selector(member(*j, "process")));
  r.process = std::move(*s);
  const json* sig = member(*j, "signal");
  if (sig && sig->is_string()) {
    const auto& name = sig->get_ref<const std::string&>();
    if (name == "SIGNAL_SIGKILL")
      r.signal = SIGKILL;
    else if (name == "SIGNAL_SIGTERM")
      r.signal = SIGTERM;
    else
      return make_error(errc::invalid_argument, "signal " + name +
                                                  " is not one envd sends; use SIGNAL_SIGKILL or "
                                                  "SIGNAL_SIGTERM");
  } else {
    E2B_TRY(n, read_uint32(sig, "signal"));
    if (*n != SIGKILL && *n != SIGTERM)
      return make_error(errc::invalid_argument,
                        "signal " + std::to_string(*n) + " is not one envd sends; use 9 or 15");
    r.signal = static_cast<int>(*n);
  }
  return r;
}

result<process_selector> parse_process_request(std::string_view body) {
  E2B_TRY(j, parse_object(body, "request"));
  return read_selector(member(*j, "process"));
}

result<stream_input_event> parse_stream_input(std::string_view body) {
  E2B_TRY(j, parse_object(body, "StreamInputRequest"));
  stream_input_event e;
  if (auto* start = member(*j, "start")) {
    if (!start->is_object())
      return make_error(errc::invalid_argument, "field start must be an object");
    E2B_TRY(s, read_selector(member(*start, "process")));
    e.type = stream_input_event::kind::start;
    e.process = std::move(*s);
  } else if (auto* data = member(*j, "data")) {
    if (!data->is_object())
      return make_error(errc::invalid_argument, "field data must be an object");
    e.type = stream_input_event::kind::data;
    E2B_TRY(ok, read_input(member(*data, "input"), e.data, e.pty));
  } else {
    e.type = stream_input_event::kind::keepalive;
  }
  return e;
}

std::string start_event(std::uint32_t pid) {
  json start;
  start["pid"] = pid;
  json inner;
  inner["start"] = std::move(start);
  return dump(event_json(std::move(inner)));
}

std::string data_event(bool is_stderr, std::string_view bytes) {
  json data;
  data[is_stderr ? "stderr" : "stdout"] = cli::base64(bytes);
  json inner;
  inner["data"] = std::move(data);
  return dump(event_json(std::move(inner)));
}

std::string end_event(const process_end& end) {
  json e;
  e["exitCode"] = end.exit_code;
  e["exited"] = end.exited;
  e["status"] = end.status;
  if (end.error)
    e["error"] = *end.error;
  json inner;
  inner["end"] = std::move(e);
  return dump(event_json(std::move(inner)));
}

std::string keepalive_event() {
  json inner;
  inner["keepalive"] = json::object();
  return dump(event_json(std::move(inner)));
}

std::string list_response(const std::vector<process_view>& processes) {
  json list = json::array();
  for (const auto& p : processes) {
    json config;
    config["cmd"] = p.config.cmd;
    config["args"] = p.config.args;
    json envs = json::object();
    for (const auto& [k, v] : p.config.envs)
      envs[k] = v;
    config["envs"] = std::move(envs);
    if (p.config.cwd)
      config["cwd"] = *p.config.cwd;
    json info;
    info["config"] = std::move(config);
    info["pid"] = p.pid;
    if (p.tag)
      info["tag"] = *p.tag;
    list.push_back(std::move(info));
  }
  json j;
  j["processes"] = std::move(list);
  return dump(j);
}

process_end end_of(int exit_code, int signal) {
  process_end e;
  if (signal == 0) {
    e.exit_code = exit_code;
    e.exited = true;
    e.status = "exit status " + std::to_string(exit_code);
    if (exit_code != 0)
      e.error = e.status;
    return e;
  }
  e.exit_code = -1;
  e.exited = false;
  switch (signal) {
  case SIGKILL:
    e.status = "signal: killed";
    break;
  case SIGTERM:
    e.status = "signal: terminated";
    break;
  case SIGINT:
    e.status = "signal: interrupt";
    break;
  default:
    e.status = "signal: " + std::to_string(signal);
  }
  e.error = e.status;
  return e;
}

} // namespace sandboxd::e2b
