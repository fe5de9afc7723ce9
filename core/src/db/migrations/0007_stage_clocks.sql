-- Two clocks per stage run (Temporal's terms, docs.temporal.io "Activity timeouts"):
-- schedule-to-start (waiting in the task topic) and start-to-close (from a
-- worker's claim, kept alive by the claim's heartbeats).
--
-- scheduled_at: when the task becomes visible to workers (dispatch + retry delay).
-- run_started_at: first dispatch of the current run; retriable input errors
--   wait with backoff until this + the retry window.
-- waiting_attempts: attempts of this run that ended in such a waiting error
--   (they do not count against max_attempts).
ALTER TABLE job_stages ADD COLUMN scheduled_at timestamptz;
ALTER TABLE job_stages ADD COLUMN run_started_at timestamptz;
ALTER TABLE job_stages ADD COLUMN waiting_attempts integer NOT NULL DEFAULT 0;

-- claimed_at: when the worker claimed the task (start-to-close counts from here).
-- status 'lost': the holder stopped heartbeating (lease expired); the attempt
-- is reported as `heartbeat_timeout` and a new attempt is dispatched.
ALTER TABLE stage_claims ADD COLUMN claimed_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE stage_claims DROP CONSTRAINT stage_claims_status_check;
ALTER TABLE stage_claims ADD CONSTRAINT stage_claims_status_check
  CHECK (status IN ('processing', 'completed', 'failed', 'lost'));
CREATE INDEX stage_claims_processing ON stage_claims (lease_until) WHERE status = 'processing';
