-- Worker-side claims of tasks (the final word behind the Redis keys
-- `{stage}:{organization_id}:{match_id}:{model_version}`): a task runs only
-- under a live claim; a completed claim keeps the result to re-send.
CREATE TABLE stage_claims (
  task_message_id  uuid PRIMARY KEY,
  idempotency_key  text NOT NULL,
  job_id           text NOT NULL,
  stage            text NOT NULL,
  attempt          integer NOT NULL,
  status           text NOT NULL CHECK (status IN ('processing', 'completed', 'failed')),
  owner            text NOT NULL,
  lease_until      timestamptz NOT NULL,
  result           jsonb,
  updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX stage_claims_key ON stage_claims (idempotency_key);
