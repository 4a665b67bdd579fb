// The event stream: events (a sandbox's history, or the whole log) and watch (a sandbox's
// events as they happen).
//
// `events ID` reads the sandbox's own stream (watch) up to its last event as of the call;
// a deleted sandbox has no stream any more, so its history comes from the whole log (tail,
// admin scope), filtered by its id. `events` without an id, or with --from-offset, reads the
// whole log.
#include "cli/command_support.hpp"
#include "cli/command_table.hpp"
#include "cli/commands.hpp"
#include "cli/event_view.hpp"
#include "cli/exit_codes.hpp"
#include "cli/value_args.hpp"

#include <map>

namespace sandboxd::cli {
namespace {

struct stream_args {
  std::string id;
  std::uint64_t from_seq = 0;
  std::vector<std::string> from_offsets;
  bool follow = false;
};

// How a stream ended: fine when the callback stopped it, the sandbox was deleted or the log
// was caught up; otherwise the reason is "<code>: <message>".
int ended(context& cx, const result<std::string>& r) {
  if (!r)
    return cx.fail(r.err());
  const auto& why = *r;
  if (why == "stopped" || why == "deleted" || why == "caught up" || why.empty())
    return k_exit_ok;
  const auto colon = why.find(": ");
  errc code = errc::unavailable;
  if (colon != std::string::npos && parse_errc(why.substr(0, colon), code))
    return cx.fail(make_error(code, why.substr(colon + 2)));
  return cx.fail(make_error(errc::unavailable, "the stream ended: " + why));
}

int stream(context& cx, const stream_args& a) {
  std::map<std::int32_t, std::int64_t> from;
  for (const auto& text : a.from_offsets) {
    auto po = parse_partition_offset(text);
    if (!po)
      return cx.usage("--from-offset: " + po.err().message);
    from[po->first] = po->second;
  }
  std::uint64_t shown = 0;
  auto print = [&](const api::streamed_event& e) {
    ++shown;
    if (cx.as_json())
      cx.print(event_json(e));
    else
      cx.out(event_line(e));
  };
  return with_client(cx, [&](api::client& client) {
    if (!a.id.empty() && from.empty()) {
      if (a.follow)
        return ended(cx, client.watch(a.id, a.from_seq, [&](const api::streamed_event& e) {
          print(e);
          return true;
        }));
      auto info = client.get(a.id);
      if (info) {
        const std::uint64_t last = info->sequence;
        if (last < std::max<std::uint64_t>(a.from_seq, 1))
          return k_exit_ok;
        return ended(cx, client.watch(a.id, a.from_seq, [&](const api::streamed_event& e) {
          print(e);
          return e.event.sequence < last;
        }));
      }
      if (info.code() != errc::not_found || !client.who().has_scope("admin"))
        return cx.fail(info.err());
    }
    const int rc = ended(cx, client.tail(from, a.follow, [&](const api::streamed_event& e) {
      if ((a.id.empty() || e.event.sandbox_id == a.id) && e.event.sequence >= a.from_seq)
        print(e);
      return true;
    }));
    if (rc == k_exit_ok && !a.id.empty() && shown == 0 && from.empty())
      return cx.fail(make_error(errc::not_found, "sandbox " + a.id +
                                                   " has no events in the log; check the "
                                                   "sandbox id (sandboxctl list --all)"));
    return rc;
  });
}

void add_events(command_table& t) {
  auto a = std::make_shared<stream_args>();
  auto* c = t.add(
    t.app(), "events", "Print events, one line each: a sandbox's history, or the whole log (admin)",
    "  sandboxctl events sb-0a1b2c3d4e5f\n"
    "  sandboxctl --json events --follow | jq -c 'select(.kind == \"exec_finished\")'\n"
    "  sandboxctl events --from-offset 3:1200",
    [a](context& cx) {
      if (a->id.empty() && a->from_seq != 0)
        return cx.usage("--from-seq needs a sandbox id: sequence numbers are per sandbox");
      return stream(cx, *a);
    });
  c->add_option("id", a->id, "the sandbox (default: every sandbox, admin scope)")->type_name("ID");
  auto* seq = c->add_option("--from-seq", a->from_seq,
                            "from this sequence number of the sandbox (default: its first)")
                ->type_name("N");
  c->add_option("--from-offset", a->from_offsets,
                "from this offset of a log partition (repeatable; others from 0)")
    ->type_name("P:O")
    ->excludes(seq);
  c->add_flag("--follow,-f", a->follow, "keep printing new events as they come (^C ends)");
}

void add_watch(command_table& t) {
  auto a = std::make_shared<stream_args>();
  a->follow = true;
  auto* c =
    t.add(t.app(), "watch",
          "Print a sandbox's events as they happen, until it is deleted (events ID "
          "--follow)",
          "  sandboxctl watch sb-0a1b2c3d4e5f", [a](context& cx) { return stream(cx, *a); });
  c->add_option("id", a->id, "the sandbox's id")->required()->type_name("ID");
  c->add_option("--from-seq", a->from_seq, "from this sequence number (default: its first)")
    ->type_name("N");
}

} // namespace

void add_event_commands(command_table& t) {
  add_events(t);
  add_watch(t);
}

} // namespace sandboxd::cli
