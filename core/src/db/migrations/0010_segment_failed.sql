-- A segment whose stage failed for good (a non-retriable error, or its
-- attempts spent) no longer fails its whole match (issue #18, faults): the
-- segment becomes 'failed', its other stage rows stop, the sequential stages
-- go on past it as past a missing one, and the match completes without it
-- (the job's error says which segments failed and why) — unless more than
-- ORCHESTRATOR_MATCH_MAX_FAILED_SEGMENTS failed, or none is left. A range
-- reprocess runs a failed segment again.
ALTER TABLE job_segments DROP CONSTRAINT job_segments_state_check;
ALTER TABLE job_segments ADD CONSTRAINT job_segments_state_check
  CHECK (state IN ('received', 'missing', 'cancelled', 'failed'));

-- Whether a stage row's current run was dispatched as the match's last segment (`segment.final`):
-- when the segments after the last one still in the match were left out (failed, cancelled,
-- missing) after its analyze/encode ran, those run again as final (ENDLIST, final analytics).
ALTER TABLE job_stages ADD COLUMN dispatched_final boolean NOT NULL DEFAULT false;
