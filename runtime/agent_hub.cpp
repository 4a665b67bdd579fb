#include "runtime/agent_hub.hpp"

#include "runtime/unique_fd.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <system_error>
#include <thread>
#include <vector>

namespace sandboxd::runtime {

using clock_type = agent_session::clock;

namespace {

constexpr std::size_t k_read_slice = 1u << 20;   // per connection per turn of the thread
constexpr std::size_t k_wire_backlog = 8u << 20; // unsent to an agent that does not read
constexpr auto k_tick = std::chrono::milliseconds(100);
constexpr auto k_connect_window = std::chrono::seconds(10);

enum class role : std::uint8_t { wake, listener, connection };

[[noreturn]] void fault(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

std::string seconds_text(std::chrono::milliseconds d) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f s", static_cast<double>(d.count()) / 1000.0);
  return b;
}

} // namespace

struct stream_box {
  std::deque<stream_event> events;
  std::deque<std::uint32_t> signal_answers;
  bool started = false;
  bool finished = false; // exited or failed was delivered
  bool abandoned = false;
  stream_end end = stream_end::none;
  std::string reason;
};

struct connection {
  connection(unique_fd f, std::uint64_t t, const agent_session::limits& l)
      : fd(std::move(f)), token(t), session(l, clock_type::now()) {}
  unique_fd fd;
  std::uint64_t token;
  frame_reader reader;
  agent_session session;
  std::string wire;
  std::size_t sent = 0;
  bool want_out = false;
  std::optional<clock_type::time_point> partial_since;
};

struct agent_link {
  agent_hub::impl* hub = nullptr;
  std::string id;
  std::mutex mu;
  std::condition_variable cv;
  unique_fd listener;
  std::uint64_t listener_token = 0;
  std::unique_ptr<connection> active, pending;
  std::map<std::uint32_t, std::shared_ptr<stream_box>> streams; // routed: on `active`
  std::optional<std::string> failed;
  bool dropped = false;
  bool frozen = false;
  std::deque<clock_type::time_point> connects;
};

struct agent_hub::impl {
  explicit impl(agent_hub_options& o) : opt(o) {}
  agent_hub_options& opt;
  unique_fd ep, wake;
  std::mutex mu; // links, tokens
  std::map<std::string, std::shared_ptr<agent_link>> links;
  std::map<std::uint64_t, std::pair<std::weak_ptr<agent_link>, role>> tokens;
  std::uint64_t next_token = 1;
  std::mutex failures_mu;
  std::vector<std::pair<std::string, std::string>> failures;
  std::atomic<bool> stopping{false};
  std::thread thread;

  std::uint64_t add_fd(const std::shared_ptr<agent_link>& l, int fd, role r) {
    std::uint64_t t;
    {
      std::lock_guard g(mu);
      t = next_token++;
      tokens[t] = {l, r};
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = t;
    if (::epoll_ctl(ep.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
      std::lock_guard g(mu);
      tokens.erase(t);
      fault("epoll_ctl add");
    }
    return t;
  }

  void remove_fd(std::uint64_t token, int fd) {
    ::epoll_ctl(ep.get(), EPOLL_CTL_DEL, fd, nullptr);
    std::lock_guard g(mu);
    tokens.erase(token);
  }

  // The link's lock is held by every function below that takes an agent_link&.
  void close_conn(std::unique_ptr<connection>& c) {
    if (!c)
      return;
    remove_fd(c->token, c->fd.get());
    c.reset();
  }

  void end_streams(agent_link& l, stream_end how, const std::string& why) {
    for (auto& [id, box] : l.streams) {
      if (box->end == stream_end::none) {
        box->end = how;
        box->reason = why;
      }
    }
    l.streams.clear();
    l.cv.notify_all();
  }

  void fail(agent_link& l, const std::string& why) {
    if (l.failed || l.dropped)
      return;
    const std::string reason = "the agent of sandbox " + l.id + " " + why;
    l.failed = reason;
    close_conn(l.active);
    close_conn(l.pending);
    if (l.listener) {
      remove_fd(l.listener_token, l.listener.get());
      l.listener.reset();
    }
    end_streams(l, stream_end::violation, reason);
    {
      std::lock_guard g(failures_mu);
      failures.emplace_back(l.id, reason);
    }
    poke();
  }

  void poke() {
    std::uint64_t one = 1;
    (void)!::write(wake.get(), &one, sizeof one);
  }

  void want_out(connection& c, bool on) {
    if (c.want_out == on)
      return;
    c.want_out = on;
    epoll_event ev{};
    ev.events = EPOLLIN | (on ? EPOLLOUT : 0u);
    ev.data.u64 = c.token;
    ::epoll_ctl(ep.get(), EPOLL_CTL_MOD, c.fd.get(), &ev);
  }

  // Sends what the connection has queued, without waiting.
  void flush(agent_link& l, std::unique_ptr<connection>& c) {
    if (!c)
      return;
    while (c->sent < c->wire.size()) {
      ssize_t n = ::send(c->fd.get(), c->wire.data() + c->sent, c->wire.size() - c->sent,
                         MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n > 0) {
        c->sent += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && errno == EAGAIN)
        break;
      // The peer is gone; reading will find it.
      c->wire.clear();
      c->sent = 0;
      return;
    }
    if (c->sent == c->wire.size()) {
      c->wire.clear();
      c->sent = 0;
      want_out(*c, false);
      return;
    }
    if (c->wire.size() - c->sent > k_wire_backlog) {
      fail(l, "stopped reading what the host sends (" +
                std::to_string((c->wire.size() - c->sent) >> 20) + " MiB unread)");
      return;
    }
    if (c->sent > (1u << 20)) {
      c->wire.erase(0, c->sent);
      c->sent = 0;
    }
    want_out(*c, true);
  }

  void dispatch(agent_link& l, agent_session::events& evs) {
    for (auto& [id, e] : evs) {
      auto it = l.streams.find(id);
      if (it == l.streams.end())
        continue;
      auto& box = *it->second;
      switch (e.what) {
      case stream_event::type::started:
        box.started = true;
        box.events.push_back(std::move(e));
        break;
      case stream_event::type::signalled:
        box.signal_answers.push_back(e.value);
        break;
      case stream_event::type::stdin_credit:
        break; // writers wait on the session's room
      case stream_event::type::out:
      case stream_event::type::err:
        if (box.abandoned) {
          l.active->session.grant(id, static_cast<std::uint32_t>(e.data.size()), l.active->wire);
          break;
        }
        box.events.push_back(std::move(e));
        break;
      case stream_event::type::exited:
      case stream_event::type::failed:
        box.finished = true;
        box.events.push_back(std::move(e));
        l.streams.erase(it);
        break;
      }
    }
    evs.clear();
    l.cv.notify_all();
  }

  // A pending connection said hello: it is the agent now.
  void promote(agent_link& l) {
    if (l.active) {
      put_frame(l.active->wire, SBA_REPLACED, 0, {});
      flush(l, l.active);
      close_conn(l.active);
      end_streams(l, stream_end::replaced,
                  "the agent of sandbox " + l.id +
                    " was replaced while the exec ran (a process of the sandbox connected to "
                    "its socket); the exec's outcome is unknown");
    }
    l.active = std::move(l.pending);
    l.active->session.welcome(l.active->wire);
    flush(l, l.active);
    l.cv.notify_all();
  }

  void on_listener(const std::shared_ptr<agent_link>& lp) {
    agent_link& l = *lp;
    std::lock_guard g(l.mu);
    while (l.listener) {
      int fd = ::accept4(l.listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0)
        return;
      unique_fd owned(fd);
      const auto now = clock_type::now();
      l.connects.push_back(now);
      while (!l.connects.empty() && l.connects.front() < now - k_connect_window)
        l.connects.pop_front();
      if (l.connects.size() > opt.max_connects) {
        fail(l, "opened more than " + std::to_string(opt.max_connects) +
                  " connections to its socket within 10 s");
        return;
      }
      close_conn(l.pending);
      const std::uint64_t t = add_fd(lp, owned.get(), role::connection);
      l.pending = std::make_unique<connection>(std::move(owned), t, opt.limits);
    }
  }

  void on_connection(const std::shared_ptr<agent_link>& lp, std::uint64_t token,
                     std::uint32_t events) {
    agent_link& l = *lp;
    std::lock_guard g(l.mu);
    std::unique_ptr<connection>* cp = nullptr;
    if (l.active && l.active->token == token)
      cp = &l.active;
    else if (l.pending && l.pending->token == token)
      cp = &l.pending;
    if (cp == nullptr)
      return; // closed meanwhile
    if (events & EPOLLOUT)
      flush(l, *cp);
    if (!*cp || !(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
      return;
    std::vector<agent_frame> frames;
    agent_session::events evs;
    for (std::size_t taken = 0; taken < k_read_slice && *cp;) {
      connection& c = **cp;
      auto room = c.reader.space();
      ssize_t n = ::read(c.fd.get(), room.data(), room.size());
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && errno == EAGAIN)
        break;
      if (n <= 0) {
        closed(l, *cp);
        return;
      }
      taken += static_cast<std::size_t>(n);
      if (auto bad = c.reader.commit(static_cast<std::size_t>(n),
                                     [&](agent_frame&& f) { frames.push_back(std::move(f)); })) {
        fail(l, "broke the protocol: " + *bad);
        return;
      }
      const auto now = clock_type::now();
      for (auto& f : frames) {
        const bool was_ready = c.session.ready();
        if (auto bad = c.session.take(std::move(f), now, evs)) {
          fail(l, "broke the protocol: " + *bad);
          return;
        }
        if (!was_ready && c.session.ready()) {
          promote(l);
          cp = &l.active;
        }
      }
      frames.clear();
      if (cp == &l.active)
        dispatch(l, evs);
      if (*cp) {
        connection& now_c = **cp;
        if (!now_c.reader.mid_frame())
          now_c.partial_since.reset();
        else if (!now_c.partial_since)
          now_c.partial_since = now;
        flush(l, *cp);
      }
    }
  }

  // The peer closed `c`.
  void closed(agent_link& l, std::unique_ptr<connection>& c) {
    if (&c == &l.active && !l.streams.empty()) {
      fail(l,
           "closed its connection while " + std::to_string(l.streams.size()) + " execs ran on it");
      return;
    }
    close_conn(c);
  }

  void tick() {
    std::vector<std::shared_ptr<agent_link>> all;
    {
      std::lock_guard g(mu);
      for (auto& [id, l] : links)
        all.push_back(l);
    }
    const auto now = clock_type::now();
    for (auto& lp : all) {
      agent_link& l = *lp;
      std::lock_guard g(l.mu);
      for (auto* c : {&l.pending, &l.active}) {
        if (!*c)
          continue;
        if (auto late = (*c)->session.overdue(now, (*c)->partial_since)) {
          fail(l, "was late: " + *late);
          break;
        }
        (*c)->session.ping_if_quiet(now, (*c)->wire);
        flush(l, *c);
      }
    }
  }

  void report() {
    std::vector<std::pair<std::string, std::string>> todo;
    {
      std::lock_guard g(failures_mu);
      todo.swap(failures);
    }
    if (opt.on_failure)
      for (auto& [id, why] : todo)
        opt.on_failure(id, why);
  }

  void run() {
    epoll_event evs[64];
    auto last_tick = clock_type::now();
    while (!stopping) {
      int n = ::epoll_wait(ep.get(), evs, 64, static_cast<int>(k_tick.count()));
      for (int i = 0; i < n; ++i) {
        std::shared_ptr<agent_link> l;
        role r = role::wake;
        {
          std::lock_guard g(mu);
          auto it = tokens.find(evs[i].data.u64);
          if (it == tokens.end())
            continue;
          r = it->second.second;
          l = it->second.first.lock();
        }
        if (r == role::wake) {
          std::uint64_t v;
          (void)!::read(wake.get(), &v, sizeof v);
        } else if (l && r == role::listener) {
          on_listener(l);
        } else if (l) {
          on_connection(l, evs[i].data.u64, evs[i].events);
        }
      }
      if (clock_type::now() - last_tick >= k_tick) {
        tick();
        last_tick = clock_type::now();
      }
      report();
    }
  }

  std::shared_ptr<agent_link> find(const std::string& id) {
    std::lock_guard g(mu);
    auto it = links.find(id);
    return it == links.end() ? nullptr : it->second;
  }

  void drop_link(const std::shared_ptr<agent_link>& lp, const std::string& why) {
    agent_link& l = *lp;
    std::lock_guard g(l.mu);
    l.dropped = true;
    close_conn(l.active);
    close_conn(l.pending);
    if (l.listener) {
      remove_fd(l.listener_token, l.listener.get());
      l.listener.reset();
    }
    end_streams(l, stream_end::dropped, why);
  }
};

agent_hub::agent_hub(agent_hub_options options)
    : options_(std::move(options)), impl_(std::make_unique<impl>(options_)) {
  impl_->ep.reset(::epoll_create1(EPOLL_CLOEXEC));
  impl_->wake.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!impl_->ep || !impl_->wake)
    fault("agent hub: epoll or eventfd");
  {
    std::lock_guard g(impl_->mu);
    impl_->tokens[0] = {{}, role::wake};
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 0;
  if (::epoll_ctl(impl_->ep.get(), EPOLL_CTL_ADD, impl_->wake.get(), &ev) != 0)
    fault("agent hub: epoll_ctl");
  impl_->thread = std::thread([this] { impl_->run(); });
}

agent_hub::~agent_hub() {
  impl_->stopping = true;
  impl_->poke();
  impl_->thread.join();
  std::map<std::string, std::shared_ptr<agent_link>> all;
  {
    std::lock_guard g(impl_->mu);
    all.swap(impl_->links);
  }
  for (auto& [id, l] : all)
    impl_->drop_link(l, "sandboxd is stopping");
}

void agent_hub::listen(const std::string& id, int dir_fd, gid_t gid, bool fresh) {
  std::shared_ptr<agent_link> old;
  {
    std::lock_guard g(impl_->mu);
    auto it = impl_->links.find(id);
    if (it != impl_->links.end()) {
      if (!fresh)
        return;
      old = it->second;
      impl_->links.erase(it);
    }
  }
  if (old)
    impl_->drop_link(old, "the sandbox's processes were started afresh");
  if (::unlinkat(dir_fd, SBA_SOCKET_NAME, 0) != 0 && errno != ENOENT)
    fault("unlink the agent socket of sandbox " + id);
  unique_fd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!s)
    fault("agent socket of sandbox " + id);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  // Bound through the directory's handle: no path of the data directory is too long for
  // sun_path, and no name on the way is looked up again.
  std::snprintf(a.sun_path, sizeof a.sun_path, "/proc/self/fd/%d/%s", dir_fd, SBA_SOCKET_NAME);
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    fault("bind the agent socket of sandbox " + id);
  if (::fchownat(dir_fd, SBA_SOCKET_NAME, 0, gid, AT_SYMLINK_NOFOLLOW) != 0 ||
      ::fchmodat(dir_fd, SBA_SOCKET_NAME, 0660, 0) != 0)
    fault("chown the agent socket of sandbox " + id);
  if (::listen(s.get(), 8) != 0)
    fault("listen on the agent socket of sandbox " + id);
  auto l = std::make_shared<agent_link>();
  l->hub = impl_.get();
  l->id = id;
  {
    std::lock_guard g(l->mu);
    l->listener_token = impl_->add_fd(l, s.get(), role::listener);
    l->listener = std::move(s);
  }
  std::lock_guard g(impl_->mu);
  impl_->links[id] = l;
}

bool agent_hub::listening(const std::string& id) {
  return impl_->find(id) != nullptr;
}

void agent_hub::drop(const std::string& id, const std::string& why) {
  std::shared_ptr<agent_link> l;
  {
    std::lock_guard g(impl_->mu);
    auto it = impl_->links.find(id);
    if (it == impl_->links.end())
      return;
    l = it->second;
    impl_->links.erase(it);
  }
  impl_->drop_link(l, why);
}

void agent_hub::freeze(const std::string& id) {
  if (auto l = impl_->find(id)) {
    std::lock_guard g(l->mu);
    l->frozen = true;
    for (auto* c : {&l->active, &l->pending})
      if (*c)
        (*c)->session.freeze(clock_type::now());
  }
}

void agent_hub::thaw(const std::string& id) {
  if (auto l = impl_->find(id)) {
    std::lock_guard g(l->mu);
    l->frozen = false;
    for (auto* c : {&l->active, &l->pending})
      if (*c)
        (*c)->session.thaw(clock_type::now());
  }
}

std::optional<std::string> agent_hub::failure(const std::string& id) {
  if (auto l = impl_->find(id)) {
    std::lock_guard g(l->mu);
    return l->failed;
  }
  return std::nullopt;
}

outcome<agent_stream> agent_hub::open(const std::string& id, agent_spawn spawn,
                                      std::chrono::milliseconds exec_timeout) {
  auto lp = impl_->find(id);
  if (!lp)
    return make_error(errc::unavailable,
                      "sandbox " + id + " has no agent socket; start or resume it first");
  agent_link& l = *lp;
  std::unique_lock g(l.mu);
  const auto until = clock_type::now() + options_.connect_wait;
  l.cv.wait_until(g, until, [&] { return l.active || l.failed || l.dropped; });
  if (l.failed)
    return make_error(errc::internal, *l.failed + "; the sandbox is marked failed: delete it");
  if (l.dropped)
    return make_error(errc::conflict, "sandbox " + id + " was paused or removed meanwhile");
  if (!l.active) {
    if (l.frozen)
      return make_error(errc::conflict, "sandbox " + id + " is paused; resume it before exec");
    impl_->fail(l, "did not connect to its socket within " + seconds_text(options_.connect_wait));
    return make_error(errc::internal, *l.failed + "; the sandbox is marked failed: delete it");
  }
  spawn.window = options_.window;
  auto sid = l.active->session.open(spawn, exec_timeout, options_.backstop, clock_type::now(),
                                    l.active->wire);
  if (!sid)
    return make_error(errc::resource_exhausted,
                      "sandbox " + id + " runs " + std::to_string(options_.limits.max_streams) +
                        " execs already, the most its agent runs at once; wait for one to end");
  auto box = std::make_shared<stream_box>();
  l.streams[*sid] = box;
  impl_->flush(l, l.active);
  return agent_stream(lp, box, *sid);
}

agent_stream::agent_stream(std::shared_ptr<agent_link> link, std::shared_ptr<stream_box> box,
                           std::uint32_t id)
    : link_(std::move(link)), box_(std::move(box)), id_(id) {}

agent_stream::agent_stream(agent_stream&& o) noexcept
    : link_(std::move(o.link_)), box_(std::move(o.box_)), id_(o.id_) {}

agent_stream::~agent_stream() {
  if (!link_)
    return;
  agent_link& l = *link_;
  std::lock_guard g(l.mu);
  if (box_->finished || box_->end != stream_end::none || !l.active)
    return;
  // Given up before its end (the caller is gone): its tree is killed, its output drained.
  box_->abandoned = true;
  box_->events.clear();
  l.active->session.signal(id_, SIGKILL, clock_type::now(), l.active->wire);
  l.hub->flush(l, l.active);
}

agent_stream::next_result agent_stream::next() {
  agent_link& l = *link_;
  std::unique_lock g(l.mu);
  l.cv.wait(g, [&] { return !box_->events.empty() || box_->end != stream_end::none; });
  next_result r;
  if (!box_->events.empty()) {
    r.event = std::move(box_->events.front());
    box_->events.pop_front();
    return r;
  }
  r.end = box_->end;
  r.reason = box_->reason;
  return r;
}

void agent_stream::grant(std::uint32_t bytes) {
  agent_link& l = *link_;
  std::lock_guard g(l.mu);
  if (box_->finished || box_->end != stream_end::none || !l.active)
    return;
  l.active->session.grant(id_, bytes, l.active->wire);
  l.hub->flush(l, l.active);
}

bool agent_stream::write_stdin(std::string_view data) {
  agent_link& l = *link_;
  std::unique_lock g(l.mu);
  while (!data.empty()) {
    auto room = [&]() -> std::uint64_t {
      return l.active && !box_->finished && box_->end == stream_end::none
               ? l.active->session.stdin_room(id_)
               : 0;
    };
    l.cv.wait(g, [&] { return room() > 0 || box_->finished || box_->end != stream_end::none; });
    const std::uint64_t n = room();
    if (n == 0)
      return false;
    const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(n, data.size()));
    l.active->session.send_stdin(id_, data.substr(0, take), l.active->wire);
    l.hub->flush(l, l.active);
    data.remove_prefix(take);
  }
  return true;
}

void agent_stream::end_stdin() {
  agent_link& l = *link_;
  std::lock_guard g(l.mu);
  if (box_->finished || box_->end != stream_end::none || !l.active)
    return;
  l.active->session.end_stdin(id_, l.active->wire);
  l.hub->flush(l, l.active);
}

void agent_stream::resize(std::uint16_t cols, std::uint16_t rows) {
  agent_link& l = *link_;
  std::lock_guard g(l.mu);
  if (box_->finished || box_->end != stream_end::none || !l.active)
    return;
  l.active->session.resize(id_, cols, rows, l.active->wire);
  l.hub->flush(l, l.active);
}

outcome<std::uint32_t> agent_stream::signal(int signal, std::chrono::milliseconds start_wait) {
  agent_link& l = *link_;
  std::unique_lock g(l.mu);
  auto over = [&] { return box_->finished || box_->end != stream_end::none; };
  l.cv.wait_for(g, start_wait, [&] { return box_->started || over(); });
  if (over() || !box_->started || !l.active || !l.active->session.is_open(id_))
    return std::uint32_t{0};
  const std::size_t before = box_->signal_answers.size();
  l.active->session.signal(id_, signal, clock_type::now(), l.active->wire);
  l.hub->flush(l, l.active);
  l.cv.wait(g, [&] { return box_->signal_answers.size() > before || over(); });
  if (box_->signal_answers.empty())
    return std::uint32_t{0};
  const std::uint32_t n = box_->signal_answers.front();
  box_->signal_answers.pop_front();
  return n;
}

} // namespace sandboxd::runtime
