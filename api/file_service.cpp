// file_service — the Sandbox capability's file calls: readFile streams the content to the
// client's ByteSink in chunks (one streaming call at a time, so a slow client holds one
// chunk, not the file, in the daemon's send queue); writeFile returns an Upload that takes
// the content in chunks (at most max_upload_bytes) and writes it through the sandbox's actor
// on commit; listDir, stat, makeDir, remove and rename are one operation each.
// GCC 12 reports the optional<error> inside kj::ExceptionOr<op_result<T>> as maybe
// uninitialized when it is moved; it is always initialized (a false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "api/sandbox_ops.hpp"
#include "base/sha256.hpp"

namespace sandboxd::api {
namespace {

// A readFile chunk: large enough that a 64 MiB file is 64 calls, not 1,024, small enough that
// a client's reader takes it within its default limits.
constexpr std::size_t k_chunk_bytes = 1u << 20;

rpc::FileType type_of(runtime::file_type t) {
  switch (t) {
  case runtime::file_type::regular:
    return rpc::FileType::REGULAR;
  case runtime::file_type::directory:
    return rpc::FileType::DIRECTORY;
  case runtime::file_type::symlink:
    return rpc::FileType::SYMLINK;
  case runtime::file_type::other:
    break;
  }
  return rpc::FileType::OTHER;
}

void fill(rpc::FileInfo::Builder out, const std::string& path, const runtime::file_info& i) {
  out.setPath(path);
  out.setType(type_of(i.type));
  out.setSize(i.size);
  out.setMode(i.mode);
  out.setMtimeNs(i.mtime_ns);
}

kj::ArrayPtr<const kj::byte> bytes(const std::string& s) {
  return kj::arrayPtr(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}

kj::ArrayPtr<const kj::byte> bytes(const sha256_digest& d) {
  return kj::arrayPtr(d.data(), d.size());
}

std::string path_of(capnp::Text::Reader t) {
  check_result(check_size("the path", t.size(), input_limits{}.path_bytes));
  std::string p(t.cStr(), t.size());
  if (p.empty())
    throw_error(errc::invalid_argument, "the path is empty; give an absolute path in the sandbox");
  if (p.find('\0') != std::string::npos)
    throw_error(errc::invalid_argument, "the path has a NUL byte");
  return p;
}

kj::Promise<runtime::file_info> stat_of(const sandbox_ref& s, const std::string& path) {
  return operation<runtime::file_info>(
           s, [s, path](auto done) { s.ctx->plane->stat(s.id, s.caller(), path, std::move(done)); })
    .then([](actors::op_result<runtime::file_info> r) { return take(std::move(r)); });
}

// Sends content[from..] to `sink` one chunk at a time.
kj::Promise<void> send_chunks(rpc::ByteSink::Client sink,
                              std::shared_ptr<const std::string> content, std::size_t from) {
  if (from >= content->size())
    return end_stream(sink).attach(kj::mv(sink));
  const std::size_t n = std::min(k_chunk_bytes, content->size() - from);
  auto req = sink.writeRequest();
  req.setData(bytes(*content).slice(from, from + n));
  return req.send().then(
    [sink = kj::mv(sink), content = std::move(content), next = from + n]() mutable {
      return send_chunks(kj::mv(sink), std::move(content), next);
    });
}

// What the uploads of one connection and one tenant hold in the daemon: taken when an
// upload is handed out and as it grows, given back when it is committed, dropped or idle.
// Loop thread only.
class upload_budget {
public:
  upload_budget(const sandbox_ref& s) : s_(s) {
    const auto& o = s_.ctx->options;
    auto& t = totals();
    if (s_.conn->uploads >= o.max_uploads_per_connection)
      throw_error(errc::resource_exhausted,
                  "this connection has " + std::to_string(s_.conn->uploads) +
                    " uploads open, the most it may have; commit or drop one first");
    if (t.uploads >= o.max_uploads_per_tenant)
      throw_error(errc::resource_exhausted,
                  "tenant " + s_.who.tenant + " has " + std::to_string(t.uploads) +
                    " uploads open, the most it may have; commit or drop one first");
    ++s_.conn->uploads;
    ++t.uploads;
  }
  upload_budget(const upload_budget&) = delete;
  upload_budget& operator=(const upload_budget&) = delete;
  ~upload_budget() {
    give_back_bytes();
    --s_.conn->uploads;
    auto& t = totals();
    if (--t.uploads == 0)
      s_.ctx->uploads_by_tenant.erase(s_.who.tenant);
  }

  void take_bytes(std::uint64_t n, const std::string& path) {
    auto& t = totals();
    const auto limit = s_.ctx->options.max_upload_buffer_bytes_per_tenant;
    if (t.bytes + n > limit)
      throw_error(errc::resource_exhausted,
                  "tenant " + s_.who.tenant + "'s uploads in progress hold " +
                    std::to_string(t.bytes) + " bytes; " + std::to_string(n) + " more for " + path +
                    " would pass the " + std::to_string(limit) +
                    " bytes they may hold; commit the uploads in progress first");
    t.bytes += n;
    s_.conn->upload_bytes += n;
    held_ += n;
  }
  void give_back_bytes() {
    totals().bytes -= held_;
    s_.conn->upload_bytes -= held_;
    held_ = 0;
  }

private:
  service_context::upload_totals& totals() { return s_.ctx->uploads_by_tenant[s_.who.tenant]; }

  sandbox_ref s_;
  std::uint64_t held_ = 0;
};

// What a writeFile's client sends, kept until commit. Bounded by upload_budget; dropped
// (its memory given back) after options.upload_idle with no write.
class upload final : public rpc::Upload::Server {
public:
  upload(sandbox_ref s, std::string path, std::uint32_t mode)
      : s_(std::move(s)), path_(std::move(path)), mode_(mode), budget_(s_) {
    arm_idle();
  }

  kj::Promise<void> write(WriteContext context) override {
    check_open();
    auto data = context.getParams().getData();
    check_result(
      check_size("an upload chunk", data.size(), s_.ctx->options.defaults.inputs.chunk_bytes));
    if (content_.size() + data.size() > s_.ctx->options.max_upload_bytes)
      throw_error(errc::too_large, "the content of " + path_ + " is more than " +
                                     std::to_string(s_.ctx->options.max_upload_bytes) +
                                     " bytes, the largest file this node writes");
    budget_.take_bytes(data.size(), path_);
    content_.append(reinterpret_cast<const char*>(data.begin()), data.size());
    last_write_ = s_.ctx->timer->now();
    return kj::READY_NOW;
  }

  kj::Promise<void> commit(CommitContext context) override {
    check_open();
    committed_ = true;
    idle_ = nullptr;
    budget_.give_back_bytes(); // the content moves to the actor, which bounds it from here
    return sandbox_call(*s_.ctx, s_.conn, "Upload.commit", [this, context]() mutable {
      return operation<events::file_op_finished>(s_,
                                                 [this](auto done) {
                                                   s_.ctx->plane->write_file(
                                                     s_.id, s_.caller(), path_, std::move(content_),
                                                     mode_, std::move(done));
                                                 })
        .then([this](actors::op_result<events::file_op_finished> r) {
          auto written = take(std::move(r));
          return stat_of(s_, path_).then(
            [written = std::move(written)](runtime::file_info i) { return std::pair(written, i); });
        })
        .then([this, context](std::pair<events::file_op_finished, runtime::file_info> w) mutable {
          auto results = context.getResults();
          fill(results.initInfo(), path_, w.second);
          if (w.first.sha256)
            results.setSha256(bytes(*w.first.sha256));
        });
    });
  }

private:
  void check_open() const {
    if (committed_)
      throw_error(errc::conflict, "the upload of " + path_ + " was committed already");
    if (expired_)
      throw_error(errc::conflict, "the upload of " + path_ +
                                    " was dropped: nothing was written to it for " +
                                    std::to_string(s_.ctx->options.upload_idle.count()) +
                                    " ms; start the upload again");
  }

  void arm_idle() {
    const auto idle = s_.ctx->options.upload_idle.count() * kj::MILLISECONDS;
    last_write_ = s_.ctx->timer->now();
    idle_ = s_.ctx->timer->afterDelay(idle).then([this] { idle_check(); }).eagerlyEvaluate(nullptr);
  }
  void idle_check() {
    const auto idle = s_.ctx->options.upload_idle.count() * kj::MILLISECONDS;
    const auto quiet = s_.ctx->timer->now() - last_write_;
    if (quiet < idle) {
      idle_ = s_.ctx->timer->afterDelay(idle - quiet)
                .then([this] { idle_check(); })
                .eagerlyEvaluate(nullptr);
      return;
    }
    expired_ = true;
    std::string().swap(content_);
    budget_.give_back_bytes();
  }

  sandbox_ref s_;
  std::string path_;
  std::uint32_t mode_;
  upload_budget budget_;
  std::string content_;
  bool committed_ = false;
  bool expired_ = false;
  kj::TimePoint last_write_ = kj::origin<kj::TimePoint>();
  kj::Promise<void> idle_ = nullptr;
};

// A file change answered with nothing but its outcome.
kj::Promise<void> change(const sandbox_ref& s,
                         kj::Function<void(actors::op_done<events::file_op_finished>)> start) {
  return operation<events::file_op_finished>(
           s, [start = kj::mv(start)](auto done) mutable { start(std::move(done)); })
    .then([](actors::op_result<events::file_op_finished> r) { take(std::move(r)); });
}

} // namespace

kj::Promise<void> serve_read_file(
  const sandbox_ref& s,
  capnp::CallContext<rpc::Sandbox::ReadFileParams, rpc::Sandbox::ReadFileResults> context) {
  return sandbox_call(*s.ctx, s.conn, "Sandbox.readFile", [s, context]() mutable {
    auto params = context.getParams();
    auto path = path_of(params.getPath());
    auto sink = params.getSink();
    return stat_of(s, path).then(
      [s, context, path, sink = kj::mv(sink)](runtime::file_info info) mutable {
        using file_content = actors::control_plane::file_content;
        return operation<file_content>(s,
                                       [s, path](auto done) {
                                         s.ctx->plane->read_file_with_digest(s.id, s.caller(), path,
                                                                             std::move(done));
                                       })
          .then(
            [context, path, info, sink = kj::mv(sink)](actors::op_result<file_content> r) mutable {
              auto read = take(std::move(r));
              // The digest the file_read event records: the content is hashed once, on the pool.
              const auto digest = read.sha256;
              auto content = std::make_shared<const std::string>(std::move(read.bytes));
              info.size = content->size();
              return send_chunks(kj::mv(sink), content, 0)
                .then([context, path, info, digest]() mutable {
                  auto results = context.getResults();
                  fill(results.initInfo(), path, info);
                  results.setSha256(bytes(digest));
                });
            });
      });
  });
}

kj::Promise<void> serve_write_file(
  const sandbox_ref& s,
  capnp::CallContext<rpc::Sandbox::WriteFileParams, rpc::Sandbox::WriteFileResults> context) {
  return sandbox_call(*s.ctx, s.conn, "Sandbox.writeFile", [s, context]() mutable {
    auto params = context.getParams();
    auto path = path_of(params.getPath());
    const std::uint32_t mode = params.getMode() == 0 ? 0644 : params.getMode();
    if (mode > 07777)
      throw_error(errc::invalid_argument,
                  "mode " + std::to_string(mode) + " is not a permission mode (at most 07777)");
    // The sandbox must exist for this tenant before an upload is handed out.
    return s.ctx->query(s.id, s.who.tenant)
      .then([s, context, path, mode](actors::command_reply r) mutable {
        check(r);
        context.getResults().setUpload(kj::heap<upload>(s, path, mode));
      });
  });
}

kj::Promise<void> serve_list_dir(
  const sandbox_ref& s,
  capnp::CallContext<rpc::Sandbox::ListDirParams, rpc::Sandbox::ListDirResults> context) {
  return sandbox_call(*s.ctx, s.conn, "Sandbox.listDir", [s, context]() mutable {
    auto path = path_of(context.getParams().getPath());
    const std::uint32_t limit = context.getParams().getLimit();
    return operation<runtime::dir_listing>(
             s, [s, path](
                  auto done) { s.ctx->plane->list_dir(s.id, s.caller(), path, std::move(done)); })
      .then([context, path, limit](actors::op_result<runtime::dir_listing> r) mutable {
        auto listing = take(std::move(r));
        bool truncated = listing.truncated;
        if (limit > 0 && listing.entries.size() > limit) {
          listing.entries.resize(limit);
          truncated = true;
        }
        auto results = context.getResults();
        auto out = results.initEntries(static_cast<unsigned>(listing.entries.size()));
        const std::string dir = path.size() > 1 && path.back() == '/' ? path : path + "/";
        for (unsigned i = 0; i < listing.entries.size(); ++i) {
          const auto& e = listing.entries[i];
          out[i].setName(e.name);
          fill(out[i].initInfo(), (path == "/" ? "/" : dir) + e.name, e.info);
        }
        results.setTruncated(truncated);
      });
  });
}

kj::Promise<void>
serve_stat(const sandbox_ref& s,
           capnp::CallContext<rpc::Sandbox::StatParams, rpc::Sandbox::StatResults> context) {
  return sandbox_call(*s.ctx, s.conn, "Sandbox.stat", [s, context]() mutable {
    auto path = path_of(context.getParams().getPath());
    return stat_of(s, path).then([context, path](runtime::file_info i) mutable {
      fill(context.getResults().initInfo(), path, i);
    });
  });
}

kj::Promise<void> serve_make_dir(
  const sandbox_ref& s,
  capnp::CallContext<rpc::Sandbox::MakeDirParams, rpc::Sandbox::MakeDirResults> context) {
  return sandbox_call(*s.ctx, s.conn, "Sandbox.makeDir", [s, context]() mutable {
    auto path = path_of(context.getParams().getPath());
    const bool parents = context.getParams().getParents();
    return change(s, [s, path, parents](auto done) {
      s.ctx->plane->make_dir(s.id, s.caller(), path, parents, 0755, std::move(done));
    });
  });
}

kj::Promise<void>
serve_remove(const sandbox_ref& s,
             capnp::CallContext<rpc::Sandbox::RemoveParams, rpc::Sandbox::RemoveResults> context) {
  return sandbox_call(*s.ctx, s.conn, "Sandbox.remove", [s, context]() mutable {
    auto path = path_of(context.getParams().getPath());
    const bool recursive = context.getParams().getRecursive();
    return change(s, [s, path, recursive](auto done) {
      s.ctx->plane->remove_path(s.id, s.caller(), path, recursive, std::move(done));
    });
  });
}

kj::Promise<void>
serve_rename(const sandbox_ref& s,
             capnp::CallContext<rpc::Sandbox::RenameParams, rpc::Sandbox::RenameResults> context) {
  return sandbox_call(*s.ctx, s.conn, "Sandbox.rename", [s, context]() mutable {
    auto from = path_of(context.getParams().getFrom());
    auto to = path_of(context.getParams().getTo());
    return change(s, [s, from, to](auto done) {
      s.ctx->plane->rename_path(s.id, s.caller(), from, to, std::move(done));
    });
  });
}

} // namespace sandboxd::api
