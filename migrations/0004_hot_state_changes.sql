-- 0004_hot_state_changes: let a sandbox's state change without touching its indexes.
-- An update stays heap-only (HOT, 0002 left the page room) only when no indexed column
-- changes, index predicates included; most events change `state`, which
-- sandboxes_by_tenant_state indexed, so nearly every row write inserted into all three
-- indexes, the GIN label index included. The index on state goes; `deleted`, derived from
-- state, changes once in a sandbox's life, and keeps listing the live sandboxes of a tenant
-- from walking its deleted ones (docs/projections.md, "sandboxes").
DROP INDEX sandboxes_by_tenant_state;
ALTER TABLE sandboxes ADD COLUMN deleted boolean GENERATED ALWAYS AS (state = 'deleted') STORED;
CREATE INDEX sandboxes_live_by_tenant ON sandboxes (tenant, created_at, id) WHERE NOT deleted;
