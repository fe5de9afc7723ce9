import { COMMANDS_PARTITIONS, STAGE_NAMES, topicNames } from '../orchestrator/contracts/index.ts';
import type { MessageBus, TopicSpec } from './message-bus.ts';

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
    { topic: names.commands, partitions: COMMANDS_PARTITIONS },
    { topic: names.events, partitions: options.eventPartitions ?? 12 },
    { topic: names.dlq, partitions: 1 },
    ...STAGE_NAMES.map((stage) => ({ topic: names.tasks(stage), partitions: options.taskPartitions ?? 12 })),
  ];
}

/** Creates the Polyvision topics under `prefix` that do not exist yet. */
export async function ensurePolyvisionTopics(bus: MessageBus, prefix = 'polyvision'): Promise<void> {
  await bus.ensureTopics(polyvisionTopicSpecs(prefix));
}
