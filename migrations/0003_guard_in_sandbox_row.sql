-- 0003_guard_in_sandbox_row: the duplicate guard of a sandbox that has a `sandboxes` row is
-- that row's last_seq (projections/read_models.cpp); projection_sandbox_seq keeps only the
-- sandboxes whose row does not carry it. Drop the rows the sandbox rows now cover, so a live
-- schema projected before this migration equals a rebuild.
DELETE FROM projection_sandbox_seq g USING sandboxes s
 WHERE g.sandbox_id = s.id AND g.last_seq <= s.last_seq;
