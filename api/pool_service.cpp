// pool_service — the Pools capability (Admin.pools, scope "admin"): the node's warm pools
// listed, started or changed, and ended (docs/pools.md). Changes last until the daemon stops.
#include "api/convert.hpp"
#include "api/service_context.hpp"

namespace sandboxd::api {
namespace {

void fill_settings(rpc::PoolSettings::Builder out, const actors::pool_settings& s) {
  auto k = out.initKey();
  k.setTemplate(s.key.template_name);
  k.setRuntime(events::to_string(s.key.runtime));
  auto l = k.initLimits();
  l.setMemoryMib(s.key.limits.memory_mib);
  l.setCpuMillicores(s.key.limits.cpu_millicores);
  l.setPids(s.key.limits.pids);
  l.setDiskMib(s.key.limits.disk_mib);
  out.setSize(s.size);
  out.setMaximum(s.maximum);
  out.setRefillPerSecond(s.refill_per_second);
}

class pools final : public rpc::Pools::Server {
public:
  pools(std::shared_ptr<service_context> ctx, std::shared_ptr<connection_state> conn)
      : ctx_(std::move(ctx)), conn_(std::move(conn)) {}

  kj::Promise<void> list(ListContext context) override {
    return plain_call(*ctx_, conn_, "Pools.list", [this, context]() mutable {
      auto* plane = need_plane();
      return ctx_->on_worker<std::vector<actors::pool_figures>>([plane] { return plane->pools(); })
        .then([context](std::shared_ptr<std::vector<actors::pool_figures>> all) mutable {
          auto out = context.getResults().initPools(static_cast<unsigned>(all->size()));
          for (unsigned i = 0; i < all->size(); ++i) {
            const auto& f = (*all)[i];
            auto o = out[i];
            o.setKey(f.key);
            fill_settings(o.initSettings(), f.settings);
            o.setReady(f.ready);
            o.setMaking(f.making);
            o.setTarget(f.target);
            o.setHits(f.hits);
            o.setMisses(f.misses);
            o.setMade(f.made);
            o.setFailed(f.failed);
            o.setRetired(f.retired);
            o.setRefillSecondsMean(f.made ? f.refill_seconds_sum / static_cast<double>(f.made)
                                          : 0.0);
            o.setRefillSecondsMax(f.refill_seconds_max);
            auto ids = o.initReadyIds(static_cast<unsigned>(f.ready_ids.size()));
            for (unsigned j = 0; j < f.ready_ids.size(); ++j)
              ids.set(j, f.ready_ids[j]);
            o.setLastError(f.last_error);
          }
        });
    });
  }

  kj::Promise<void> set(SetContext context) override {
    return plain_call(*ctx_, conn_, "Pools.set", [this, context]() mutable -> kj::Promise<void> {
      auto* plane = need_plane();
      auto p = context.getParams().getSettings();
      actors::pool_settings s;
      s.key = take(pool_key_of(p.getKey(), ctx_->options.defaults));
      s.size = p.getSize();
      s.maximum = p.getMaximum();
      s.refill_per_second = p.getRefillPerSecond() == 0 ? 20 : p.getRefillPerSecond();
      if (auto e = plane->set_pool(s))
        throw_error(*e);
      return kj::READY_NOW;
    });
  }

  kj::Promise<void> remove(RemoveContext context) override {
    return plain_call(*ctx_, conn_, "Pools.remove", [this, context]() mutable -> kj::Promise<void> {
      auto* plane = need_plane();
      auto key = take(pool_key_of(context.getParams().getKey(), ctx_->options.defaults));
      context.getResults().setRemoved(plane->remove_pool(key));
      return kj::READY_NOW;
    });
  }

private:
  actors::control_plane* need_plane() {
    if (!ctx_->plane)
      throw_error(errc::unavailable, "warm pools need the node's actors and this server has "
                                     "none; ask a sandboxd node");
    return ctx_->plane;
  }

  std::shared_ptr<service_context> ctx_;
  std::shared_ptr<connection_state> conn_;
};

} // namespace

rpc::Pools::Client make_pools(std::shared_ptr<service_context> ctx,
                              std::shared_ptr<connection_state> conn) {
  return kj::heap<pools>(std::move(ctx), std::move(conn));
}

} // namespace sandboxd::api
