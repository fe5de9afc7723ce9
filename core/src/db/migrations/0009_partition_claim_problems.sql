-- Partitions an orchestrator replica was assigned but cannot claim (issue #20 item 4):
-- written by the replica at each failed claim, deleted when the claim succeeds or the
-- partition moves away. The ops page lists the rows refreshed recently (a replica that
-- died leaves its rows to age out). The replica's /health/ready says the same from memory.
CREATE TABLE partition_claim_problems (
  consumer_group  text NOT NULL,
  topic           text NOT NULL,
  partition       integer NOT NULL,
  owner           text NOT NULL,
  failures        integer NOT NULL,
  since           timestamptz NOT NULL,
  error           text NOT NULL,
  updated_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer_group, topic, partition, owner)
);
