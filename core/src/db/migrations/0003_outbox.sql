-- Transactional outbox: rows written in the same transaction as the state
-- change that causes them; the relay publishes them and sets sent_at.
CREATE TABLE outbox (
  id                 bigserial PRIMARY KEY,
  commands_partition integer NOT NULL,
  topic              text NOT NULL,
  message_key        text NOT NULL,
  payload            jsonb NOT NULL,
  -- Not published before this instant (retry backoff).
  available_at       timestamptz NOT NULL DEFAULT now(),
  created_at         timestamptz NOT NULL DEFAULT now(),
  sent_at            timestamptz
);
CREATE INDEX outbox_unsent ON outbox (commands_partition, available_at, id) WHERE sent_at IS NULL;

-- Commands already applied, by message_id (deduplication; pruned after 7 days).
CREATE TABLE processed_messages (
  message_id    text PRIMARY KEY,
  job_id        text NOT NULL,
  type          text NOT NULL,
  processed_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX processed_messages_age ON processed_messages (processed_at);
