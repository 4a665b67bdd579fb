-- 0007_audit_log_by_time_brin: the audit log's time index becomes a BRIN index on
-- occurred_at_ns instead of a B-tree on (tenant, occurred_at_ns). Rows are appended in log
-- order, so a table page holds rows of nearby times (of every tenant): a block-range summary
-- (min and max time per 32 pages) finds a period's pages, and costs next to nothing per row
-- written, where the B-tree cost one index insert per audit row (about a third of the
-- row's own cost). The trade-off: a query for one tenant and a period reads the period's
-- rows of every tenant (or, when cheaper, intersects with the primary key's tenant prefix)
-- rather than only the tenant's rows; docs/projections.md ("Audit log and billing indexes")
-- has the plans and timings on a 2,000,000-row table.
DROP INDEX audit_log_by_time;
CREATE INDEX audit_log_by_time ON audit_log USING brin (occurred_at_ns)
  WITH (pages_per_range = 32, autosummarize = on);
