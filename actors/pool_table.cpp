// pool_table.cpp — a warm pool's bookkeeping (pool_table.hpp).
#include "actors/pool_table.hpp"

#include <algorithm>
#include <cmath>

namespace sandboxd::actors {

namespace {

double seconds_of(events::nanoseconds d) {
  return std::chrono::duration<double>(d).count();
}

} // namespace

pool_table::pool_table(pool_settings settings, events::time_point now)
    : s_(std::move(settings)), tokens_at_(now) {}

void pool_table::reconfigure(pool_settings settings) {
  s_ = std::move(settings);
  tokens_ = std::min(tokens_, std::max(1.0, s_.refill_per_second));
}

std::optional<std::string> pool_table::take(const std::string& content_id, events::time_point now) {
  claims_.push_back(now);
  auto it = std::find_if(ready_.begin(), ready_.end(),
                         [&](const ready_sandbox& r) { return r.content_id == content_id; });
  if (it == ready_.end()) {
    ++counts_.misses;
    return std::nullopt;
  }
  ++counts_.hits;
  if (now >= quiet_until_)
    quiet_until_ = now + k_claim_quiet;
  auto id = std::move(it->id);
  ready_.erase(it);
  return id;
}

void pool_table::set_content(const std::string& content_id) {
  content_ = content_id;
  for (auto it = ready_.begin(); it != ready_.end();)
    if (it->content_id != content_id) {
      stale_.push_back(std::move(it->id));
      it = ready_.erase(it);
    } else {
      ++it;
    }
}

void pool_table::give_back(std::string id, std::string content_id) {
  ready_.push_front({std::move(id), std::move(content_id)});
}

void pool_table::adopt(std::string id, std::string content_id) {
  ready_.push_back({std::move(id), std::move(content_id)});
}

void pool_table::made(std::string id, std::string content_id, events::nanoseconds took) {
  if (making_ > 0)
    --making_;
  ++counts_.made;
  const double s = seconds_of(took);
  counts_.refill_seconds_sum += s;
  counts_.refill_seconds_max = std::max(counts_.refill_seconds_max, s);
  if (content_ && *content_ != content_id)
    stale_.push_back(std::move(id)); // started before the template was rebuilt
  else
    ready_.push_back({std::move(id), std::move(content_id)});
}

void pool_table::not_made(std::string why) {
  if (making_ > 0)
    --making_;
  ++counts_.failed;
  counts_.last_error = std::move(why);
}

void pool_table::cancel(std::uint32_t creates, std::string why) {
  making_ -= std::min(making_, creates);
  counts_.failed += creates;
  counts_.last_error = std::move(why);
}

void pool_table::refill_tokens(events::time_point now) {
  if (now > tokens_at_) {
    tokens_ += s_.refill_per_second * seconds_of(now - tokens_at_);
    tokens_at_ = now;
  }
  tokens_ = std::min(tokens_, std::max(1.0, s_.refill_per_second));
}

void pool_table::forget_old_claims(events::time_point now) {
  while (!claims_.empty() && claims_.front() + k_demand_window <= now)
    claims_.pop_front();
}

std::uint32_t pool_table::target(events::time_point now) const {
  std::uint64_t demand = 0;
  for (auto at : claims_)
    if (at + k_demand_window > now)
      ++demand;
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(s_.maximum, s_.size + demand));
}

pool_table::plan pool_table::next(events::time_point now, bool may_create) {
  plan p;
  forget_old_claims(now);
  refill_tokens(now);
  p.retire = std::move(stale_);
  stale_.clear();
  const auto t = target(now);
  while (ready_.size() > t) {
    p.retire.push_back(std::move(ready_.front().id));
    ready_.pop_front();
  }
  counts_.retired += p.retire.size();
  const auto held = static_cast<std::uint32_t>(ready_.size()) + making_;
  const std::uint32_t need = t > held ? t - held : 0;
  const std::uint32_t room = s_.maximum > held ? s_.maximum - held : 0;
  const auto affordable = static_cast<std::uint32_t>(std::floor(tokens_));
  const bool quiet = now < quiet_until_ && !ready_.empty();
  p.create = may_create && !quiet ? std::min({need, room, affordable}) : 0;
  tokens_ -= p.create;
  making_ += p.create;
  if (may_create && quiet && need > 0)
    p.wake = quiet_until_;
  if (may_create && !quiet && need > p.create && p.create < room) {
    // Short of tokens: look again when the next one is there.
    const double wait = (1.0 - tokens_) / s_.refill_per_second;
    p.wake = now + std::chrono::duration_cast<events::nanoseconds>(
                     std::chrono::duration<double>(std::max(wait, 0.001)));
  }
  if (!claims_.empty()) {
    // Demand falls when the oldest claim leaves the window: the target may shrink then.
    auto falls = claims_.front() + k_demand_window;
    if (!p.wake || falls < *p.wake)
      p.wake = falls;
  }
  return p;
}

pool_figures pool_table::figures(events::time_point now) const {
  pool_figures f = counts_;
  f.key = to_string(s_.key);
  f.settings = s_;
  f.ready = static_cast<std::uint32_t>(ready_.size());
  f.making = making_;
  f.target = target(now);
  f.ready_ids.clear();
  for (const auto& r : ready_)
    f.ready_ids.push_back(r.id);
  return f;
}

} // namespace sandboxd::actors
