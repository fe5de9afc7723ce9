import { type Logger, PolyvisionError, silentLogger } from '@polyvision/shared';
import type { MessageBus, TopicSpec } from './message-bus.ts';

/** What verification did to one topic. */
export interface TopicVerification {
  topic: string;
  action: 'created' | 'ok' | 'grown' | 'more_than_needed';
  /** Partitions found before (absent when created). */
  foundPartitions?: number;
  partitions: number;
}

/**
 * Makes the broker's topics what `specs` say (DESIGN.md "Kafka topics"), or
 * refuses with what to do. A broker with auto-creation on may have made a
 * topic with its default partition count before any Polyvision process did
 * (a consumer that subscribed first): without this check the orchestrator
 * would run on 1 partition, every replica but one idle.
 *
 * - missing: created with the spec's partitions;
 * - fewer partitions than the spec: grown, with a warning, when that is
 *   safe — any topic whose partition count is not a contract, or an
 *   `exact` one nothing was ever written to; otherwise refused;
 * - more: fine unless `exact` (Kafka cannot remove partitions): refused.
 *
 * @returns one entry per spec.
 * @throws PolyvisionError `topic_partitions_mismatch` (not retriable) naming the
 *   topic, both counts and the operator's fix.
 */
export async function verifyTopics(
  bus: MessageBus,
  specs: TopicSpec[],
  logger: Logger = silentLogger,
): Promise<TopicVerification[]> {
  const before = await bus.describeTopics(specs.map((spec) => spec.topic));
  const missing = specs.filter((spec) => !before.has(spec.topic));
  if (missing.length > 0) await bus.ensureTopics(missing);
  const results: TopicVerification[] = [];
  for (const spec of specs) {
    const found = before.get(spec.topic);
    if (!found) {
      results.push({ topic: spec.topic, action: 'created', partitions: spec.partitions });
      continue;
    }
    if (found.partitions === spec.partitions) {
      results.push({ topic: spec.topic, action: 'ok', partitions: found.partitions });
    } else if (found.partitions > spec.partitions) {
      if (spec.exact) throw mismatch(spec, found.partitions, 'partitions cannot be removed from a Kafka topic');
      results.push({
        topic: spec.topic,
        action: 'more_than_needed',
        foundPartitions: found.partitions,
        partitions: found.partitions,
      });
    } else if (!spec.exact || found.messagesWritten === 0) {
      await bus.growTopic(spec.topic, spec.partitions);
      logger.warn(
        { topic: spec.topic, from: found.partitions, to: spec.partitions },
        `topic ${spec.topic} had ${found.partitions} partition(s), the design says ${spec.partitions}: grown ` +
          '(was it auto-created by the broker? set auto.create.topics.enable=false)',
      );
      results.push({
        topic: spec.topic,
        action: 'grown',
        foundPartitions: found.partitions,
        partitions: spec.partitions,
      });
    } else {
      throw mismatch(
        spec,
        found.partitions,
        `it already holds ${found.messagesWritten} message(s) placed by key, and growing it would move jobs to other partitions`,
      );
    }
  }
  return results;
}

function mismatch(spec: TopicSpec, found: number, why: string): PolyvisionError {
  return new PolyvisionError(
    'topic_partitions_mismatch',
    `topic ${spec.topic} has ${found} partition(s) but Polyvision needs exactly ${spec.partitions}, and ${why}. ` +
      'It was probably auto-created by the broker before Polyvision made it. To fix: stop every orchestrator, ' +
      `ingest and worker; delete the topic (kafka-topics.sh --bootstrap-server BROKER --delete --topic ${spec.topic}); ` +
      'set auto.create.topics.enable=false on the broker; start an orchestrator (it creates the topic). ' +
      'Jobs in the database are kept; commands still unread in the deleted topic are lost (resubmit those jobs).',
    { retriable: false },
  );
}
