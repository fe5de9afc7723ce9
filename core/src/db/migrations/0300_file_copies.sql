-- Replication (0300–0399): where each catalogued file has a copy. One row per
-- (file, storage element). The primary copy (files.storage_id/object_key) is
-- recorded by a trigger for every file, whoever inserts it (ingest, workers),
-- as `verified`: the SE checked its SHA-256 when the upload completed. Further
-- copies are `pending` while their bytes move and `verified` once the target
-- SE checked the SHA-256 (core/src/replication/add-copy.ts).
CREATE TABLE file_copies (
  file_id      text NOT NULL REFERENCES files (file_id) ON DELETE CASCADE,
  storage_id   text NOT NULL,
  object_key   text NOT NULL,
  state        text NOT NULL CHECK (state IN ('pending', 'verified')),
  sha256       text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  created_at   timestamptz NOT NULL DEFAULT now(),
  verified_at  timestamptz,
  PRIMARY KEY (file_id, storage_id)
);
CREATE INDEX file_copies_location ON file_copies (storage_id, object_key);
CREATE INDEX file_copies_audit ON file_copies (verified_at) WHERE state = 'verified';

CREATE FUNCTION file_copies_record_primary() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    IF NEW.storage_id IS NOT DISTINCT FROM OLD.storage_id
       AND NEW.object_key IS NOT DISTINCT FROM OLD.object_key
       AND NEW.sha256 IS NOT DISTINCT FROM OLD.sha256 THEN
      RETURN NEW;
    END IF;
    -- New bytes or a new place: the old copies are no copies of this row any more.
    DELETE FROM file_copies WHERE file_id = NEW.file_id;
  END IF;
  INSERT INTO file_copies (file_id, storage_id, object_key, state, sha256, verified_at)
  VALUES (NEW.file_id, NEW.storage_id, NEW.object_key, 'verified', NEW.sha256, now())
  ON CONFLICT (file_id, storage_id) DO UPDATE
    SET object_key = EXCLUDED.object_key, state = 'verified', sha256 = EXCLUDED.sha256, verified_at = now();
  RETURN NEW;
END;
$$;

CREATE TRIGGER files_primary_copy AFTER INSERT OR UPDATE ON files
  FOR EACH ROW EXECUTE FUNCTION file_copies_record_primary();

-- Files catalogued before this migration: their primary copy.
INSERT INTO file_copies (file_id, storage_id, object_key, state, sha256, verified_at)
SELECT file_id, storage_id, object_key, 'verified', sha256, created_at FROM files
ON CONFLICT DO NOTHING;
