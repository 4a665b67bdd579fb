-- 0002_hot_updates: leave room in the pages of the tables that every batch updates in
-- place, so that updates changing no indexed column (updated_at and last_seq of a sandbox,
-- the sequence guard, hourly meters) stay heap-only (HOT) and skip index maintenance, the
-- GIN label index included.
ALTER TABLE sandboxes SET (fillfactor = 50);
ALTER TABLE projection_sandbox_seq SET (fillfactor = 50);
ALTER TABLE billing_meter_state SET (fillfactor = 50);
ALTER TABLE billing_hourly SET (fillfactor = 50);
