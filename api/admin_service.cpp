// admin_service — the Admin capability (scope "admin"): bills, the audit log and its
// verification from the read models, the read models verified against the log, their status
// and their rebuild; the tail of the whole event stream and one sandbox's history, from the
// log; the actors' states checked against the log (determinism).
#include "api/convert.hpp"
#include "api/determinism_check.hpp"
#include "api/service_context.hpp"
#include "replay/sandbox_history.hpp"

#include <capnp/serialize.h>

#include <cstring>

namespace sandboxd::api {
namespace {

class admin final : public rpc::Admin::Server {
public:
  admin(std::shared_ptr<service_context> ctx, std::shared_ptr<connection_state> conn, identity who)
      : ctx_(std::move(ctx)), conn_(std::move(conn)), who_(std::move(who)) {}

  kj::Promise<void> bill(BillContext context) override {
    return plain_call(*ctx_, conn_, "Admin.bill", [this, context]() mutable {
      auto* store = need_store("bill");
      auto p = context.getParams();
      const auto by = p.getBy() == rpc::BillGrouping::HOUR  ? bill_grouping::hour
                      : p.getBy() == rpc::BillGrouping::DAY ? bill_grouping::day
                                                            : bill_grouping::sandbox;
      return ctx_
        ->on_worker<result<bill_report>>([store, tenant = whole_text(p.getTenant()),
                                          from = p.getFromNs(), to = p.getToNs(),
                                          by] { return store->bill(tenant, from, to, by); })
        .then([context](std::shared_ptr<result<bill_report>> r) mutable {
          auto b = take(std::move(*r));
          auto out = context.getResults().initReport();
          auto lines = out.initLines(static_cast<unsigned>(b.lines.size()));
          for (unsigned i = 0; i < b.lines.size(); ++i) {
            const auto& l = b.lines[i];
            auto o = lines[i];
            o.setTenant(l.tenant);
            o.setSandboxId(l.sandbox_id);
            o.setFromNs(l.from_ns);
            o.setToNs(l.to_ns);
            o.setComputeGibSeconds(l.compute_gib_seconds);
            o.setStorageGibSeconds(l.storage_gib_seconds);
            o.setComputeMicros(l.compute_micros);
            o.setStorageMicros(l.storage_micros);
            auto ids = o.initEvents(static_cast<unsigned>(l.event_ids.size()));
            for (unsigned j = 0; j < l.event_ids.size(); ++j)
              ids.set(j, l.event_ids[j]);
          }
          out.setTotalComputeMicros(b.total_compute_micros);
          out.setTotalStorageMicros(b.total_storage_micros);
          out.setTotalMicros(b.total_micros);
        });
    });
  }

  kj::Promise<void> audit(AuditContext context) override {
    return plain_call(*ctx_, conn_, "Admin.audit", [this, context]() mutable {
      auto* store = need_store("audit");
      auto p = context.getParams().getQuery();
      audit_query q;
      q.tenant = whole_text(p.getTenant());
      q.sandbox_id = whole_text(p.getSandboxId());
      q.from_ns = p.getFromNs();
      q.to_ns = p.getToNs();
      q.page_token = whole_text(p.getPageToken());
      q.limit = p.getLimit();
      return ctx_
        ->on_worker<result<audit_page>>([store, q = std::move(q)] { return store->audit(q); })
        .then([context](std::shared_ptr<result<audit_page>> r) mutable {
          auto page = take(std::move(*r));
          auto results = context.getResults();
          auto rows = results.initRows(static_cast<unsigned>(page.rows.size()));
          for (unsigned i = 0; i < page.rows.size(); ++i) {
            const auto& e = page.rows[i];
            auto o = rows[i];
            o.setTenant(e.tenant);
            o.setPartition(e.partition);
            o.setPosition(e.position);
            o.setEventId(e.event_id);
            o.setSandboxId(e.sandbox_id);
            o.setOccurredAtNs(e.occurred_at_ns);
            o.setPrincipal(e.principal);
            o.setAction(e.action);
            o.setOutcome(e.outcome);
            o.setDetail(e.detail);
            o.setRedacted(e.redacted);
            o.setHash(
              kj::arrayPtr(reinterpret_cast<const kj::byte*>(e.hash.data()), e.hash.size()));
          }
          results.setNextPageToken(page.next_page_token);
        });
    });
  }

  kj::Promise<void> auditVerify(AuditVerifyContext context) override {
    return plain_call(*ctx_, conn_, "Admin.auditVerify", [this, context]() mutable {
      auto* store = need_store("auditVerify");
      return ctx_
        ->on_worker<result<audit_check>>(
          [store, tenant = whole_text(context.getParams().getTenant())] {
            return store->verify(tenant);
          })
        .then([context](std::shared_ptr<result<audit_check>> r) mutable {
          auto c = take(std::move(*r));
          auto results = context.getResults();
          results.setOk(c.problems.empty());
          results.setCheckedRows(c.checked_rows);
          auto out = results.initProblems(static_cast<unsigned>(c.problems.size()));
          for (unsigned i = 0; i < c.problems.size(); ++i) {
            const auto& p = c.problems[i];
            out[i].setTenant(p.tenant);
            out[i].setPartition(p.partition);
            out[i].setPosition(p.position);
            out[i].setEventId(p.event_id);
            out[i].setKind(p.kind);
            out[i].setMessage(p.message);
          }
        });
    });
  }

  kj::Promise<void> tail(TailContext context) override {
    return plain_call(*ctx_, conn_, "Admin.tail", [this, context]() mutable {
      auto p = context.getParams();
      std::map<std::int32_t, std::int64_t> from;
      for (auto po : p.getFrom()) {
        if (po.getPartition() < 0 || po.getPartition() >= ctx_->log->partitions() ||
            po.getOffset() < 0)
          throw_error(errc::invalid_argument, "partition " + std::to_string(po.getPartition()) +
                                                " offset " + std::to_string(po.getOffset()) +
                                                " is not in the log (partitions 0.." +
                                                std::to_string(ctx_->log->partitions() - 1) +
                                                ", offsets from 0); fix the start position");
        from[po.getPartition()] = po.getOffset();
      }
      context.getResults().setHandle(
        start_tail(ctx_, conn_, std::move(from), p.getFollow(), p.getSink()));
      return kj::Promise<void>(kj::READY_NOW);
    });
  }

  kj::Promise<void> history(HistoryContext context) override {
    return plain_call(*ctx_, conn_, "Admin.history", [this, context]() mutable {
      std::string id = whole_text(context.getParams().getSandboxId());
      using found = result<std::vector<replay::history_entry>>;
      return ctx_
        ->on_worker<found>([log = ctx_->log, id]() -> found {
          try {
            auto h = replay::read_history(*log, id);
            if (h.empty())
              return make_error(errc::not_found, "sandbox " + id + " has no events in " +
                                                   log->describe() +
                                                   "; check the sandbox id (sandboxctl list "
                                                   "--all)");
            return h;
          } catch (const std::exception& e) {
            return make_error(errc::internal, e.what());
          }
        })
        .then([context](std::shared_ptr<found> r) mutable {
          auto h = take(std::move(*r));
          auto out = context.getResults().initEvents(static_cast<unsigned>(h.size()));
          std::string bytes;
          for (unsigned i = 0; i < h.size(); ++i) {
            bytes.clear();
            events::encode_to(h[i].event, bytes);
            auto words = kj::heapArray<capnp::word>((bytes.size() + 7) / 8);
            std::memset(words.begin(), 0, words.size() * sizeof(capnp::word));
            std::memcpy(words.begin(), bytes.data(), bytes.size());
            capnp::FlatArrayMessageReader reader(words);
            out[i].setEvent(reader.getRoot<schema::Event>());
            out[i].setPartition(h[i].partition);
            out[i].setOffset(h[i].offset);
          }
        });
    });
  }

  kj::Promise<void> verifyProjection(VerifyProjectionContext context) override {
    return plain_call(*ctx_, conn_, "Admin.verifyProjection", [this, context]() mutable {
      auto* store = need_store("verifyProjection");
      std::string name = whole_text(context.getParams().getName());
      if (name.empty())
        name = "read_models";
      return ctx_
        ->on_worker<result<projection_check>>(
          [store, log = ctx_->log, name] { return store->verify_projection(*log, name); })
        .then([context](std::shared_ptr<result<projection_check>> r) mutable {
          auto c = take(std::move(*r));
          auto results = context.getResults();
          results.setRowsCompared(c.rows_compared);
          auto diffs = results.initDifferences(static_cast<unsigned>(c.differences.size()));
          for (unsigned i = 0; i < c.differences.size(); ++i) {
            const auto& d = c.differences[i];
            diffs[i].setTable(d.table);
            diffs[i].setSide(d.side);
            diffs[i].setRow(d.row);
            auto ids = diffs[i].initEvents(static_cast<unsigned>(d.events.size()));
            for (unsigned j = 0; j < d.events.size(); ++j)
              ids.set(j, d.events[j]);
          }
          auto offsets = results.initOffsets(static_cast<unsigned>(c.offsets.size()));
          for (unsigned i = 0; i < c.offsets.size(); ++i) {
            offsets[i].setPartition(c.offsets[i].first);
            offsets[i].setOffset(c.offsets[i].second);
          }
        });
    });
  }

  kj::Promise<void> projectionStatus(ProjectionStatusContext context) override {
    return plain_call(*ctx_, conn_, "Admin.projectionStatus", [this, context]() mutable {
      auto* store = need_store("projectionStatus");
      using status = result<std::vector<projection_partition>>;
      return ctx_
        ->on_worker<status>([store, log = ctx_->log] { return store->projection_status(*log); })
        .then([context](std::shared_ptr<status> r) mutable {
          auto parts = take(std::move(*r));
          auto out = context.getResults().initPartitions(static_cast<unsigned>(parts.size()));
          for (unsigned i = 0; i < parts.size(); ++i) {
            const auto& p = parts[i];
            out[i].setProjection(p.projection);
            out[i].setPartition(p.partition);
            out[i].setOffset(p.offset);
            out[i].setEndOffset(p.end_offset);
            out[i].setLagEvents(p.lag_events);
            out[i].setLagSeconds(p.lag_seconds);
          }
        });
    });
  }

  kj::Promise<void> rebuildProjection(RebuildProjectionContext context) override {
    return plain_call(*ctx_, conn_, "Admin.rebuildProjection", [this, context]() mutable {
      auto* store = need_store("rebuildProjection");
      std::string name = whole_text(context.getParams().getName());
      if (name.empty())
        name = "read_models";
      return ctx_
        ->on_worker<result<projection_rebuild>>(
          [store, log = ctx_->log, name] { return store->rebuild_projection(*log, name); })
        .then([context](std::shared_ptr<result<projection_rebuild>> r) mutable {
          auto b = take(std::move(*r));
          auto results = context.getResults();
          results.setRowsReplaced(b.rows_replaced);
          auto offsets = results.initOffsets(static_cast<unsigned>(b.offsets.size()));
          for (unsigned i = 0; i < b.offsets.size(); ++i) {
            offsets[i].setPartition(b.offsets[i].first);
            offsets[i].setOffset(b.offsets[i].second);
          }
        });
    });
  }

  kj::Promise<void> checkDeterminism(CheckDeterminismContext context) override {
    return plain_call(*ctx_, conn_, "Admin.checkDeterminism", [this, context]() mutable {
      if (!ctx_->plane)
        throw_error(errc::unavailable, "checkDeterminism needs the node's actors and this "
                                       "server has none; ask a sandboxd node");
      std::string id = whole_text(context.getParams().getSandboxId());
      return ctx_
        ->on_worker<result<determinism_check>>([plane = ctx_->plane, log = ctx_->log, id] {
          return check_determinism(*plane, *log, id);
        })
        .then([context](std::shared_ptr<result<determinism_check>> r) mutable {
          auto c = take(std::move(*r));
          auto results = context.getResults();
          results.setChecked(c.checked);
          auto out = results.initDifferences(static_cast<unsigned>(c.differences.size()));
          for (unsigned i = 0; i < c.differences.size(); ++i) {
            const auto& d = c.differences[i];
            out[i].setSandboxId(d.sandbox_id);
            out[i].setField(d.field);
            out[i].setLive(d.live);
            out[i].setReplayed(d.replayed);
          }
        });
    });
  }

  kj::Promise<void> pools(PoolsContext context) override {
    context.getResults().setPools(make_pools(ctx_, conn_));
    return kj::READY_NOW;
  }

private:
  read_store* need_store(const char* call) {
    if (!ctx_->store)
      throw_error(errc::unavailable, std::string(call) +
                                       " is served from the read models and this sandboxd has "
                                       "none; start it with PostgreSQL");
    return ctx_->store;
  }

  std::shared_ptr<service_context> ctx_;
  std::shared_ptr<connection_state> conn_;
  identity who_;
};

} // namespace

rpc::Admin::Client make_admin(std::shared_ptr<service_context> ctx,
                              std::shared_ptr<connection_state> conn, identity who) {
  return kj::heap<admin>(std::move(ctx), std::move(conn), std::move(who));
}

} // namespace sandboxd::api
