-- A match processed as one job (issue #18): the job is opened by its first
-- panorama segment and closed by the edge's end marker (or, when that never
-- comes, by the reconciler after ORCHESTRATOR_MATCH_IDLE_GRACE_MS).
--
-- kind: 'file' (one upload, whole-file stages) or 'match' (segments).
-- base_slot: the edge's wall-clock slot of the segment that opened the job;
--   a segment's index in the match is its slot minus this.
-- final_index: the index of the match's last segment, known once it ended.
-- ended_by: 'marker' | 'operator' | 'idle_grace'.
-- last_segment_at: when the newest segment arrived (the idle grace counts from it).
ALTER TABLE jobs ADD COLUMN kind text NOT NULL DEFAULT 'file' CHECK (kind IN ('file', 'match'));
ALTER TABLE jobs ADD COLUMN base_slot bigint;
ALTER TABLE jobs ADD COLUMN final_index integer;
ALTER TABLE jobs ADD COLUMN ended_by text;
ALTER TABLE jobs ADD COLUMN ended_at timestamptz;
ALTER TABLE jobs ADD COLUMN last_segment_at timestamptz;
CREATE INDEX jobs_open_matches ON jobs (last_segment_at) WHERE kind = 'match' AND status = 'running';

-- The segments of a match job, by index.
-- state: 'received' (its panorama arrived), 'missing' (given up when the match
--   closed without it), 'cancelled' (cancelled by range; the match goes on without it).
CREATE TABLE job_segments (
  job_id         text NOT NULL REFERENCES jobs (job_id) ON DELETE CASCADE,
  segment_index  integer NOT NULL CHECK (segment_index >= 0),
  state          text NOT NULL CHECK (state IN ('received', 'missing', 'cancelled')),
  slot           bigint,
  start_s        double precision,
  duration_s     double precision,
  -- The segment's panorama (ArtifactRef), null for a missing one.
  input          jsonb,
  received_at    timestamptz,
  PRIMARY KEY (job_id, segment_index)
);

-- Stage rows of a match job are per segment; whole-file jobs keep segment_index -1.
ALTER TABLE job_stages ADD COLUMN segment_index integer NOT NULL DEFAULT -1;
ALTER TABLE job_stages DROP CONSTRAINT job_stages_pkey;
ALTER TABLE job_stages ADD PRIMARY KEY (job_id, stage, segment_index);
CREATE INDEX job_stages_task ON job_stages (task_message_id) WHERE task_message_id IS NOT NULL;
