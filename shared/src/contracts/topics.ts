import type { Stage } from './stages.ts';

/** Kafka topic names and partitioning (DESIGN.md "Kafka topics"; seed orchestrator-ha-decision.md). */
export const TOPICS = Object.freeze({
  /** Commands and stage results to the orchestrator group. */
  jobCommands: 'polyvision.jobs.commands',
  /** Orchestrator → live views, webhooks. */
  jobEvents: 'polyvision.jobs.events',
  /** Poison messages with their error. */
  deadLetter: 'polyvision.dlq',
});

/** `polyvision.tasks.<stage>`: the orchestrator's outbox → `polyvision-worker-<stage>`. */
export function taskTopic(stage: Stage): string {
  return `polyvision.tasks.${stage}`;
}

/** Partitions of `polyvision.jobs.commands` (and the other job-keyed topics): the most orchestrator replicas. */
export const JOB_TOPIC_PARTITIONS = 12;

/**
 * The partition key of every message about a match: `${organization_id}:${match_id}`,
 * so all of a match's events reach one orchestrator replica, in order.
 */
export function jobKey(organizationId: string, matchId: string): string {
  return `${organizationId}:${matchId}`;
}
