#include "projections/projector.hpp"

#include "projections/migrations.hpp"
#include "projections/pg_array.hpp"
#include "projections/read_models.hpp"

#include <pqxx/pqxx>

#include <algorithm>
#include <stdexcept>

namespace sandboxd::projections {

struct projector::connection_holder {
  explicit connection_holder(const std::string& conninfo) : c(conninfo) {}
  pqxx::connection c;
};

projector::projector(events::event_log& log, std::string conninfo, projector_options options)
    : log_(log), conninfo_(std::move(conninfo)), options_(std::move(options)),
      models_(options_.name) {}

projector::~projector() {
  stop();
}

std::vector<std::int32_t> projector::owned() {
  if (!options_.partitions.empty())
    return options_.partitions;
  std::vector<std::int32_t> all(static_cast<std::size_t>(log_.partitions()));
  for (std::size_t i = 0; i < all.size(); ++i)
    all[i] = static_cast<std::int32_t>(i);
  return all;
}

void projector::connect() {
  if (conn_ && conn_->c.is_open())
    return;
  conn_.reset();
  auto holder = std::make_unique<connection_holder>(conninfo_);
  auto& c = holder->c;
  apply_migrations(c, options_.schema);
  {
    pqxx::work tx(c);
    tx.exec("SET LOCAL search_path TO " + tx.quote_name(options_.schema));
    pg_array parts;
    for (auto p : owned())
      parts.add(p);
    tx.exec_params("INSERT INTO projection_offsets (projection, partition, next_offset)"
                   " SELECT $1, p, 0 FROM unnest($2::integer[]) AS p"
                   " ON CONFLICT (projection, partition) DO NOTHING",
                   options_.name, parts.str());
    tx.commit();
  }
  c.prepare("sandboxd_lock_offsets",
            "SELECT partition, next_offset FROM projection_offsets"
            " WHERE projection = $1 AND partition = ANY($2::integer[]) ORDER BY partition"
            " FOR UPDATE");
  conn_ = std::move(holder);
}

log_batch projector::fetch(const partition_offsets& from) {
  return read_log_batch(log_, options_.name, from, options_.until, options_.max_batch);
}

std::size_t projector::step() {
  connect();
  auto parts = owned();
  pqxx::work tx(conn_->c);
  tx.exec("SET LOCAL search_path TO " + tx.quote_name(options_.schema));
  pg_array part_array;
  for (auto p : parts)
    part_array.add(p);
  std::map<std::int32_t, std::int64_t> next;
  for (const auto& row : tx.exec_prepared("sandboxd_lock_offsets", options_.name, part_array.str()))
    next[row[0].as<std::int32_t>()] = row[1].as<std::int64_t>();
  {
    std::lock_guard lock(mutex_);
    for (auto [p, o] : next)
      committed_[p] = o; // committed by whoever held these rows before
  }
  if (!memory_.trusted_at(next))
    models_.forget(); // kept only when the rows are as this projector committed them
  models_.bound();

  log_batch fetched;
  bool have = false;
  if (prefetch_.valid()) {
    try {
      fetched = prefetch_.get();
      have = fetched.from == next && !fetched.events.empty();
    } catch (const std::exception&) {
      // Read again below: a fault of the log shows there, on this thread.
    }
  }
  if (!have)
    fetched = fetch(next);
  auto& batch = fetched.events;
  auto& moved = fetched.moved;
  if (batch.empty())
    return 0;
  // The next batch is read while PostgreSQL applies this one, from the offsets this step
  // commits if it succeeds.
  auto after = next;
  for (auto [p, o] : moved)
    after[p] = o;
  prefetch_ = reader_.submit([this, after] { return fetch(after); });
  memory_.distrust(); // until this step commits
  auto outcome = models_.apply(tx, batch);
  pg_array mp, mo;
  for (auto [p, o] : moved) {
    mp.add(p);
    mo.add(o);
  }
  tx.exec_params("UPDATE projection_offsets o SET next_offset = u.o"
                 " FROM unnest($2::integer[], $3::bigint[]) AS u(p, o)"
                 " WHERE o.projection = $1 AND o.partition = u.p",
                 options_.name, mp.str(), mo.str());
  tx.commit();
  for (auto [p, o] : moved)
    next[p] = o;
  memory_.vouch(next);
  {
    std::lock_guard lock(mutex_);
    for (auto [p, o] : moved)
      committed_[p] = o;
    ++status_.steps;
    status_.applied += outcome.applied;
    status_.duplicates += outcome.duplicates;
    status_.last_error.clear();
  }
  if (options_.on_commit)
    options_.on_commit(moved);
  return batch.size();
}

void projector::catch_up() {
  std::map<std::int32_t, std::int64_t> target;
  for (auto p : owned()) {
    auto end = log_.end_offset(p);
    if (!end.ok())
      throw std::runtime_error("projection " + options_.name + ": end offset of partition " +
                               std::to_string(p) + " of " + log_.describe() +
                               " unknown: " + end.failure->message);
    std::int64_t t = end.offset;
    if (auto u = options_.until.find(p); u != options_.until.end())
      t = std::min(t, u->second);
    target[p] = t;
  }
  for (;;) {
    if (step() == 0) {
      // The end offsets promised records that a read did not return yet (Kafka).
      std::this_thread::sleep_for(options_.idle_wait);
    }
    bool done = true;
    {
      std::lock_guard lock(mutex_);
      for (auto [p, t] : target) {
        auto it = committed_.find(p);
        if (t > 0 && (it == committed_.end() || it->second < t))
          done = false;
      }
    }
    if (done)
      return;
  }
}

void projector::start() {
  if (thread_.joinable())
    return;
  stopping_ = false;
  thread_ = std::thread([this] { run(); });
}

void projector::stop() {
  stopping_ = true;
  if (thread_.joinable())
    thread_.join();
}

void projector::run() {
  auto backoff = options_.min_backoff;
  auto sleep_for = [this](std::chrono::milliseconds d) {
    auto until = std::chrono::steady_clock::now() + d;
    while (!stopping_ && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::min(d, std::chrono::milliseconds(10)));
  };
  std::uint64_t in_a_row = 0; // failed steps since the last good one
  while (!stopping_) {
    try {
      const auto applied = step();
      if (in_a_row > 0 && options_.on_recovery)
        options_.on_recovery(in_a_row);
      in_a_row = 0;
      if (applied > 0) {
        backoff = options_.min_backoff;
        continue;
      }
      backoff = options_.min_backoff;
      auto parts = owned();
      auto p = parts[wait_cursor_++ % parts.size()];
      std::int64_t at = 0;
      {
        std::lock_guard lock(mutex_);
        if (auto it = committed_.find(p); it != committed_.end())
          at = it->second;
      }
      log_.wait_for(p, at, options_.idle_wait);
    } catch (const std::exception& e) {
      {
        std::lock_guard lock(mutex_);
        ++status_.failures;
        status_.last_error = e.what();
      }
      if (options_.on_failure)
        options_.on_failure(e.what(), ++in_a_row);
      conn_.reset(); // reconnect next time; PostgreSQL's offsets are the truth
      sleep_for(backoff);
      backoff = std::min(backoff * 2, options_.max_backoff);
    }
  }
}

std::vector<partition_lag> projector::lag() {
  std::vector<partition_lag> out;
  for (auto p : owned()) {
    partition_lag l;
    l.partition = p;
    {
      std::lock_guard lock(mutex_);
      if (auto it = committed_.find(p); it != committed_.end())
        l.next_offset = it->second;
    }
    auto end = log_.end_offset(p);
    l.end_offset = end.ok() ? end.offset : l.next_offset;
    out.push_back(l);
  }
  return out;
}

projector_status projector::status() const {
  std::lock_guard lock(mutex_);
  return status_;
}

} // namespace sandboxd::projections
