/**
 * The Kafka driver of the `MessageBus` port, on kafkajs. This is the only
 * file that imports kafkajs: swapping to `@confluentinc/kafka-javascript`
 * (its KafkaJS-compatible API, `require('@confluentinc/kafka-javascript').KafkaJS`)
 * is a change here alone.
 *
 * Consumers run kafkajs's `eachBatch` with auto-resolve and auto-commit off:
 * each record is handed to the port's handler, then resolved and committed
 * (`commitOffsets` with offset + 1); a throw stops the batch, so kafkajs
 * fetches again from the last resolved offset after `retryBackoffMs`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { PolyvisionError } from '@polyvision/shared';
import { type Admin, type Consumer, Kafka, logLevel, Partitioners, type Producer } from 'kafkajs';
import type {
  BusConsumer,
  BusProducer,
  BusRecord,
  ConsumerOptions,
  MessageBus,
  OutgoingMessage,
  RunHandlers,
  TopicSpec,
  TopicState,
} from '../message-bus.ts';
import { OpenHandles } from '../open-handles.ts';

export interface KafkaBusOptions {
  /** `host:port` list (KAFKA_BROKERS split on commas). */
  brokers: string[];
  /** @defaultValue 'polyvision' */
  clientId?: string;
  /** Connection timeout per broker. @defaultValue 3_000 */
  connectionTimeoutMs?: number;
}

export class KafkaBus implements MessageBus {
  readonly kind = 'kafka';
  readonly #kafka: Kafka;
  #admin: Admin | null = null;
  readonly #open = new OpenHandles();

  constructor(options: KafkaBusOptions) {
    if (options.brokers.length === 0) throw new PolyvisionError('bus_config', 'KafkaBus needs at least one broker');
    this.#kafka = new Kafka({
      clientId: options.clientId ?? 'polyvision',
      brokers: options.brokers,
      connectionTimeout: options.connectionTimeoutMs ?? 3_000,
      logLevel: logLevel.NOTHING,
      retry: { initialRetryTime: 100, retries: 8, maxRetryTime: 2_000 },
    });
  }

  createProducer(): BusProducer {
    const producer: Producer = this.#kafka.producer({
      createPartitioner: Partitioners.DefaultPartitioner,
      allowAutoTopicCreation: false,
      idempotent: false,
    });
    let connected: Promise<void> | null = null;
    const handle = {
      send: async (topic: string, messages: OutgoingMessage[]) => {
        connected ??= producer.connect();
        await connected;
        await producer.send({ topic, acks: -1, messages: messages.map((m) => ({ ...m })) });
      },
      close: async () => {
        if (connected) await producer.disconnect();
      },
    };
    return this.#open.track(handle);
  }

  createConsumer(options: ConsumerOptions): BusConsumer {
    const sessionTimeoutMs = options.sessionTimeoutMs ?? 10_000;
    const consumer: Consumer = this.#kafka.consumer({
      groupId: options.groupId,
      sessionTimeout: sessionTimeoutMs,
      heartbeatInterval: options.heartbeatIntervalMs ?? Math.floor(sessionTimeoutMs / 3),
      rebalanceTimeout: Math.max(sessionTimeoutMs, 10_000),
      allowAutoTopicCreation: false,
      retry: { initialRetryTime: 100, retries: 10, maxRetryTime: 2_000 },
    });
    const handle = new KafkaConsumer(consumer, options);
    return this.#open.track(handle);
  }

  async ensureTopics(specs: TopicSpec[]): Promise<void> {
    const admin = await this.#adminClient();
    for (let attempt = 1; ; attempt++) {
      const existing = new Set(await admin.listTopics());
      const missing = specs.filter((spec) => !existing.has(spec.topic));
      try {
        if (missing.length > 0) {
          await admin.createTopics({
            waitForLeaders: true,
            topics: missing.map((spec) => ({
              topic: spec.topic,
              numPartitions: spec.partitions,
              replicationFactor: -1,
            })),
          });
        }
        // Leaders known for every partition: producers and consumers can use the topics now.
        const metadata = await admin.fetchTopicMetadata({ topics: specs.map((spec) => spec.topic) });
        const ready = metadata.topics.every((topic) => topic.partitions.every((p) => p.leader >= 0));
        if (ready) return;
      } catch (error) {
        // A concurrent creator won (TOPIC_ALREADY_EXISTS), or leaders are still being elected.
        if (attempt >= 20) throw error;
      }
      if (attempt >= 20) throw new PolyvisionError('bus_topics_not_ready', 'topics have no partition leaders yet');
      await sleep(Math.min(1_000, 50 * attempt));
    }
  }

  async describeTopics(topics: string[]): Promise<Map<string, TopicState>> {
    // A fresh admin: kafkajs caches topic metadata per client, and a grown topic must show its new count.
    const admin = this.#kafka.admin();
    await admin.connect();
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          const existing = new Set(await admin.listTopics());
          const states = new Map<string, TopicState>();
          for (const topic of topics.filter((t) => existing.has(t))) {
            const offsets = await admin.fetchTopicOffsets(topic);
            states.set(topic, {
              partitions: offsets.length,
              messagesWritten: offsets.reduce((sum, p) => sum + Number(p.high), 0),
            });
          }
          return states;
        } catch (error) {
          // Leaders of a just-created topic are still being elected (NOT_LEADER_FOR_PARTITION and kin).
          if (attempt >= 20 || !(error as { retriable?: boolean }).retriable) throw error;
          await sleep(Math.min(1_000, 50 * attempt));
        }
      }
    } finally {
      await admin.disconnect();
    }
  }

  async growTopic(topic: string, partitions: number): Promise<void> {
    const admin = await this.#adminClient();
    await admin.createPartitions({ topicPartitions: [{ topic, count: partitions }] });
    // Usable once every new partition has a leader.
    for (let attempt = 1; attempt <= 40; attempt++) {
      const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
      const found = metadata.topics[0]?.partitions ?? [];
      if (found.length >= partitions && found.every((p) => p.leader >= 0)) return;
      await sleep(Math.min(1_000, 50 * attempt));
    }
    throw new PolyvisionError('bus_topics_not_ready', `topic ${topic} has no leaders for its new partitions yet`);
  }

  async deleteTopics(topics: string[]): Promise<void> {
    if (topics.length === 0) return;
    const admin = await this.#adminClient();
    const existing = new Set(await admin.listTopics());
    const present = topics.filter((topic) => existing.has(topic));
    if (present.length > 0) await admin.deleteTopics({ topics: present });
  }

  async groupLag(groupId: string, topic: string): Promise<Map<number, number>> {
    const admin = await this.#adminClient();
    const [ends, committed] = await Promise.all([
      admin.fetchTopicOffsets(topic),
      admin.fetchOffsets({ groupId, topics: [topic] }),
    ]);
    const committedBy = new Map(
      (committed[0]?.partitions ?? []).map((p) => [p.partition, Math.max(0, Number(p.offset))]),
    );
    return new Map(ends.map((end) => [end.partition, Number(end.high) - (committedBy.get(end.partition) ?? 0)]));
  }

  async close(): Promise<void> {
    await this.#open.closeAll();
    if (this.#admin) await this.#admin.disconnect();
    this.#admin = null;
  }

  async #adminClient(): Promise<Admin> {
    if (!this.#admin) {
      const admin = this.#kafka.admin();
      await admin.connect();
      this.#admin = admin;
    }
    return this.#admin;
  }
}

class KafkaConsumer implements BusConsumer {
  readonly #consumer: Consumer;
  readonly #options: ConsumerOptions;
  #running = false;
  #inFlight = new Set<Promise<void>>();

  constructor(consumer: Consumer, options: ConsumerOptions) {
    this.#consumer = consumer;
    this.#options = options;
    consumer.on(consumer.events.GROUP_JOIN, (event) => {
      const partitions: Record<string, number[]> = {};
      for (const [topic, list] of Object.entries(event.payload.memberAssignment)) {
        partitions[topic] = [...(list as number[])].sort((a, b) => a - b);
      }
      void Promise.resolve(
        options.onAssigned?.({ partitions, generation: null, memberId: event.payload.memberId }),
      ).catch(() => {});
    });
    consumer.on(consumer.events.REBALANCING, () => {
      void Promise.resolve(options.onRevoked?.()).catch(() => {});
    });
  }

  async run(handlers: RunHandlers): Promise<void> {
    if (!handlers.eachMessage && !handlers.eachBatch) {
      throw new PolyvisionError('bus_no_handler', 'run() needs eachMessage or eachBatch');
    }
    await this.#consumer.connect();
    for (const topic of this.#options.topics) {
      await this.#consumer.subscribe({ topic, fromBeginning: this.#options.fromBeginning ?? true });
    }
    this.#running = true;
    const backoffMs = this.#options.retryBackoffMs ?? 200;
    await this.#consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: this.#options.partitionsConsumedConcurrently ?? 12,
      eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
        const work = (async () => {
          const records: BusRecord[] = batch.messages.map((m) => ({
            topic: batch.topic,
            partition: batch.partition,
            offset: m.offset,
            key: m.key ? m.key.toString('utf8') : null,
            value: m.value ? m.value.toString('utf8') : '',
            headers: Object.fromEntries(
              Object.entries(m.headers ?? {}).map(([k, v]) => [k, Buffer.isBuffer(v) ? v.toString('utf8') : String(v)]),
            ),
            timestampMs: Number(m.timestamp),
          }));
          const context = { heartbeat: () => heartbeat() };
          const commit = async (record: BusRecord) => {
            resolveOffset(record.offset);
            await this.#consumer.commitOffsets([
              { topic: record.topic, partition: record.partition, offset: String(BigInt(record.offset) + 1n) },
            ]);
          };
          try {
            if (handlers.eachBatch) {
              if (records.length === 0 || !isRunning() || isStale()) return;
              await handlers.eachBatch(records, context);
              await commit(records[records.length - 1]!);
              return;
            }
            for (const record of records) {
              if (!isRunning() || isStale()) return;
              await handlers.eachMessage!(record, context);
              await commit(record);
            }
          } catch {
            // Not committed: kafkajs fetches again from the last resolved offset.
            if (isRunning()) await sleep(backoffMs);
          }
        })();
        this.#inFlight.add(work);
        try {
          await work;
        } finally {
          this.#inFlight.delete(work);
        }
      },
    });
  }

  pause(topic: string, partitions?: number[]): void {
    this.#consumer.pause([partitions ? { topic, partitions } : { topic }]);
  }

  resume(topic: string, partitions?: number[]): void {
    this.#consumer.resume([partitions ? { topic, partitions } : { topic }]);
  }

  async close(): Promise<void> {
    // kafkajs's disconnect stops fetching, waits for the running batches, then leaves the group.
    if (this.#running) await this.#consumer.stop();
    await Promise.allSettled([...this.#inFlight]);
    await this.#consumer.disconnect();
    this.#running = false;
  }
}
