-- Ingest (0100–0199): what a tus upload needs beyond the orchestrator's
-- `uploads` table (0001): where its bytes go (SE, SE upload id, reservation),
-- the catalog file id it will become, which edge sent it, and why it failed.
ALTER TABLE uploads
  ADD COLUMN file_id         text,
  ADD COLUMN se_upload_id    text,
  ADD COLUMN reservation_id  text,
  ADD COLUMN edge_id         text,
  ADD COLUMN token_id        text,
  ADD COLUMN relocations     integer NOT NULL DEFAULT 0,
  ADD COLUMN failure         jsonb;

ALTER TABLE uploads DROP CONSTRAINT uploads_status_check;
ALTER TABLE uploads ADD CONSTRAINT uploads_status_check
  CHECK (status IN ('receiving', 'completed', 'terminated', 'expired', 'failed'));

-- The expiry sweep claims open uploads past their expiry.
CREATE INDEX uploads_open_expiry ON uploads (expires_at) WHERE status = 'receiving';

-- Per-edge-node bearer tokens, scoped to one organization. Only the
-- SHA-256 of the token is kept (the token carries 256 random bits, so a
-- fast hash is enough: nothing to brute-force).
CREATE TABLE edge_tokens (
  token_id         text PRIMARY KEY,
  organization_id  text NOT NULL,
  edge_id          text,
  token_sha256     text NOT NULL UNIQUE CHECK (token_sha256 ~ '^[0-9a-f]{64}$'),
  created_at       timestamptz NOT NULL DEFAULT now(),
  revoked_at       timestamptz
);
CREATE INDEX edge_tokens_organization ON edge_tokens (organization_id);
