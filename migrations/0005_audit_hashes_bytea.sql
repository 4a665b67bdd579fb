-- 0005_audit_hashes_bytea: store the audit chain's hashes as their 32 bytes instead of 64
-- hex digits (projections/audit_chain.hpp still defines the chain over the hex form; the
-- writer sends and the readers receive hex, converted by PostgreSQL: '\x…' in COPY, decode
-- and encode elsewhere). An audit row is some 64 bytes shorter, heads likewise. Existing
-- rows are converted in place (this rewrites both tables once); a hash that is not 64 hex
-- digits fails the migration, which then keeps nothing.
ALTER TABLE audit_log
  ALTER COLUMN prev_hash TYPE bytea USING decode(prev_hash, 'hex'),
  ALTER COLUMN hash TYPE bytea USING decode(hash, 'hex'),
  ADD CONSTRAINT audit_log_hashes_are_sha256
    CHECK (octet_length(prev_hash) = 32 AND octet_length(hash) = 32);
ALTER TABLE audit_chain_heads
  ALTER COLUMN hash TYPE bytea USING decode(hash, 'hex'),
  ADD CONSTRAINT audit_chain_heads_hash_is_sha256 CHECK (octet_length(hash) = 32);
