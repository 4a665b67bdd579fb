-- 0001_read_models: the projection bookkeeping and the three read models.
-- Applied by projections/migrations.cpp with search_path set to the target schema, so
-- no name here is schema-qualified (a rebuild applies the same file to a fresh schema).

-- Per projection and log partition, the next offset to read. Written in the same
-- transaction as the rows a batch produced; locked FOR UPDATE by the applying projector.
CREATE TABLE projection_offsets (
  projection  text    NOT NULL,
  partition   integer NOT NULL,
  next_offset bigint  NOT NULL CHECK (next_offset >= 0),
  PRIMARY KEY (projection, partition)
);

-- Second line of defence against duplicates: the highest per-sandbox sequence number a
-- projection has applied. An event at or below it is ignored.
CREATE TABLE projection_sandbox_seq (
  projection text   NOT NULL,
  sandbox_id text   NOT NULL,
  last_seq   bigint NOT NULL,
  PRIMARY KEY (projection, sandbox_id)
);

-- Current state and metadata of every sandbox (list / get / query).
CREATE TABLE sandboxes (
  id                   text        PRIMARY KEY,
  tenant               text        NOT NULL,
  state                text        NOT NULL,
  template             text        NOT NULL,
  limits               jsonb       NOT NULL,
  labels               jsonb       NOT NULL DEFAULT '{}',
  pause_mode           text        NOT NULL DEFAULT '', -- '' when not paused
  writable_layer_bytes bigint      NOT NULL DEFAULT 0,
  created_at           timestamptz NOT NULL,
  updated_at           timestamptz NOT NULL,
  last_seq             bigint      NOT NULL
);
-- Keyset pagination: WHERE tenant = $1 [AND state = $2] AND (created_at, id) > ($3, $4)
-- ORDER BY created_at, id LIMIT n.
CREATE INDEX sandboxes_by_tenant ON sandboxes (tenant, created_at, id);
CREATE INDEX sandboxes_by_tenant_state ON sandboxes (tenant, state, created_at, id);
-- Label filters: labels @> '{"team":"x"}'.
CREATE INDEX sandboxes_by_label ON sandboxes USING gin (labels jsonb_path_ops);

-- Billing. Usage is in byte-milliseconds (see projections/billing.hpp).
-- What is being metered right now, per sandbox: the memory size, and the open compute
-- and storage intervals (the event that opened each, and when).
CREATE TABLE billing_meter_state (
  sandbox_id       text    PRIMARY KEY,
  tenant           text    NOT NULL,
  memory_bytes     bigint  NOT NULL,
  compute_open_seq bigint,           -- NULL when not running
  compute_open_ms  bigint,
  storage_bytes    bigint  NOT NULL DEFAULT 0,
  storage_open_seq bigint,           -- NULL before the first sample and after deletion
  storage_open_ms  bigint,
  deleted          boolean NOT NULL DEFAULT false
);

-- Every closed metering interval, with the events that opened and closed it: what makes
-- a bill line traceable.
CREATE TABLE billing_intervals (
  sandbox_id text   NOT NULL,
  meter      text   NOT NULL CHECK (meter IN ('compute', 'storage')),
  start_seq  bigint NOT NULL,
  end_seq    bigint NOT NULL,
  tenant     text   NOT NULL,
  start_ms   bigint NOT NULL,
  end_ms     bigint NOT NULL,
  bytes      bigint NOT NULL,
  PRIMARY KEY (sandbox_id, meter, start_seq)
);
CREATE INDEX billing_intervals_by_tenant ON billing_intervals (tenant, start_ms);

-- The meters per sandbox and hour (hour_ms: start of the hour, ms since the epoch).
CREATE TABLE billing_hourly (
  sandbox_id      text   NOT NULL,
  hour_ms         bigint NOT NULL,
  tenant          text   NOT NULL,
  compute_byte_ms bigint NOT NULL DEFAULT 0,
  storage_byte_ms bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (sandbox_id, hour_ms)
);
CREATE INDEX billing_hourly_by_tenant ON billing_hourly (tenant, hour_ms);

-- Audit log: one row per event, accepted or rejected, hash-chained per tenant and
-- partition (see projections/audit_chain.hpp).
CREATE TABLE audit_log (
  tenant         text    NOT NULL,
  partition      integer NOT NULL,
  position       bigint  NOT NULL,
  event_id       text    NOT NULL,
  occurred_at_ns bigint  NOT NULL,
  principal      text    NOT NULL,
  action         text    NOT NULL,
  sandbox_id     text    NOT NULL,
  outcome        text    NOT NULL,
  detail         text    NOT NULL,
  prev_hash      text    NOT NULL,
  hash           text    NOT NULL,
  PRIMARY KEY (tenant, partition, position)
);
CREATE INDEX audit_log_by_time ON audit_log (tenant, occurred_at_ns);

-- The last row of every chain, so that deleting the newest rows is detected too.
CREATE TABLE audit_chain_heads (
  tenant    text    NOT NULL,
  partition integer NOT NULL,
  position  bigint  NOT NULL,
  hash      text    NOT NULL,
  PRIMARY KEY (tenant, partition)
);
