-- 0008_audit_redaction: redaction (docs/audit-log.md): a row's detail may be emptied while its chain still
-- verifies. Rows written from now on hash their detail's SHA-256 instead of its text
-- (canonical row version 2); rows already stored keep version 1. A redacted row keeps the
-- SHA-256 of the detail it had.
ALTER TABLE audit_log
  ADD COLUMN hash_version smallint NOT NULL DEFAULT 1 CHECK (hash_version IN (1, 2)),
  ADD COLUMN redacted boolean NOT NULL DEFAULT false,
  ADD COLUMN detail_sha256 bytea,
  ADD CONSTRAINT audit_log_redaction_keeps_digest
    CHECK (NOT redacted OR (detail = '' AND octet_length(detail_sha256) = 32));
ALTER TABLE audit_log ALTER COLUMN hash_version SET DEFAULT 2;
