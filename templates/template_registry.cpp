#include "templates/template_registry.hpp"

#include "base/crc32c.hpp"
#include "runtime/names.hpp"
#include "templates/build_cache.hpp"
#include "templates/image_layout.hpp"
#include "templates/image_spool.hpp"
#include "templates/layer_making.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;

namespace sandboxd::templates {
namespace {

constexpr char k_snapshot_magic[8] = {'S', 'B', 'D', 'T', 'R', 'E', 'G', '1'};
constexpr auto k_stock_retry_after = std::chrono::seconds(60);

void put32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out += static_cast<char>((v >> (8 * i)) & 0xff);
}
void put64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out += static_cast<char>((v >> (8 * i)) & 0xff);
}
bool get32(const std::string& in, std::size_t& at, std::uint32_t& v) {
  if (at + 4 > in.size())
    return false;
  v = 0;
  for (int i = 0; i < 4; ++i)
    v |= std::uint32_t{static_cast<unsigned char>(in[at + i])} << (8 * i);
  at += 4;
  return true;
}
bool get64(const std::string& in, std::size_t& at, std::uint64_t& v) {
  if (at + 8 > in.size())
    return false;
  v = 0;
  for (int i = 0; i < 8; ++i)
    v |= std::uint64_t{static_cast<unsigned char>(in[at + i])} << (8 * i);
  at += 8;
  return true;
}

std::string read_file(const std::string& path) {
  std::string out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return out;
  char buf[1 << 16];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
    out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

void write_file_durably(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".next";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    throw std::system_error(errno, std::generic_category(), "write " + tmp);
  bool ok = ::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()) &&
            ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::system_error(errno, std::generic_category(), "write " + path);
  int dir = ::open(fs::path(path).parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

std::string layer_hex(const sha256_digest& d) {
  return to_hex(d);
}

sha256_digest from_hex(const std::string& hex) {
  sha256_digest d{};
  for (std::size_t i = 0; i < d.size(); ++i)
    d[i] = static_cast<std::uint8_t>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  return d;
}

std::vector<events::env_var> env_of(const std::vector<std::pair<std::string, std::string>>& v) {
  std::vector<events::env_var> out;
  for (const auto& [k, val] : v)
    out.push_back({k, val, false, std::nullopt});
  return out;
}

// The names `who` may create sandboxes from: the stock templates and every ready one it sees.
std::string usable_names(const catalog& c, const asker& who) {
  std::set<std::string> names;
  for (const auto& d : stock_definitions())
    names.insert(d.name);
  for (const auto* t : visible(c, who))
    if (t->status == template_status::ready)
      names.insert(t->name);
  std::string out;
  for (const auto& n : names)
    out += (out.empty() ? "" : ", ") + n;
  return out;
}

} // namespace

std::string new_template_id() {
  std::random_device rd;
  char buf[32];
  std::snprintf(buf, sizeof buf, "tpl_%08x%08x", rd(), rd());
  return buf;
}

// A stock build in progress: who waits for it and what it reports.
struct template_registry::stock_job {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<progress_sink> sinks;
  template_progress last;
  bool finished = false;
  std::optional<result<template_state>> outcome;

  void report(const template_progress& p) {
    std::vector<progress_sink> now;
    {
      std::lock_guard<std::mutex> g(mu);
      last = p;
      now = sinks;
    }
    for (auto& s : now)
      if (s)
        s(p);
  }
};

template_hold::~template_hold() {
  if (registry_)
    registry_->release(id_);
}

template_registry::template_registry(registry_options options) : options_(std::move(options)) {
  if (!options_.log || !options_.layers)
    throw std::invalid_argument("template_registry needs a log and a layer store");
  fs::create_directories(options_.dir);
  ::chmod(options_.dir.c_str(), 0700);
  if (options_.stock.work_dir.empty())
    options_.stock.work_dir = options_.dir + "/work";
  fs::create_directories(options_.stock.work_dir);
  // A partial tarball a crash left behind. The work directory may be shared by the daemons
  // of one machine (the cache's), so only one older than any build (60 minutes) goes: a
  // younger one may be another daemon's build in progress.
  const auto stale = fs::file_time_type::clock::now() - std::chrono::hours(2);
  for (const auto& e : fs::directory_iterator(options_.stock.work_dir)) {
    std::error_code ec;
    if (e.path().filename().string().find(".partial.") != std::string::npos &&
        fs::last_write_time(e.path(), ec) < stale && !ec)
      fs::remove(e.path(), ec);
  }
  // The files of an image import a crash interrupted (image_spool.hpp).
  for (const auto& e : fs::directory_iterator(options_.dir))
    if (e.path().filename().string().rfind("import-", 0) == 0)
      fs::remove_all(e.path());
  load();
  // Builds a crash interrupted: their outcome is recorded, never assumed.
  std::vector<template_state> interrupted;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (const auto& [id, t] : catalog_.by_id)
      if (t.status == template_status::building)
        interrupted.push_back(t);
  }
  for (const auto& t : interrupted)
    emit(t, t.tenant, "system",
         {events::template_failed{
           make_error(errc::unavailable, "sandboxd stopped while template " + t.name +
                                           " was being made; make it again")}});
  collect_layers();
}

template_registry::~template_registry() = default;

events::time_point template_registry::now() const {
  if (options_.clock)
    return options_.clock();
  return std::chrono::time_point_cast<events::nanoseconds>(std::chrono::system_clock::now());
}

void template_registry::load() {
  const std::string key(events::template_stream_key);
  partition_ = options_.log->partition_for(key);
  // The snapshot: magic, partition, next offset, the encoded events, CRC-32C of all before.
  const std::string snap = read_file(options_.dir + "/registry.snapshot");
  bool loaded = false;
  if (snap.size() >= sizeof k_snapshot_magic + 20 &&
      std::memcmp(snap.data(), k_snapshot_magic, sizeof k_snapshot_magic) == 0) {
    std::size_t at = sizeof k_snapshot_magic;
    std::uint32_t partition = 0, count = 0, crc = 0;
    std::uint64_t next = 0;
    std::size_t body = snap.size() - 4;
    std::size_t crc_at = body;
    if (get32(snap, crc_at, crc) && crc == crc32c(snap.data(), body) &&
        get32(snap, at, partition) && get64(snap, at, next) && get32(snap, at, count) &&
        static_cast<std::int32_t>(partition) == partition_) {
      catalog c;
      std::vector<std::string> records;
      bool ok = true;
      for (std::uint32_t i = 0; i < count && ok; ++i) {
        std::uint32_t len = 0;
        ok = get32(snap, at, len) && at + len <= body;
        if (!ok)
          break;
        std::string rec = snap.substr(at, len);
        at += len;
        auto d = events::decode(rec);
        ok = d.ok();
        if (ok) {
          apply(c, d.get());
          records.push_back(std::move(rec));
        }
      }
      if (ok && at == body) {
        catalog_ = std::move(c);
        records_ = std::move(records);
        next_offset_ = static_cast<std::int64_t>(next);
        loaded = true;
      }
    }
  }
  if (!loaded) {
    catalog_ = {};
    records_.clear();
    next_offset_ = 0;
  }
  // The log after the snapshot (the whole partition without one).
  for (;;) {
    auto rr = options_.log->read(partition_, next_offset_, 4096);
    if (!rr.ok())
      throw std::runtime_error("the template registry cannot read partition " +
                               std::to_string(partition_) + " of " + options_.log->describe() +
                               ": " + rr.failure->message);
    if (rr.records.empty())
      break;
    for (auto& rec : rr.records) {
      next_offset_ = rec.offset + 1;
      if (rec.key != key)
        continue;
      auto d = events::decode(rec.value);
      if (!d.ok())
        throw std::runtime_error("record at partition " + std::to_string(rec.partition) +
                                 " offset " + std::to_string(rec.offset) + " of " +
                                 options_.log->describe() + " is not an event (" +
                                 d.failure().message + "); the log is damaged: restore it");
      const auto before = catalog_.sequence;
      apply(catalog_, d.get());
      if (catalog_.sequence != before)
        records_.push_back(std::move(rec.value));
    }
  }
  write_snapshot();
}

void template_registry::write_snapshot() {
  std::string out(k_snapshot_magic, sizeof k_snapshot_magic);
  {
    std::lock_guard<std::mutex> g(mu_);
    put32(out, static_cast<std::uint32_t>(partition_));
    put64(out, static_cast<std::uint64_t>(next_offset_));
    put32(out, static_cast<std::uint32_t>(records_.size()));
    for (const auto& r : records_) {
      put32(out, static_cast<std::uint32_t>(r.size()));
      out += r;
    }
  }
  put32(out, crc32c(out.data(), out.size()));
  write_file_durably(options_.dir + "/registry.snapshot", out);
}

result<void> template_registry::emit(const template_state& t, const std::string& tenant,
                                     const std::string& principal,
                                     std::vector<events::template_change> changes) {
  std::lock_guard<std::mutex> w(write_mu_);
  catalog next;
  {
    std::lock_guard<std::mutex> g(mu_);
    next.sequence = catalog_.sequence;
  }
  std::vector<events::event> evs;
  std::vector<events::log_record> batch;
  const auto at = now();
  for (auto& c : changes) {
    evs.push_back(next_event(next, t, tenant, principal, at, std::move(c)));
    next.sequence = evs.back().sequence;
    batch.push_back({std::string(events::template_stream_key), events::encode(evs.back())});
  }
  auto backoff = std::chrono::milliseconds(50);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    auto r = options_.log->append(batch).get();
    if (r.ok()) {
      std::lock_guard<std::mutex> g(mu_);
      for (std::size_t i = 0; i < evs.size(); ++i) {
        apply(catalog_, evs[i]);
        records_.push_back(batch[i].value);
        next_offset_ = std::max(next_offset_, r.positions[i].offset + 1);
      }
      break;
    }
    if (!r.maybe_stored)
      return make_error(errc::unavailable, "the event log refused template " + t.name +
                                             "'s events (" + r.failure->message +
                                             "); nothing was changed: try again");
    // Its fate is unknown: the same events again (a duplicate is dropped by its sequence
    // number) until the log takes them; their sequence numbers are never given to others.
    if (std::chrono::steady_clock::now() > give_up)
      throw std::runtime_error("the event log did not settle template " + t.name +
                               "'s events within a minute (" + r.failure->message +
                               "); restart sandboxd to settle them from the log");
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
  }
  write_snapshot();
  return {};
}

void template_registry::note_use(const std::string& sandbox_id, const std::string& template_id,
                                 bool in_use) {
  std::lock_guard<std::mutex> g(mu_);
  if (in_use) {
    uses_[template_id].insert(sandbox_id);
    sandbox_template_[sandbox_id] = template_id;
  } else {
    auto it = uses_.find(template_id);
    if (it != uses_.end()) {
      it->second.erase(sandbox_id);
      if (it->second.empty())
        uses_.erase(it);
    }
    sandbox_template_.erase(sandbox_id);
  }
}

void template_registry::release(const std::string& id) {
  std::lock_guard<std::mutex> g(mu_);
  if (auto it = holds_.find(id); it != holds_.end() && --it->second <= 0)
    holds_.erase(it);
}

std::vector<std::string> template_registry::users_of(const std::string& id) const {
  std::lock_guard<std::mutex> g(mu_);
  auto it = uses_.find(id);
  if (it == uses_.end())
    return {};
  return {it->second.begin(), it->second.end()};
}

catalog template_registry::snapshot() const {
  std::lock_guard<std::mutex> g(mu_);
  return catalog_;
}

std::vector<template_state> template_registry::list(const asker& who) const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<template_state> out;
  for (const auto* t : visible(catalog_, who))
    out.push_back(*t);
  return out;
}

result<template_state> template_registry::get(const asker& who, const std::string& name) const {
  std::lock_guard<std::mutex> g(mu_);
  if (const auto* t = find(catalog_, who, name))
    return *t;
  return make_error(errc::not_found, "template " + name + " does not exist; use one of: " +
                                       usable_names(catalog_, who));
}

result<std::shared_ptr<template_hold>>
template_registry::lookup(const asker& who, const std::string& name, int attempt) {
  if (auto n = runtime::check_template_name(name); !n)
    return n.err();
  std::lock_guard<std::mutex> g(mu_);
  const template_state* t = find(catalog_, who, name);
  if (t && t->status == template_status::ready && !deleting_.count(t->id)) {
    ++holds_[t->id];
    return std::make_shared<template_hold>(this, t->id, ref_of(*t));
  }
  const stock_definition* stock = find_stock(name);
  const bool own = t && t->scope == events::template_scope::tenant;
  if (t && t->status == template_status::building && !stock)
    return make_error(errc::conflict, "template " + name +
                                        " is still being made; wait until it is ready "
                                        "(sandboxctl template show " +
                                        name + ")");
  if (t && t->status == template_status::failed && (!stock || own))
    return make_error(errc::unavailable,
                      "template " + name + " failed to build (" +
                        (t->failure ? t->failure->message : std::string("no reason")) +
                        "); build it again or delete it");
  if (!stock || own || attempt > 0)
    return make_error(errc::not_found, "template " + name + " does not exist; use one of: " +
                                         usable_names(catalog_, who));
  return std::shared_ptr<template_hold>(); // a stock template still to be built
}

result<std::shared_ptr<template_hold>> template_registry::acquire_ready(const asker& who,
                                                                        const std::string& name) {
  return lookup(who, name, 0);
}

result<std::shared_ptr<template_hold>> template_registry::acquire(const asker& who,
                                                                  const std::string& name,
                                                                  const progress_sink& progress) {
  for (int attempt = 0;; ++attempt) {
    auto held = lookup(who, name, attempt);
    if (!held || held.value())
      return held;
    // A stock template that is not built: built now, for every caller that asks meanwhile.
    auto built = stock_for(who, *find_stock(name), progress);
    if (!built)
      return built.err();
  }
}

result<template_state> template_registry::stock_for(const asker& who, const stock_definition& d,
                                                    const progress_sink& progress) {
  std::shared_ptr<stock_job> job;
  bool mine = false;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (auto f = stock_failures_.find(d.name);
        f != stock_failures_.end() && now() - f->second.first < k_stock_retry_after)
      return make_error(f->second.second.code,
                        f->second.second.message + " (the last try was less than a minute ago)");
    auto& slot = stock_jobs_[d.name];
    if (!slot) {
      slot = std::make_shared<stock_job>();
      mine = true;
    }
    job = slot;
  }
  if (!mine) {
    std::unique_lock<std::mutex> l(job->mu);
    job->sinks.push_back(progress);
    if (progress && !job->last.phase.empty())
      progress(job->last);
    job->cv.wait(l, [&] { return job->finished; });
    return *job->outcome;
  }
  {
    std::lock_guard<std::mutex> l(job->mu);
    job->sinks.push_back(progress);
  }
  asker system = who;
  system.principal = "system";
  system.admin = true;
  result<template_state> r = make_error(errc::internal, "stock build did not run");
  try {
    r = run_stock_build(system, d, [&](const template_progress& p) { job->report(p); });
  } catch (const std::exception& e) {
    r = make_error(errc::internal, "building template " + d.name + " failed: " + e.what());
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    stock_jobs_.erase(d.name);
    if (!r)
      stock_failures_[d.name] = {now(), r.err()};
    else
      stock_failures_.erase(d.name);
  }
  {
    std::lock_guard<std::mutex> l(job->mu);
    job->finished = true;
    job->outcome = r;
  }
  job->cv.notify_all();
  return r;
}

result<template_state> template_registry::build_stock(const asker& who, const std::string& name,
                                                      const progress_sink& progress) {
  const stock_definition* d = find_stock(name);
  if (!d)
    return make_error(errc::not_found, "there is no stock template " + name +
                                         "; the stock templates are base, debian, python, node");
  if (!who.admin) {
    // What the tenant's first create of `name` would do, ahead of it (so that the create's
    // caller can show the build): the stock template built now if it is not yet (a failure
    // less than a minute old is answered as it is), or the template the name stands for.
    template_state t;
    {
      auto held = acquire(who, name, progress);
      if (!held)
        return held.err();
      std::lock_guard<std::mutex> g(mu_);
      t = catalog_.by_id.at(held.value()->ref().id);
    }
    return t;
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    if (const auto* t = find(catalog_, {who.tenant, who.principal, true}, name);
        t && t->scope == events::template_scope::global && t->status == template_status::ready)
      return *t;
    stock_failures_.erase(name); // asked for explicitly: try now
  }
  return stock_for(who, *d, progress);
}

void template_registry::pin(const std::string& sha256) {
  std::lock_guard<std::mutex> g(mu_);
  pins_.insert(sha256);
}

void template_registry::unpin(const std::string& sha256) {
  std::lock_guard<std::mutex> g(mu_);
  if (auto it = pins_.find(sha256); it != pins_.end())
    pins_.erase(it);
}

runtime::committed_layer
template_registry::commit_pinned(const std::function<runtime::committed_layer()>& commit,
                                 std::vector<std::string>& pinned) {
  std::lock_guard<std::mutex> gc(gc_mu_);
  auto layer = commit();
  pin(layer.summary.sha256);
  pinned.push_back(layer.summary.sha256);
  return layer;
}

result<template_state> template_registry::run_stock_build(const asker& who,
                                                          const stock_definition& d,
                                                          const progress_sink& progress) {
  std::lock_guard<std::mutex> one_at_a_time(stock_mu_);
  {
    std::lock_guard<std::mutex> g(mu_);
    if (const auto* t = find(catalog_, who, d.name);
        t && t->scope == events::template_scope::global && t->status == template_status::ready)
      return *t; // built meanwhile
  }
  // The parent first (python and node stand on debian's layer).
  std::optional<template_state> parent;
  if (!d.parent.empty()) {
    const stock_definition* pd = find_stock(d.parent);
    std::optional<template_state> ready;
    {
      std::lock_guard<std::mutex> g(mu_);
      if (const auto* t = find(catalog_, who, d.parent);
          t && t->scope == events::template_scope::global && t->status == template_status::ready)
        ready = *t;
    }
    if (!ready) {
      if (progress)
        progress({"template " + d.name + " needs template " + d.parent + " first", 0, ""});
      stock_mu_.unlock(); // the parent's build takes it itself
      auto p = stock_for(who, *pd, progress);
      stock_mu_.lock();
      if (!p)
        return make_error(p.code(), "template " + d.name + " needs template " + d.parent + ": " +
                                      p.err().message);
      ready = p.value();
    }
    parent = ready;
  }

  template_state t;
  t.id = new_template_id();
  t.name = d.name;
  t.scope = events::template_scope::global;
  events::template_created created;
  created.source = events::template_source::stock;
  created.description = d.description;
  if (!d.packages.empty())
    created.description += " (" + options_.stock.suite + ", mmdebstrap --variant=minbase)";
  created.input_sha256 =
    from_hex(d.packages.empty() ? sha256_hex("stock base") : stock_key(d, options_.stock));
  if (parent)
    created.parent_id = parent->id;
  if (auto m = templates::may_make(snapshot(), who, t.scope, t.name); !m)
    return m.err();
  if (auto e = emit(t, who.tenant, who.principal, {created}); !e)
    return e.err();

  std::vector<events::template_layer> layers;
  std::vector<std::string> pinned;
  auto unpin_all = [&] {
    for (const auto& p : pinned)
      unpin(p);
  };
  // Records a layer: pinned (against collection) until the event that names it is durable.
  auto add_layer = [&](const made_layer& m, const std::string& origin) -> result<void> {
    events::template_layer_added a;
    a.index = static_cast<std::uint32_t>(layers.size());
    a.sha256 = from_hex(m.layer.summary.sha256);
    a.bytes = m.layer.bytes;
    a.entries = m.layer.summary.entries;
    a.origin = origin;
    a.reused = m.layer.reused;
    layers.push_back({a.sha256, a.bytes});
    return emit(t, who.tenant, who.principal, {a});
  };
  const commit_guard guard = [&](const std::function<runtime::committed_layer()>& commit) {
    return commit_pinned(commit, pinned);
  };
  auto fail = [&](const error& err) -> result<template_state> {
    emit(t, who.tenant, who.principal, {events::template_failed{err}});
    unpin_all();
    return err;
  };

  auto step = [&]() -> result<void> {
    if (parent && parent->ready) {
      for (const auto& l : parent->ready->layers) {
        if (&l == &parent->ready->layers.back())
          break; // the parent's sandboxd layer: this template puts it on top again
        made_layer m;
        m.layer.summary.sha256 = layer_hex(l.sha256);
        m.layer.bytes = l.bytes;
        m.layer.reused = true;
        {
          std::lock_guard<std::mutex> gc(gc_mu_);
          if (!options_.layers->has(m.layer.summary.sha256))
            return make_error(errc::internal, "layer " + m.layer.summary.sha256 + " of template " +
                                                d.parent + " is missing from the layer store");
          pin(m.layer.summary.sha256);
          pinned.push_back(m.layer.summary.sha256);
        }
        if (auto r = add_layer(m, "template " + d.parent); !r)
          return r;
      }
    }
    if (d.name == "base") {
      if (progress)
        progress({"making template base from /bin/busybox", 0.5, ""});
      auto m = base_layer(*options_.layers, guard);
      if (!m)
        return m.err();
      return add_layer(m.value(), "busybox");
    }
    bool cached = false;
    auto tarball = stock_tarball(
      d, options_.stock,
      [&](std::string_view phase, double f, std::string_view out) {
        if (progress)
          progress({std::string(phase), f, std::string(out)});
      },
      cached);
    if (!tarball)
      return tarball.err();
    if (progress)
      progress(
        {std::string(cached ? "unpacking the cached " : "unpacking ") + d.name + " root filesystem",
         0.92, ""});
    int fd = ::open(tarball->c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return make_error(errc::internal,
                        "cannot open " + tarball.value() + ": " + std::strerror(errno));
    runtime::unique_fd hold(fd);
    auto m = parent && !layers.empty()
               ? layer_above(*options_.layers, fd_source(fd), to_hex(layers.back().sha256),
                             options_.limits, guard)
               : layer_from_tar(*options_.layers, fd_source(fd), options_.limits,
                                whiteouts::literal, guard);
    if (options_.stock.cache_dir.empty())
      ::unlink(tarball->c_str());
    if (!m)
      return m.err();
    if (auto r = add_layer(m.value(), cached ? "stock (cached tarball)" : "stock (mmdebstrap)"); !r)
      return r;
    auto top = sandboxd_layer(*options_.layers, guard);
    if (!top)
      return top.err();
    return add_layer(top.value(), "sandboxd");
  };
  if (auto r = step(); !r)
    return fail(r.err());

  events::template_ready ready;
  ready.layers = layers;
  ready.env = env_of(d.env);
  ready.command = d.command;
  for (const auto& l : layers)
    ready.total_bytes += l.bytes;
  ready.own_bytes = ready.total_bytes; // built on no template
  ready.digest =
    template_digest(ready.layers, ready.env, ready.working_directory, ready.user, ready.command);
  if (auto e = emit(t, who.tenant, who.principal, {ready}); !e) {
    unpin_all();
    return e.err();
  }
  unpin_all();
  if (progress)
    progress({"template " + d.name + " is ready", 1.0, ""});
  std::lock_guard<std::mutex> g(mu_);
  return catalog_.by_id.at(t.id);
}

result<template_state> template_registry::remove(const asker& who, const std::string& name) {
  template_state t;
  {
    std::lock_guard<std::mutex> g(mu_);
    const template_state* found = find(catalog_, who, name);
    if (!found)
      return make_error(errc::not_found, "template " + name + " does not exist; use one of: " +
                                           usable_names(catalog_, who));
    std::vector<std::string> users;
    if (auto it = uses_.find(found->id); it != uses_.end())
      users.assign(it->second.begin(), it->second.end());
    if (auto h = holds_.find(found->id); h != holds_.end())
      users.push_back(std::to_string(h->second) + " being created");
    if (auto m = may_delete(catalog_, who, *found, users); !m)
      return m.err();
    if (deleting_.count(found->id))
      return make_error(errc::conflict, "template " + name + " is being deleted already");
    deleting_.insert(found->id);
    t = *found;
  }
  auto e = emit(t, who.tenant, who.principal, {events::template_deleted{"user"}});
  {
    std::lock_guard<std::mutex> g(mu_);
    deleting_.erase(t.id);
  }
  if (!e)
    return e.err();
  collect_layers();
  std::lock_guard<std::mutex> g(mu_);
  return catalog_.by_id.at(t.id);
}

std::size_t template_registry::collect_layers() {
  std::lock_guard<std::mutex> gc(gc_mu_);
  std::set<std::string> held;
  {
    std::lock_guard<std::mutex> g(mu_);
    held = held_layers(catalog_);
    held.insert(pins_.begin(), pins_.end());
    held.merge(cache_kept_layers(catalog_, options_.build.cache_bytes));
  }
  std::size_t removed = 0;
  for (const auto& l : options_.layers->list())
    if (!held.count(l)) {
      options_.layers->remove(l);
      ++removed;
    }
  return removed;
}

result<template_state> template_registry::import_archive(const asker& who,
                                                         const import_request& request,
                                                         chunk_source source,
                                                         const progress_sink& progress) {
  const bool image = request.format == archive_format::image;
  template_state t;
  t.id = new_template_id();
  t.name = request.name;
  t.scope = request.scope;
  events::template_created created;
  created.source = events::template_source::import_archive;
  created.description = std::string(image ? "image archive" : "root filesystem archive") +
                        (request.description.empty() ? "" : " " + request.description);
  // The name and the tenant's quota are checked before anything is logged, and the check and
  // the `created` it allows are one step for every import (the count is exact).
  const bool own = request.scope == events::template_scope::tenant;
  import_limits limits = options_.limits;
  template_quota quota;
  bool quota_binds = false; // the bytes quota, not the import limit, bounds the unpacking
  {
    std::lock_guard<std::mutex> one_at_a_time(make_mu_);
    if (auto m = may_make(who, request.scope, request.name); !m)
      return m.err();
    if (auto e = emit(t, who.tenant, who.principal, {created}); !e)
      return e.err();
    if (own) {
      std::lock_guard<std::mutex> g(mu_);
      quota = options_.quota;
      const auto left = bytes_left(catalog_, who.tenant, quota);
      quota_binds = left < limits.max_bytes;
      limits.max_bytes = std::min(limits.max_bytes, left);
    }
  }
  // A layer writer stopped by the bytes quota says "more than <limit> bytes": that is the quota.
  auto quota_error = [&](const error& e) -> error {
    const std::string limit = "more than " + std::to_string(limits.max_bytes) + " bytes";
    if (!quota_binds || e.code != errc::too_large || e.message.size() < limit.size() ||
        e.message.compare(e.message.size() - limit.size(), limit.size(), limit) != 0)
      return e;
    std::lock_guard<std::mutex> g(mu_);
    const auto held =
      usage_of(catalog_, who.tenant).bytes - template_bytes(catalog_.by_id.at(t.id));
    return over_bytes_quota(t.name, quota, held);
  };
  std::vector<events::template_layer> layers;
  std::vector<std::string> pinned;
  auto unpin_all = [&] {
    for (const auto& p : pinned)
      unpin(p);
  };
  const commit_guard guard = [&](const std::function<runtime::committed_layer()>& commit) {
    return commit_pinned(commit, pinned);
  };
  auto add = [&](const made_layer& m, const std::string& origin) -> result<void> {
    events::template_layer_added a;
    a.index = static_cast<std::uint32_t>(layers.size());
    a.sha256 = from_hex(m.layer.summary.sha256);
    a.bytes = m.layer.bytes;
    a.entries = m.layer.summary.entries;
    a.origin = origin;
    a.reused = m.layer.reused;
    layers.push_back({a.sha256, a.bytes});
    return emit(t, who.tenant, who.principal, {a});
  };
  // One archive into a layer, pinned against a collection until the template is settled.
  auto unpack = [&](chunk_source from, const import_limits& bounds, whiteouts mode,
                    const std::string& origin) -> result<write_report> {
    auto m = layer_from_tar(*options_.layers, std::move(from), bounds, mode, guard);
    if (!m)
      return quota_error(m.err());
    if (auto a = add(m.value(), origin); !a)
      return a.err();
    return m.value().report;
  };
  image_plan plan;
  // An image: its files kept until the whole archive is in (its index may come last), each
  // layer checked against its digest, then applied lowest first with OCI whiteouts as
  // overlayfs's; the limits hold for all layers together.
  auto run_image = [&]() -> result<void> {
    if (progress)
      progress({"receiving the image archive", -1, ""});
    auto spool =
      image_spool::read(std::move(source), options_.dir + "/import-" + t.id, options_.limits);
    if (!spool)
      return spool.err();
    auto p = plan_image([&](const std::string& path) { return spool.value()->small_file(path); });
    if (!p)
      return p.err();
    plan = std::move(p).value();
    for (const auto& c : plan.checked)
      if (auto fd = spool.value()->open_checked(c.path, c.sha256); !fd)
        return fd.err();
    import_limits left = limits;
    for (std::size_t i = 0; i < plan.layers.size(); ++i) {
      const auto& l = plan.layers[i];
      if (progress)
        progress(
          {"unpacking layer " + std::to_string(i + 1) + " of " + std::to_string(plan.layers.size()),
           static_cast<double>(i) / static_cast<double>(plan.layers.size()), ""});
      auto fd = spool.value()->open_checked(l.path, l.sha256);
      if (!fd)
        return fd.err();
      auto r = unpack(fd_source(fd.value().get()), left, whiteouts::overlay,
                      "image layer sha256:" + l.sha256);
      if (!r)
        return r.err();
      left.max_bytes -= std::min(left.max_bytes, r.value().bytes);
      left.max_entries -= std::min(left.max_entries, r.value().entries);
    }
    return {};
  };
  auto run = [&]() -> result<void> {
    if (image) {
      if (auto r = run_image(); !r)
        return r;
    } else {
      if (progress)
        progress({"unpacking the archive", -1, ""});
      if (auto r = unpack(std::move(source), limits, whiteouts::literal, "archive"); !r)
        return r.err();
    }
    auto top = sandboxd_layer(*options_.layers, guard);
    if (!top)
      return top.err();
    return add(top.value(), "sandboxd");
  };
  if (auto r = run(); !r) {
    emit(t, who.tenant, who.principal, {events::template_failed{r.err()}});
    unpin_all();
    collect_layers();
    return r.err();
  }
  events::template_ready ready;
  ready.layers = layers;
  ready.env = env_of({{"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}});
  ready.command = {"/bin/sh"};
  if (image) { // the image's own defaults, PATH included when it sets one
    if (!plan.env.empty())
      ready.env = env_of(plan.env);
    ready.working_directory = plan.working_directory;
    ready.user = plan.user;
    if (!plan.command.empty())
      ready.command = plan.command;
  }
  for (const auto& l : layers)
    ready.total_bytes += l.bytes;
  ready.own_bytes = ready.total_bytes; // built on no template
  ready.digest =
    template_digest(ready.layers, ready.env, ready.working_directory, ready.user, ready.command);
  result<void> e;
  std::optional<error> over;
  {
    // What the layers take in the store (symlinks and layers stored already count too) is
    // known only now: the quota holds for it, checked with the `ready` it allows.
    std::lock_guard<std::mutex> one_at_a_time(make_mu_);
    if (own && quota.bytes != 0) {
      std::lock_guard<std::mutex> g(mu_);
      const auto held =
        usage_of(catalog_, who.tenant).bytes - template_bytes(catalog_.by_id.at(t.id));
      if (held + ready.total_bytes > quota.bytes)
        over = over_bytes_quota(t.name, quota, held);
    }
    if (!over)
      e = emit(t, who.tenant, who.principal, {ready});
  }
  if (over) {
    emit(t, who.tenant, who.principal, {events::template_failed{*over}});
    unpin_all();
    collect_layers();
    return *over;
  }
  unpin_all();
  std::lock_guard<std::mutex> g(mu_);
  return catalog_.by_id.at(t.id);
}

result<void> template_registry::may_make(const asker& who, events::template_scope scope,
                                         const std::string& name) const {
  std::lock_guard<std::mutex> g(mu_);
  if (auto m = templates::may_make(catalog_, who, scope, name); !m)
    return m;
  if (scope == events::template_scope::tenant)
    return may_add(catalog_, who.tenant, options_.quota);
  return {};
}

void template_registry::set_quota(const template_quota& q) {
  std::lock_guard<std::mutex> g(mu_);
  options_.quota = q;
}

} // namespace sandboxd::templates
