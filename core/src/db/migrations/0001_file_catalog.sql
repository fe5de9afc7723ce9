-- File catalog: every stored file (panoramas, camera files, stage artifacts)
-- and where it lives. Owned by the orchestrator migrations (0001–0099);
-- ingest adds its own columns and tables from 0100.
CREATE TABLE files (
  file_id          text PRIMARY KEY,
  organization_id  text NOT NULL,
  match_id         text NOT NULL,
  kind             text NOT NULL,
  filename         text NOT NULL,
  size_bytes       bigint NOT NULL CHECK (size_bytes >= 0),
  sha256           text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  storage_id       text NOT NULL,
  object_key       text NOT NULL,
  location         text,
  created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX files_match ON files (organization_id, match_id);

-- Uploads in progress (tus), before they become files.
CREATE TABLE uploads (
  upload_id        text PRIMARY KEY,
  organization_id  text NOT NULL,
  match_id         text NOT NULL,
  kind             text NOT NULL,
  filename         text NOT NULL,
  size_bytes       bigint NOT NULL CHECK (size_bytes >= 0),
  offset_bytes     bigint NOT NULL DEFAULT 0 CHECK (offset_bytes >= 0),
  sha256           text,
  storage_id       text,
  status           text NOT NULL DEFAULT 'receiving' CHECK (status IN ('receiving', 'completed', 'terminated', 'expired')),
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  expires_at       timestamptz
);
CREATE INDEX uploads_match ON uploads (organization_id, match_id);
