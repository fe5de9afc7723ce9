import { PolyvisionError } from '@polyvision/shared';
import type {
  BusConsumer,
  BusProducer,
  ConsumerOptions,
  MessageBus,
  OutgoingMessage,
  TopicSpec,
  TopicState,
} from '../message-bus.ts';
import { partitionForKey } from '../murmur2.ts';
import { MemoryConsumer } from './memory-consumer.ts';
import { MemoryGroup } from './memory-group.ts';
import { MemoryLog } from './memory-log.ts';

/**
 * The in-memory `MessageBus` of the embedded default (`pnpm demo`, one
 * process): topics with partitions, Kafka's key partitioning (murmur2),
 * consumer groups that rebalance when a member joins, leaves or crashes, and
 * redelivery of everything not committed. Nothing survives the process.
 *
 * Topics are created on first use with `defaultPartitions` unless
 * `ensureTopics` made them first.
 */
export class MemoryBus implements MessageBus {
  readonly kind = 'memory';
  readonly #topics = new Map<string, MemoryLog[]>();
  readonly #groups = new Map<string, MemoryGroup>();
  readonly #defaultPartitions: number;
  #closed = false;

  /** @param options.defaultPartitions - partitions of a topic created on first use. @defaultValue 1 */
  constructor(options: { defaultPartitions?: number } = {}) {
    this.#defaultPartitions = options.defaultPartitions ?? 1;
  }

  createProducer(): BusProducer {
    return {
      send: async (topic: string, messages: OutgoingMessage[]) => this.#send(topic, messages),
      close: async () => {},
    };
  }

  createConsumer(options: ConsumerOptions): BusConsumer & { simulateCrash(): Promise<void> } {
    for (const topic of options.topics) this.#topic(topic);
    let group = this.#groups.get(options.groupId);
    if (!group) {
      group = new MemoryGroup(options.groupId, (topic) => this.#topic(topic).length);
      this.#groups.set(options.groupId, group);
    }
    return new MemoryConsumer(group, (topic, partition) => this.#topic(topic)[partition]!, options);
  }

  async ensureTopics(specs: TopicSpec[]): Promise<void> {
    for (const spec of specs) {
      if (!this.#topics.has(spec.topic)) {
        this.#topics.set(
          spec.topic,
          Array.from({ length: spec.partitions }, () => new MemoryLog()),
        );
      }
    }
  }

  async describeTopics(topics: string[]): Promise<Map<string, TopicState>> {
    const states = new Map<string, TopicState>();
    for (const topic of topics) {
      const logs = this.#topics.get(topic);
      if (logs) {
        states.set(topic, {
          partitions: logs.length,
          messagesWritten: logs.reduce((sum, log) => sum + log.records.length, 0),
        });
      }
    }
    return states;
  }

  async growTopic(topic: string, partitions: number): Promise<void> {
    const logs = this.#topic(topic);
    while (logs.length < partitions) logs.push(new MemoryLog());
  }

  async deleteTopics(topics: string[]): Promise<void> {
    for (const topic of topics) this.#topics.delete(topic);
  }

  async groupLag(groupId: string, topic: string): Promise<Map<number, number>> {
    const logs = this.#topic(topic);
    const group = this.#groups.get(groupId);
    return new Map(
      logs.map((log, partition) => [
        partition,
        log.records.length - (group?.committed.get(`${topic}:${partition}`) ?? 0),
      ]),
    );
  }

  /** Every record of a topic, all partitions (tests and the DLQ view). */
  records(topic: string) {
    return this.#topic(topic).flatMap((log) => log.records);
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  #topic(topic: string): MemoryLog[] {
    let logs = this.#topics.get(topic);
    if (!logs) {
      logs = Array.from({ length: this.#defaultPartitions }, () => new MemoryLog());
      this.#topics.set(topic, logs);
    }
    return logs;
  }

  #send(topic: string, messages: OutgoingMessage[]): void {
    if (this.#closed) throw new PolyvisionError('bus_closed', 'the in-memory bus is closed');
    const logs = this.#topic(topic);
    for (const message of messages) {
      const partition = partitionForKey(message.key, logs.length);
      logs[partition]!.append({
        topic,
        partition,
        key: message.key,
        value: message.value,
        headers: message.headers ?? {},
        timestampMs: Date.now(),
      });
    }
  }
}
