-- 0009_sandbox_runtime: the `sandboxes` read model keeps the runtime of each sandbox (its
-- `created` event's), which the web console lists (docs/console.md). Rows projected before
-- this migration hold '' until the read models are rebuilt from the log
-- (`sandboxctl projections rebuild read_models`), which fills them.
ALTER TABLE sandboxes ADD COLUMN runtime text NOT NULL DEFAULT '';
