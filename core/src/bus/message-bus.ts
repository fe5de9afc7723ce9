/**
 * The `MessageBus` port: Kafka-style topics with partitions, keyed
 * partitioning, consumer groups with manual commits. Drivers: Kafka through
 * `@platformatic/kafka` (`platformatic/`, the default) or kafkajs (`kafka/`,
 * `KAFKA_CLIENT=kafkajs`), and in-memory (`memory/`) for the embedded default.
 *
 * Delivery contract, the same for both drivers:
 * - Messages with the same key land on the same partition (Kafka's murmur2
 *   default partitioner) and are handled in order, one at a time per partition;
 *   different partitions are handled concurrently.
 * - The offset is committed only after the handler resolves. If the handler
 *   throws, nothing is committed and the same message is handed again after a
 *   backoff (the partition does not move on past it).
 * - When a member joins or leaves (or dies, after the session timeout), the
 *   group rebalances: uncommitted messages are redelivered to the new owner.
 */

/** One consumed message. */
export interface BusRecord {
  topic: string;
  partition: number;
  /** Kafka offset as a decimal string. */
  offset: string;
  key: string | null;
  value: string;
  headers: Record<string, string>;
  /** Producer timestamp, milliseconds since the epoch. */
  timestampMs: number;
}

/** One message to produce. */
export interface OutgoingMessage {
  /** Partitioning key; `${organization_id}:${match_id}` for Polyvision topics. */
  key: string;
  value: string;
  headers?: Record<string, string>;
}

/** The partitions a group member holds after a rebalance. */
export interface Assignment {
  /** Topic → partitions, sorted. */
  partitions: Record<string, number[]>;
  /**
   * The group generation of this assignment when the driver knows it
   * (in-memory always; kafkajs does not expose it: `null`). Fencing must not
   * depend on it alone.
   */
  generation: number | null;
  memberId: string;
}

export interface ConsumerOptions {
  groupId: string;
  topics: string[];
  /** Start from the earliest offset when the group has none. @defaultValue true */
  fromBeginning?: boolean;
  /** Kafka session timeout: a silent member is removed after this. @defaultValue 10_000 */
  sessionTimeoutMs?: number;
  /** @defaultValue sessionTimeoutMs / 3 */
  heartbeatIntervalMs?: number;
  /** How many partitions are handled at once. @defaultValue 12 */
  partitionsConsumedConcurrently?: number;
  /** Backoff before a message whose handler threw is handed again. @defaultValue 200 */
  retryBackoffMs?: number;
  /**
   * Called after each rebalance with the member's new assignment. In memory it
   * is awaited before any message of the assignment; with Kafka it is called
   * synchronously from kafkajs's GROUP_JOIN event (before the first fetch) but
   * a returned promise is not awaited: keep it synchronous, or make handlers
   * wait for what it starts (as the orchestrator does with partition claims).
   */
  onAssigned?(assignment: Assignment): Promise<void> | void;
  /** Called when a rebalance starts; the member's partitions are about to be taken away. */
  onRevoked?(): Promise<void> | void;
}

export interface EachMessageContext {
  /** Tells the group this member is alive during long handlers (Kafka only; no-op in memory). */
  heartbeat(): Promise<void>;
}

export interface RunHandlers {
  eachMessage?(record: BusRecord, context: EachMessageContext): Promise<void>;
  /** All records handed at once for one partition; committed together after it resolves. */
  eachBatch?(records: BusRecord[], context: EachMessageContext): Promise<void>;
}

export interface BusConsumer {
  /** Joins the group and starts handing messages; resolves once running. */
  run(handlers: RunHandlers): Promise<void>;
  /** Stops fetching from the partitions (all of the topic when omitted) until resumed. */
  pause(topic: string, partitions?: number[]): void;
  resume(topic: string, partitions?: number[]): void;
  /** Stops fetching, waits for in-flight handlers, commits, leaves the group. */
  close(): Promise<void>;
}

export interface BusProducer {
  /** Sends and waits for the broker's acknowledgement (all in-sync replicas). */
  send(topic: string, messages: OutgoingMessage[]): Promise<void>;
  close(): Promise<void>;
}

export interface TopicSpec {
  topic: string;
  partitions: number;
  /**
   * The partition count is part of a contract (keys are placed by
   * `murmur2(key) % partitions` and the partition is stored with the data, as
   * for `jobs.commands`): the topic must have exactly this many, and may be
   * grown only while nothing was ever written to it. @defaultValue false
   */
  exact?: boolean;
}

/** What the broker holds for a topic. */
export interface TopicState {
  partitions: number;
  /** Messages ever written: the sum of the partitions' high watermarks (0: never used). */
  messagesWritten: number;
}

export interface MessageBus {
  /** `kafka` or `memory`, for logs. */
  readonly kind: string;
  createProducer(): BusProducer;
  createConsumer(options: ConsumerOptions): BusConsumer;
  /** Creates the topics that do not exist; existing ones are left as they are. */
  ensureTopics(specs: TopicSpec[]): Promise<void>;
  /** Partition count and use of the topics that exist (missing ones are absent from the map). */
  describeTopics(topics: string[]): Promise<Map<string, TopicState>>;
  /** Adds partitions to `topic` up to `partitions` in all (Kafka cannot remove any). */
  growTopic(topic: string, partitions: number): Promise<void>;
  /** Deletes topics (tests clean up after themselves). */
  deleteTopics(topics: string[]): Promise<void>;
  /** Committed-offset lag of a group, per `topic:partition` (high watermark − committed). */
  groupLag(groupId: string, topic: string): Promise<Map<number, number>>;
  close(): Promise<void>;
}
