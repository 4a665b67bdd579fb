-- 0006_billing_intervals_by_sandbox: billing_intervals loses its (tenant, start_ms) index.
-- The report (projections/billing_report.cpp) wants the intervals touching a period of the
-- sandboxes it bills, and every sandbox it bills has billing_hourly rows in the period; it
-- now reads those sandboxes' intervals through the primary key (sandbox_id, meter,
-- start_seq). The old index bounded only start_ms < period end, so it walked the tenant's
-- whole history before the period; the primary key walks the intervals of the billed
-- sandboxes. Each closed interval now costs one index insert instead of two.
DROP INDEX billing_intervals_by_tenant;
