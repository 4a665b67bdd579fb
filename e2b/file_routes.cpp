// envd's filesystem service and its HTTP file transfer on the E2B endpoint: each call is the
// sandbox's file call (stat, listDir, makeDir, remove, rename, readFile, writeFile) through
// sandboxd's RPC API, streamed both ways within the daemon's flow control.
#include "api/rpc_error.hpp"
#include "e2b/filesystem_messages.hpp"
#include "e2b/multipart_reader.hpp"
#include "e2b/proto_json.hpp"
#include "e2b/routes.hpp"

namespace sandboxd::e2b {

namespace {

// What one Upload.write carries (sandboxd's input_limits chunk_bytes).
constexpr std::size_t k_chunk_bytes = 1u << 20;
// Entries one ListDir answers at most, all depths together.
constexpr std::size_t k_max_listed = 100'000;

capnp::Text::Reader text(const std::string& s) {
  return capnp::Text::Reader(s.data(), s.size());
}

entry_view entry_of(rpc::FileInfo::Reader i) {
  entry_view e;
  e.path = i.getPath().cStr();
  e.name = base_name(e.path);
  switch (i.getType()) {
  case rpc::FileType::REGULAR:
    e.type = entry_type::file;
    break;
  case rpc::FileType::DIRECTORY:
    e.type = entry_type::directory;
    break;
  case rpc::FileType::SYMLINK:
    e.type = entry_type::symlink;
    break;
  case rpc::FileType::OTHER:
    e.type = entry_type::other;
    break;
  }
  e.size = i.getSize();
  e.permissions = i.getMode();
  e.modified_ns = i.getMtimeNs();
  return e;
}

template <class T>
T parsed(result<T> r) {
  if (!r)
    throw_connect(connect_code::invalid_argument, r.err().message);
  return std::move(r).value();
}

bool gone(const std::string& sandbox_id, const error& f) {
  return f.code == errc::not_found && f.message.rfind("sandbox " + sandbox_id + " ", 0) == 0;
}

// envd's HTTP answers: the 502 of a missing sandbox, 401 for a refused token, else the code's
// status with {"code", "message"}.
kj::Promise<void> http_failure(exchange& x, const kj::Exception& e) {
  if (x.responded())
    kj::throwFatalException(kj::cp(e));
  auto f = failure_of(e);
  if (gone(x.sandbox_id, f))
    return x.reply_json(502, sandbox_gone_json(x.sandbox_id));
  const int status = f.code == errc::permission_denied ? 401 : http_status(f.code);
  return x.reply_json(static_cast<unsigned>(status), api_error_json(status, f.message));
}

kj::Promise<void> rpc_failure(exchange& x, const kj::Exception& e) {
  auto c = connect_failure_of(e);
  if (gone(x.sandbox_id, failure_of(e)))
    return x.reply_json(502, sandbox_gone_json(x.sandbox_id));
  if (c.code == connect_code::permission_denied)
    c.code = connect_code::unauthenticated;
  return x.reply_json(static_cast<unsigned>(http_status(c.code)), error_body(c));
}

void check_username(const exchange& x) {
  auto user = x.param("username").value_or("");
  if (!user.empty() && user != "root")
    api::throw_error(errc::invalid_argument,
                     "user " + user +
                       ": sandboxd reads and writes files as the sandbox's root "
                       "user; leave user unset or give \"root\" (docs/e2b.md)");
}

kj::Promise<entry_view> stat(rpc::Sandbox::Client sandbox, const std::string& path) {
  auto req = sandbox.statRequest();
  req.setPath(text(path));
  return req.send().then([sandbox](capnp::Response<rpc::Sandbox::StatResults> r) mutable {
    return entry_of(r.getInfo());
  });
}

kj::Promise<void> list_into(rpc::Sandbox::Client sandbox, std::string path, std::uint32_t depth,
                            std::shared_ptr<std::vector<entry_view>> out) {
  auto req = sandbox.listDirRequest();
  req.setPath(text(path));
  req.setLimit(0);
  return req.send().then(
    [sandbox, depth, out](capnp::Response<rpc::Sandbox::ListDirResults> r) mutable {
      std::vector<std::string> below;
      for (auto e : r.getEntries()) {
        auto v = entry_of(e.getInfo());
        if (v.type == entry_type::directory && depth > 1)
          below.push_back(v.path);
        out->push_back(std::move(v));
      }
      if (out->size() > k_max_listed)
        api::throw_error(errc::resource_exhausted, "the listing has more than " +
                                                     std::to_string(k_max_listed) +
                                                     " entries; list with a smaller depth");
      kj::Promise<void> next = kj::READY_NOW;
      for (auto& p : below)
        next = next.then(
          [sandbox, p, depth, out]() mutable { return list_into(sandbox, p, depth - 1, out); });
      return next;
    });
}

kj::Promise<std::string> rpc_call(route_context& ctx, exchange& x, const std::string& method,
                                  std::string body) {
  if (method == "Stat") {
    auto r = parsed(parse_path_request(body));
    return envd_caller_of(ctx, x).then([path = sandbox_path(r.path)](envd_caller c) {
      return stat(c.sandbox, path).then([c](entry_view e) mutable { return entry_response(e); });
    });
  }
  if (method == "MakeDir") {
    auto r = parsed(parse_path_request(body));
    return envd_caller_of(ctx, x).then([path = sandbox_path(r.path)](envd_caller c) {
      // envd answers already_exists for a path that is there (the SDK's make_dir: False).
      return stat(c.sandbox, path)
        .then(
          [path](entry_view) -> kj::Promise<void> {
            throw_connect(connect_code::already_exists, path + " already exists");
          },
          [c](kj::Exception&& e) mutable -> kj::Promise<void> {
            auto f = failure_of(e);
            if (f.code != errc::not_found || gone(c.sandbox_id, f))
              kj::throwFatalException(kj::mv(e));
            return kj::READY_NOW;
          })
        .then([c, path]() mutable {
          auto req = c.sandbox.makeDirRequest();
          req.setPath(text(path));
          req.setParents(true);
          return req.send().ignoreResult();
        })
        .then([c, path]() mutable { return stat(c.sandbox, path); })
        .then([](entry_view e) { return entry_response(e); });
    });
  }
  if (method == "Move") {
    auto r = parsed(parse_move_request(body));
    return envd_caller_of(ctx, x).then(
      [from = sandbox_path(r.source), to = sandbox_path(r.destination)](envd_caller c) {
        auto req = c.sandbox.renameRequest();
        req.setFrom(text(from));
        req.setTo(text(to));
        return req.send()
          .then([c, to](auto) mutable { return stat(c.sandbox, to); })
          .then([](entry_view e) { return entry_response(e); });
      });
  }
  if (method == "ListDir") {
    auto r = parsed(parse_list_dir_request(body));
    return envd_caller_of(ctx, x).then(
      [path = sandbox_path(r.path), depth = r.depth](envd_caller c) {
        auto out = std::make_shared<std::vector<entry_view>>();
        return list_into(c.sandbox, path, depth, out).then([c, out]() mutable {
          return list_dir_response(*out);
        });
      });
  }
  if (method == "Remove") {
    auto r = parsed(parse_path_request(body));
    return envd_caller_of(ctx, x).then([path = sandbox_path(r.path)](envd_caller c) {
      auto req = c.sandbox.removeRequest();
      req.setPath(text(path));
      req.setRecursive(true);
      return req.send().then([c](auto) mutable { return std::string("{}"); });
    });
  }
  if (method == "WatchDir" || method == "CreateWatcher" || method == "GetWatcherEvents" ||
      method == "RemoveWatcher")
    throw_connect(connect_code::unimplemented,
                  "sandboxd does not watch directories yet (docs/e2b.md)");
  throw_connect(connect_code::unimplemented, "filesystem." + method + " is not a method of envd");
}

// A file's content from the daemon to the HTTP answer: its head goes with the first piece
// (so that a failure before it is still an error status), and each piece is written before
// the daemon sends the next (ByteSink's flow control). The write in progress belongs to the
// request: when the request ends it is cancelled, and the daemon's call fails.
struct download {
  exchange* x = nullptr; // null once the request is over
  kj::Own<kj::AsyncOutputStream> out;
  kj::Promise<void> writing = nullptr;
  kj::Own<kj::PromiseFulfiller<void>> written;

  void end() {
    writing = nullptr;
    if (written && written->isWaiting())
      written->reject(KJ_EXCEPTION(DISCONNECTED, "the download's client went away"));
    out = nullptr;
    x = nullptr;
  }
};

class download_sink final : public rpc::ByteSink::Server {
public:
  explicit download_sink(std::shared_ptr<download> d) : d_(std::move(d)) {}

  kj::Promise<void> write(WriteContext context) override {
    auto* d = d_.get();
    if (!d->x)
      kj::throwFatalException(KJ_EXCEPTION(DISCONNECTED, "the download's client went away"));
    if (!d->out)
      d->out = d->x->begin_bytes("application/octet-stream");
    auto copy = kj::heapArray<kj::byte>(context.getParams().getData());
    auto paf = kj::newPromiseAndFulfiller<void>();
    d->written = kj::mv(paf.fulfiller);
    auto w = d->out->write(copy.begin(), copy.size()).attach(kj::mv(copy));
    d->writing = d->x->within(kj::mv(w), d->x->limits.write_timeout, "a download write")
                   .then([d] { d->written->fulfill(); },
                         [d](kj::Exception&& e) { d->written->reject(kj::mv(e)); })
                   .eagerlyEvaluate(nullptr);
    return kj::mv(paf.promise);
  }
  kj::Promise<void> done(DoneContext) override { return kj::READY_NOW; }

private:
  std::shared_ptr<download> d_;
};

kj::Promise<void> read_file(route_context& ctx, exchange& x) {
  auto path = x.param("path");
  if (!path || path->empty())
    api::throw_error(errc::invalid_argument, "no path: GET /files?path=...");
  check_username(x);
  return envd_caller_of(ctx, x).then([&x, path = sandbox_path(*path)](envd_caller c) {
    auto d = std::make_shared<download>();
    d->x = &x;
    auto req = c.sandbox.readFileRequest();
    req.setPath(text(path));
    req.setSink(kj::heap<download_sink>(d));
    return req.send()
      .then([&x, d, c](auto) mutable -> kj::Promise<void> {
        if (!d->out)
          return x.reply(200, "application/octet-stream", "");
        d->end(); // the end of the chunked body
        return kj::READY_NOW;
      })
      .attach(kj::defer([d] { d->end(); }));
  });
}

// One file of an upload: the daemon's Upload, written piece by piece, then committed.
struct upload_state {
  envd_caller caller;
  std::optional<rpc::Upload::Client> upload;
  std::string path;
  std::size_t files = 0;
  std::vector<entry_view> written;
  std::string first_path; // the path parameter: the first file's path
};

kj::Promise<void> upload_bytes(rpc::Upload::Client upload, std::string bytes) {
  kj::Promise<void> p = kj::READY_NOW;
  for (std::size_t at = 0; at < bytes.size(); at += k_chunk_bytes) {
    const auto n = std::min(k_chunk_bytes, bytes.size() - at);
    p = p.then([upload, piece = bytes.substr(at, n)]() mutable {
      auto w = upload.writeRequest();
      w.setData(kj::arrayPtr(reinterpret_cast<const kj::byte*>(piece.data()), piece.size()));
      return w.send().attach(kj::mv(piece));
    });
  }
  return p;
}

kj::Promise<void> begin_file(upload_state& st, std::string path) {
  st.path = sandbox_path(path);
  auto req = st.caller.sandbox.writeFileRequest();
  req.setPath(text(st.path));
  req.setMode(0644);
  st.upload = req.send().getUpload();
  ++st.files;
  return kj::READY_NOW;
}

kj::Promise<void> end_file(upload_state& st) {
  auto upload = *st.upload;
  st.upload.reset();
  return upload.commitRequest().send().then(
    [&st, upload](capnp::Response<rpc::Upload::CommitResults> r) mutable {
      auto e = entry_of(r.getInfo());
      e.path = st.path;
      e.name = base_name(st.path);
      st.written.push_back(std::move(e));
    });
}

kj::Promise<void> multipart_from(exchange& x, upload_state& st, multipart_reader& reader) {
  return x.read_some(256u << 10).then([&x, &st, &reader](std::string piece) -> kj::Promise<void> {
    std::vector<multipart_reader::piece> got;
    if (piece.empty()) {
      if (!reader.finish())
        api::throw_error(*reader.failure());
    } else if (!reader.feed(piece, got)) {
      api::throw_error(*reader.failure());
    }
    kj::Promise<void> steps = kj::READY_NOW;
    for (auto& p : got) {
      steps = steps.then([&st, p = kj::mv(p)]() mutable -> kj::Promise<void> {
        switch (p.type) {
        case multipart_reader::piece::kind::part_begin: {
          std::string path = st.files == 0 && !st.first_path.empty() ? st.first_path : p.filename;
          if (path.empty())
            api::throw_error(errc::invalid_argument,
                             "a part names no file: give its path as the filename or ?path=");
          return begin_file(st, path);
        }
        case multipart_reader::piece::kind::data:
          return upload_bytes(*st.upload, kj::mv(p.bytes));
        case multipart_reader::piece::kind::part_end:
          return end_file(st);
        }
        return kj::READY_NOW;
      });
    }
    if (piece.empty())
      return steps;
    return steps.then([&x, &st, &reader] { return multipart_from(x, st, reader); });
  });
}

kj::Promise<void> octets_from(exchange& x, upload_state& st) {
  return x.read_some(k_chunk_bytes).then([&x, &st](std::string piece) -> kj::Promise<void> {
    if (piece.empty())
      return end_file(st);
    return upload_bytes(*st.upload, kj::mv(piece)).then([&x, &st] { return octets_from(x, st); });
  });
}

kj::Promise<void> write_files(route_context& ctx, exchange& x) {
  check_username(x);
  if (!x.content_encoding.empty() && x.content_encoding != "identity")
    api::throw_error(errc::invalid_argument,
                     "Content-Encoding " + x.content_encoding +
                       ": sandboxd's endpoint takes uploads uncompressed (docs/e2b.md)");
  const auto type = std::string_view(x.content_type).substr(0, x.content_type.find(';'));
  return envd_caller_of(ctx, x).then([&x, type = std::string(type)](envd_caller c) {
    auto st = kj::heap<upload_state>();
    st->caller = kj::mv(c);
    st->first_path = x.param("path").value_or("");
    kj::Promise<void> done = nullptr;
    kj::Own<multipart_reader> reader;
    if (type == "multipart/form-data") {
      auto boundary = multipart_reader::boundary_of(x.content_type);
      if (!boundary)
        api::throw_error(boundary.err());
      reader = kj::heap<multipart_reader>(*boundary);
      done = multipart_from(x, *st, *reader);
    } else {
      if (st->first_path.empty())
        api::throw_error(errc::invalid_argument,
                         "an upload of one file names it: POST /files?path=...");
      done = begin_file(*st, st->first_path).then([&x, &st = *st] { return octets_from(x, st); });
    }
    auto& state = *st;
    return done
      .then([&x, &state]() -> kj::Promise<void> {
        if (state.written.empty())
          api::throw_error(errc::invalid_argument, "the upload holds no file");
        return x.reply_json(200, upload_response(state.written));
      })
      .attach(kj::mv(reader), kj::mv(st));
  });
}

} // namespace

kj::Promise<void> serve_filesystem(route_context& ctx, exchange& x, std::string method) {
  auto run = kj::evalNow([&]() -> kj::Promise<void> {
    const auto t = std::string_view(x.content_type).substr(0, x.content_type.find(';'));
    if (t != "application/json")
      throw_connect(connect_code::invalid_argument,
                    "Content-Type " + x.content_type +
                      ": this call takes application/json (the Connect protocol's JSON codec)");
    return x.read_body(ctx.limits.max_message)
      .then([&ctx, &x, method](std::string body) { return rpc_call(ctx, x, method, body); })
      .then([&x](std::string answer) { return x.reply_json(200, kj::mv(answer)); });
  });
  return run.catch_([&x](kj::Exception&& e) -> kj::Promise<void> {
    if (x.responded())
      kj::throwFatalException(kj::mv(e));
    return rpc_failure(x, e);
  });
}

kj::Promise<void> serve_files(route_context& ctx, exchange& x) {
  auto run = kj::evalNow([&]() -> kj::Promise<void> {
    if (x.method == kj::HttpMethod::GET)
      return read_file(ctx, x);
    if (x.method == kj::HttpMethod::POST)
      return write_files(ctx, x);
    api::throw_error(errc::invalid_argument, "/files takes GET (read) and POST (write)");
  });
  return run.catch_([&x](kj::Exception&& e) { return http_failure(x, e); });
}

kj::Promise<void> serve_health(route_context& ctx, exchange& x) {
  auto run = kj::evalNow([&]() {
    return envd_caller_of(ctx, x).then([&x](envd_caller c) {
      return c.sandbox.infoRequest().send().then(
        [&x, c](capnp::Response<rpc::Sandbox::InfoResults> r) mutable {
          if (r.getInfo().getState() == rpc::SandboxState::RUNNING)
            return x.reply(204, "", "");
          return x.reply_json(502, sandbox_gone_json(x.sandbox_id));
        });
    });
  });
  return run.catch_([&x](kj::Exception&& e) { return http_failure(x, e); });
}

} // namespace sandboxd::e2b
