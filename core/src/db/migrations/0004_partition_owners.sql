-- Fencing: which orchestrator replica owns which commands partition. A
-- replica bumps `epoch` when it is assigned the partition; every state
-- write checks, in its transaction, that the row still carries its epoch.
CREATE TABLE partition_owners (
  consumer_group  text NOT NULL,
  topic           text NOT NULL,
  partition       integer NOT NULL,
  epoch           bigint NOT NULL,
  owner           text NOT NULL,
  claimed_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer_group, topic, partition)
);
