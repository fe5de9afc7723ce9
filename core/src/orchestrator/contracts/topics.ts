import { JOB_TOPIC_PARTITIONS } from '@polyvision/shared';
import type { StageName } from './stages.ts';

/**
 * Topic names (DESIGN.md, "Kafka topics"). A prefix other than `polyvision`
 * isolates tests and benchmarks that share one broker.
 */
export interface TopicNames {
  /** Commands to the orchestrator group: `<prefix>.jobs.commands` (12 partitions). */
  commands: string;
  /** Lifecycle and progress events: `<prefix>.jobs.events`. */
  events: string;
  /** Poison messages with their error: `<prefix>.dlq`. */
  dlq: string;
  /** Tasks for one stage's workers: `<prefix>.tasks.<stage>`. */
  tasks(stage: StageName): string;
}

/** Partition count of the commands topic (DESIGN.md): the shared contract's `JOB_TOPIC_PARTITIONS`. */
export const COMMANDS_PARTITIONS = JOB_TOPIC_PARTITIONS;

/** The topic names under `prefix`. @defaultValue prefix `polyvision` */
export function topicNames(prefix = 'polyvision'): TopicNames {
  return {
    commands: `${prefix}.jobs.commands`,
    events: `${prefix}.jobs.events`,
    dlq: `${prefix}.dlq`,
    tasks: (stage) => `${prefix}.tasks.${stage}`,
  };
}

/** Consumer group names: orchestrator and per-stage workers. */
export function groupNames(prefix = 'polyvision') {
  return {
    orchestrator: `${prefix}-orchestrator`,
    worker: (stage: StageName) => `${prefix}-worker-${stage}`,
  };
}
