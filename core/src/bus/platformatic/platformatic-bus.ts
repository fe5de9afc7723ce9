/**
 * The Kafka driver of the `MessageBus` port on `@platformatic/kafka` (pure
 * TypeScript, maintained; issue #20). The default Kafka client: kafkajs stays
 * selectable with `KAFKA_CLIENT=kafkajs` (`create-bus.ts`).
 *
 * What it changes for the port's users: group heartbeats run on the client's
 * own timer, so a member whose handler runs for half an hour stays in its group
 * without calling `context.heartbeat()` (a no-op here), and a member rejoins a
 * rebalance at once instead of after its in-flight handlers, which makes
 * rebalances and failover quicker (bench/bus, bench/orchestrator).
 *
 * Producers place keys with Kafka's murmur2 partitioner
 * (`compatibilityPartitioner`, the same as kafkajs's default and
 * {@link partitionForKey}); the library's own default differs for negative
 * hashes and would put keys elsewhere. Producers are idempotent (KIP-98's
 * producer id and per-partition sequence numbers), so a retried request never
 * writes a message twice.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Admin, compatibilityPartitioner, ProduceAcks, Producer, stringSerializers } from '@platformatic/kafka';
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
import { OpenHandles } from '../open-handles.ts';
import { PlatformaticConsumer } from './platformatic-consumer.ts';

export interface PlatformaticBusOptions {
  /** `host:port` list (KAFKA_BROKERS split on commas). */
  brokers: string[];
  /** @defaultValue 'polyvision' */
  clientId?: string;
  /** Connection timeout per broker. @defaultValue 3_000 */
  connectionTimeoutMs?: number;
}

/** How a topic looks to the admin client: partition leaders (−1: none yet). */
type Leaders = Map<string, number[]>;

export class PlatformaticBus implements MessageBus {
  readonly kind = 'kafka';
  readonly #brokers: string[];
  readonly #clientId: string;
  readonly #connectTimeoutMs: number;
  #admin: Admin | null = null;
  readonly #open = new OpenHandles();

  constructor(options: PlatformaticBusOptions) {
    if (options.brokers.length === 0) {
      throw new PolyvisionError('bus_config', 'PlatformaticBus needs at least one broker (KAFKA_BROKERS)');
    }
    this.#brokers = options.brokers;
    this.#clientId = options.clientId ?? 'polyvision';
    this.#connectTimeoutMs = options.connectionTimeoutMs ?? 3_000;
  }

  createProducer(): BusProducer {
    const producer = new Producer<string, string, string, string>({
      clientId: this.#clientId,
      bootstrapBrokers: this.#brokers,
      connectTimeout: this.#connectTimeoutMs,
      serializers: stringSerializers,
      partitioner: compatibilityPartitioner,
      autocreateTopics: false,
      // One produce request carries every partition a broker leads, and the client retries the whole request
      // when any partition fails (a fresh topic's leader not elected yet): without the broker's per-partition
      // sequence check the partitions that had been written got the batch twice (1 in 5 runs of the conformance
      // test). Idempotence also makes acks=all and one request in flight.
      idempotent: true,
      retries: 8,
      retryDelay: 250,
    });
    const handle = {
      send: async (topic: string, messages: OutgoingMessage[]) => {
        await producer.send({
          acks: ProduceAcks.ALL,
          messages: messages.map((m) => ({ topic, key: m.key, value: m.value, headers: m.headers ?? {} })),
        });
      },
      close: () => producer.close(),
    };
    return this.#open.track(handle);
  }

  createConsumer(options: ConsumerOptions): BusConsumer {
    const handle = new PlatformaticConsumer(
      { brokers: this.#brokers, clientId: this.#clientId, connectTimeoutMs: this.#connectTimeoutMs },
      options,
    );
    return this.#open.track(handle);
  }

  async ensureTopics(specs: TopicSpec[]): Promise<void> {
    const admin = this.#adminClient();
    for (let attempt = 1; ; attempt++) {
      try {
        const existing = new Set(await admin.listTopics());
        const missing = specs.filter((spec) => !existing.has(spec.topic));
        // One request per partition count (createTopics takes one count for all its topics).
        for (const partitions of new Set(missing.map((spec) => spec.partitions))) {
          await admin.createTopics({
            topics: missing.filter((spec) => spec.partitions === partitions).map((spec) => spec.topic),
            partitions,
            replicas: -1,
          });
        }
        const leaders = await this.#leaders(specs.map((spec) => spec.topic));
        const ready = specs.every((spec) => (leaders.get(spec.topic) ?? []).every((leader) => leader >= 0));
        if (ready && specs.every((spec) => leaders.has(spec.topic))) return;
      } catch (error) {
        // A concurrent creator won (topic already exists), or leaders are still being elected.
        if (attempt >= 20) throw error;
      }
      if (attempt >= 20) throw new PolyvisionError('bus_topics_not_ready', 'topics have no partition leaders yet');
      await sleep(Math.min(1_000, 50 * attempt));
    }
  }

  async describeTopics(topics: string[]): Promise<Map<string, TopicState>> {
    const admin = this.#adminClient();
    for (let attempt = 1; ; attempt++) {
      try {
        const existing = new Set(await admin.listTopics());
        const present = topics.filter((topic) => existing.has(topic));
        const states = new Map<string, TopicState>();
        if (present.length === 0) return states;
        const leaders = await this.#leaders(present);
        const listed = await admin.listOffsets({
          topics: present.map((name) => ({
            name,
            partitions: (leaders.get(name) ?? []).map((_, partitionIndex) => ({ partitionIndex, timestamp: -1n })),
          })),
        });
        for (const topic of listed) {
          states.set(topic.name, {
            partitions: topic.partitions.length,
            messagesWritten: topic.partitions.reduce((sum, p) => sum + Number(p.offset), 0),
          });
        }
        return states;
      } catch (error) {
        // Leaders of a just-created topic are still being elected.
        if (attempt >= 20) throw error;
        await sleep(Math.min(1_000, 50 * attempt));
      }
    }
  }

  async growTopic(topic: string, partitions: number): Promise<void> {
    const admin = this.#adminClient();
    await admin.createPartitions({ topics: [{ name: topic, count: partitions }] });
    // Usable once every new partition has a leader.
    for (let attempt = 1; attempt <= 40; attempt++) {
      const found = (await this.#leaders([topic])).get(topic) ?? [];
      if (found.length >= partitions && found.every((leader) => leader >= 0)) return;
      await sleep(Math.min(1_000, 50 * attempt));
    }
    throw new PolyvisionError('bus_topics_not_ready', `topic ${topic} has no leaders for its new partitions yet`);
  }

  async deleteTopics(topics: string[]): Promise<void> {
    if (topics.length === 0) return;
    const admin = this.#adminClient();
    const existing = new Set(await admin.listTopics());
    const present = topics.filter((topic) => existing.has(topic));
    if (present.length > 0) await admin.deleteTopics({ topics: present });
  }

  async groupLag(groupId: string, topic: string): Promise<Map<number, number>> {
    const admin = this.#adminClient();
    const leaders = await this.#leaders([topic]);
    const partitions = (leaders.get(topic) ?? []).map((_, partitionIndex) => partitionIndex);
    const [ends, committed] = await Promise.all([
      admin.listOffsets({
        topics: [{ name: topic, partitions: partitions.map((partitionIndex) => ({ partitionIndex, timestamp: -1n })) }],
      }),
      admin.listConsumerGroupOffsets({
        groups: [{ groupId, topics: [{ name: topic, partitionIndexes: partitions }] }],
      }),
    ]);
    const committedBy = new Map<number, number>();
    for (const group of committed) {
      for (const t of group.topics) {
        for (const p of t.partitions) committedBy.set(p.partitionIndex, Math.max(0, Number(p.committedOffset)));
      }
    }
    const lag = new Map<number, number>();
    for (const p of ends[0]?.partitions ?? []) {
      lag.set(p.partitionIndex, Number(p.offset) - (committedBy.get(p.partitionIndex) ?? 0));
    }
    return lag;
  }

  async close(): Promise<void> {
    await this.#open.closeAll();
    await this.#admin?.close();
    this.#admin = null;
  }

  /** Partition leaders per topic, from fresh metadata (a grown topic must show its new count). */
  async #leaders(topics: string[]): Promise<Leaders> {
    const metadata = await this.#adminClient().metadata({ topics, forceUpdate: true });
    const leaders: Leaders = new Map();
    for (const [name, topic] of metadata.topics) {
      if (topics.includes(name))
        leaders.set(
          name,
          topic.partitions.map((p) => p.leader),
        );
    }
    return leaders;
  }

  #adminClient(): Admin {
    this.#admin ??= new Admin({
      clientId: `${this.#clientId}-admin`,
      bootstrapBrokers: this.#brokers,
      connectTimeout: this.#connectTimeoutMs,
      retries: 5,
      retryDelay: 200,
    });
    return this.#admin;
  }
}
