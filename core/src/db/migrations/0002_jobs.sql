-- Jobs and their stages: the orchestrator's state machine (the final word;
-- Redis keys are fast paths).
CREATE TABLE jobs (
  job_id           text PRIMARY KEY,
  organization_id  text NOT NULL,
  match_id         text NOT NULL,
  status           text NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled')),
  stages           text[] NOT NULL,
  model_versions   jsonb NOT NULL DEFAULT '{}',
  inputs           jsonb NOT NULL DEFAULT '[]',
  priority         text NOT NULL DEFAULT 'normal',
  requested_by     text,
  -- 0..1, the mean of the stages' progress.
  progress         double precision NOT NULL DEFAULT 0,
  error            jsonb,
  -- The commands partition of the job's key: whoever owns it may write the job.
  commands_partition integer NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  finished_at      timestamptz
);
CREATE INDEX jobs_status ON jobs (status, created_at DESC);
CREATE INDEX jobs_match ON jobs (organization_id, match_id);
CREATE INDEX jobs_created ON jobs (created_at DESC, job_id);

CREATE TABLE job_stages (
  job_id           text NOT NULL REFERENCES jobs (job_id) ON DELETE CASCADE,
  stage            text NOT NULL,
  status           text NOT NULL CHECK (status IN ('pending', 'dispatched', 'running', 'completed', 'failed', 'cancelled')),
  -- Attempts started so far; grows across retries and reprocessing so that
  -- (job_id, stage, attempt) names one dispatch.
  attempt          integer NOT NULL DEFAULT 0,
  -- Attempts allowed in the current run (reset on reprocess).
  run_first_attempt integer NOT NULL DEFAULT 1,
  max_attempts     integer NOT NULL,
  model_version    text NOT NULL,
  progress         double precision NOT NULL DEFAULT 0,
  task_message_id  uuid,
  worker_id        text,
  outputs          jsonb NOT NULL DEFAULT '[]',
  stats            jsonb,
  error            jsonb,
  dispatched_at    timestamptz,
  started_at       timestamptz,
  heartbeat_at     timestamptz,
  deadline_at      timestamptz,
  finished_at      timestamptz,
  PRIMARY KEY (job_id, stage)
);
CREATE INDEX job_stages_deadline ON job_stages (deadline_at) WHERE status IN ('dispatched', 'running');
