import type { Logger } from '@polyvision/shared';
import { COMMANDS_PARTITIONS, STAGE_NAMES, topicNames } from '../orchestrator/contracts/index.ts';
import type { MessageBus, TopicSpec } from './message-bus.ts';
import { type TopicVerification, verifyTopics } from './topic-verification.ts';

/**
 * The Polyvision topics under `prefix` (DESIGN.md): `<prefix>.jobs.commands`
 * (12 partitions), `<prefix>.tasks.<stage>` for every stage, `<prefix>.jobs.events`,
 * `<prefix>.dlq`.
 *
 * @param options.taskPartitions - partitions of each task topic (workers scale up to it). @defaultValue 12
 * @param options.eventPartitions - @defaultValue 12
 */
export function polyvisionTopicSpecs(
  prefix = 'polyvision',
  options: { taskPartitions?: number; eventPartitions?: number } = {},
): TopicSpec[] {
  const names = topicNames(prefix);
  return [
    // Exact: ingest and the orchestrator place a job by murmur2(key) % 12 and store the partition with the job.
    { topic: names.commands, partitions: COMMANDS_PARTITIONS, exact: true },
    { topic: names.events, partitions: options.eventPartitions ?? 12 },
    { topic: names.dlq, partitions: 1 },
    ...STAGE_NAMES.map((stage) => ({ topic: names.tasks(stage), partitions: options.taskPartitions ?? 12 })),
  ];
}

/**
 * Creates the Polyvision topics under `prefix` that do not exist yet and
 * verifies the partition counts of those that do ({@link verifyTopics}).
 *
 * @throws PolyvisionError `topic_partitions_mismatch` when a topic cannot be made right safely.
 */
export async function ensurePolyvisionTopics(
  bus: MessageBus,
  prefix = 'polyvision',
  logger?: Logger,
): Promise<TopicVerification[]> {
  return verifyTopics(bus, polyvisionTopicSpecs(prefix), logger);
}
