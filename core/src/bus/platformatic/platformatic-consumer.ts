/**
 * A `BusConsumer` on `@platformatic/kafka`: one group member whose
 * `MessagesStream` (committed offsets, earliest or latest when the group has
 * none) feeds one lane per partition.
 *
 * - Lanes run one record at a time, in offset order; up to
 *   `partitionsConsumedConcurrently` lanes run at once. After its handler
 *   resolves a record's offset + 1 is queued for commit; a throw keeps it at
 *   the head of its lane, handed again after `retryBackoffMs`.
 * - Commits are coalesced (the latest offset per partition, every
 *   {@link COMMIT_INTERVAL_MS}) and never sent while the group rebalances:
 *   the client answers a commit refused for a rebalance by joining the group
 *   again, and commits racing a rebalance made rejoin storms (graceful
 *   failover of 5–6 s instead of under one). `close()` flushes them before
 *   leaving the group.
 * - On each group join the lanes of partitions no longer assigned are
 *   dropped (their uncommitted records go to the new owner) and their fetch
 *   positions forgotten, so the stream starts a partition that comes back
 *   from the committed offset. Records the stream fetches again for a kept
 *   partition (it rewinds to the committed offset on every join) are skipped
 *   by offset. `onAssigned` is awaited before any record of the assignment.
 * - Heartbeats run on the client's timer, independent of handlers: a long
 *   handler never makes its member miss the session timeout.
 * - The stream is paused while more than {@link MAX_BUFFERED} records wait in
 *   lanes that may run, and resumed below half of it.
 * - A stream that fails (broker gone for longer than the client's retries) is
 *   opened again after a backoff, for as long as the consumer is open.
 * - A session timeout below the broker's `group.min.session.timeout.ms`
 *   (Kafka's default is 6 s; the project's template sets 1 s) is raised to that
 *   minimum with a process warning (`POLYVISION_KAFKA_SESSION_TIMEOUT`) instead
 *   of failing the join: failover is then slower than configured, not broken.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  Consumer,
  type Message,
  type MessagesStream,
  MessagesStreamFallbackModes,
  MessagesStreamModes,
  stringDeserializers,
} from '@platformatic/kafka';
import { PolyvisionError } from '@polyvision/shared';
import type { BusConsumer, BusRecord, ConsumerOptions, EachMessageContext, RunHandlers } from '../message-bus.ts';
import { brokerMinSessionTimeoutMs, isInvalidSessionTimeout } from './session-timeout.ts';

/** Records waiting in runnable lanes above which the stream stops fetching. */
const MAX_BUFFERED = 2_000;
/** Long-poll of one fetch: a partition assigned while a fetch is in flight is fetched after at most this. */
const MAX_WAIT_MS = 500;
/** How long handled offsets wait to be committed together. */
const COMMIT_INTERVAL_MS = 50;
/** Heartbeats happen in the background: the context's heartbeat has nothing to do. */
const context: EachMessageContext = { heartbeat: () => Promise.resolve() };

type StringMessage = Message<string, string, string, string>;

interface CommitOffset {
  topic: string;
  partition: number;
  offset: bigint;
  leaderEpoch: number;
}

interface Lane {
  topic: string;
  partition: number;
  queue: StringMessage[];
  /** Highest offset queued since the lane was last dropped (−1: none). */
  lastQueued: bigint;
  /** Bumped when the lane is dropped: a handler finishing afterwards must neither dequeue nor commit. */
  epoch: number;
  running: boolean;
}

export interface PlatformaticConnection {
  brokers: string[];
  clientId: string;
  connectTimeoutMs: number;
}

export class PlatformaticConsumer implements BusConsumer {
  readonly #options: ConsumerOptions;
  readonly #connection: PlatformaticConnection;
  /** The session timeout the group runs with (the option, or the broker's minimum when that is higher). */
  #sessionTimeoutMs: number;
  readonly #consumer: Consumer<string, string, string, string>;
  readonly #lanes = new Map<string, Lane>();
  readonly #assigned = new Set<string>();
  readonly #paused = new Set<string>();
  readonly #inFlight = new Set<Promise<void>>();
  readonly #slotWaiters: Array<() => void> = [];
  #handlers: RunHandlers | null = null;
  #stream: MessagesStream<string, string, string, string> | null = null;
  #streamPaused = false;
  #running = 0;
  #closed = false;
  /** Offsets (next to read) waiting to be committed, per `topic:partition`. */
  readonly #pendingCommits = new Map<string, CommitOffset>();
  #commitTimer: NodeJS.Timeout | null = null;
  #committing: Promise<void> | null = null;
  /** Between the client's `group:rebalance` and the next `group:join`: no commits. */
  #rebalancing = false;
  /** Settles once `onAssigned` of the current assignment has run. */
  #assignedReady: Promise<void> = Promise.resolve();

  constructor(connection: PlatformaticConnection, options: ConsumerOptions) {
    this.#options = options;
    this.#connection = connection;
    const sessionTimeoutMs = options.sessionTimeoutMs ?? 10_000;
    this.#sessionTimeoutMs = sessionTimeoutMs;
    this.#consumer = new Consumer({
      clientId: connection.clientId,
      bootstrapBrokers: connection.brokers,
      connectTimeout: connection.connectTimeoutMs,
      groupId: options.groupId,
      deserializers: stringDeserializers,
      autocommit: false,
      sessionTimeout: sessionTimeoutMs,
      heartbeatInterval: options.heartbeatIntervalMs ?? Math.floor(sessionTimeoutMs / 3),
      rebalanceTimeout: Math.max(sessionTimeoutMs, 10_000),
      maxWaitTime: MAX_WAIT_MS,
      retries: 10,
      retryDelay: 250,
    });
    this.#consumer.on('consumer:group:join', () => this.#onJoin());
    this.#consumer.on('consumer:group:rebalance', () => {
      this.#rebalancing = true;
      void Promise.resolve(options.onRevoked?.()).catch(() => {});
    });
    // A failed heartbeat is retried by the client; without a listener an 'error' event would throw.
    this.#consumer.on('error', () => {});
  }

  async run(handlers: RunHandlers): Promise<void> {
    if (!handlers.eachMessage && !handlers.eachBatch) {
      throw new PolyvisionError('bus_no_handler', 'run() needs eachMessage or eachBatch');
    }
    this.#handlers = handlers;
    try {
      await this.#openStream();
    } catch (error) {
      if (!isInvalidSessionTimeout(error)) throw error;
      const minimumMs = await brokerMinSessionTimeoutMs(this.#connection);
      if (minimumMs === null || minimumMs <= this.#sessionTimeoutMs) throw error;
      process.emitWarning(
        `Kafka group ${this.#options.groupId}: session timeout ${this.#sessionTimeoutMs} ms is below the broker's ` +
          `group.min.session.timeout.ms (${minimumMs} ms); running with ${minimumMs} ms. Set group.min.session.timeout.ms=1000 ` +
          'on the broker (deploy/services/kafka/server.properties.template) for the configured failover time.',
        { code: 'POLYVISION_KAFKA_SESSION_TIMEOUT' },
      );
      this.#sessionTimeoutMs = minimumMs;
      await this.#openStream();
    }
  }

  pause(topic: string, partitions?: number[]): void {
    for (const key of this.#keys(topic, partitions)) this.#paused.add(key);
  }

  resume(topic: string, partitions?: number[]): void {
    for (const key of this.#keys(topic, partitions)) this.#paused.delete(key);
    for (const lane of this.#lanes.values()) this.#kick(lane);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const wake of this.#slotWaiters.splice(0)) wake();
    await Promise.allSettled([...this.#inFlight]);
    if (this.#commitTimer) clearTimeout(this.#commitTimer);
    this.#commitTimer = null;
    await this.#committing;
    await this.#flushCommits(true);
    // Closing the consumer closes its streams and leaves the group: the partitions move at once.
    await this.#consumer.close(true).catch(() => {});
  }

  async #openStream(): Promise<void> {
    const stream = await this.#consumer.consume({
      topics: this.#options.topics,
      mode: MessagesStreamModes.COMMITTED,
      fallbackMode:
        (this.#options.fromBeginning ?? true)
          ? MessagesStreamFallbackModes.EARLIEST
          : MessagesStreamFallbackModes.LATEST,
      autocommit: false,
      maxWaitTime: MAX_WAIT_MS,
      sessionTimeout: this.#sessionTimeoutMs,
      rebalanceTimeout: Math.max(this.#sessionTimeoutMs, 10_000),
      heartbeatInterval: Math.min(
        this.#options.heartbeatIntervalMs ?? Math.floor(this.#sessionTimeoutMs / 3),
        Math.floor(this.#sessionTimeoutMs / 3),
      ),
    });
    this.#stream = stream;
    this.#streamPaused = false;
    stream.on('data', (message: StringMessage) => this.#enqueue(message));
    stream.on('error', () => {
      if (this.#stream === stream) this.#stream = null;
      void this.#reopen();
    });
  }

  async #reopen(): Promise<void> {
    for (let attempt = 1; !this.#closed && !this.#stream; attempt++) {
      await sleep(Math.min(5_000, 250 * attempt));
      if (this.#closed) return;
      try {
        await this.#openStream();
      } catch {
        // Broker still unreachable: try again.
      }
    }
  }

  #onJoin(): void {
    const now = new Set<string>();
    for (const assignment of this.#consumer.assignments ?? []) {
      for (const partition of assignment.partitions) now.add(`${assignment.topic}:${partition}`);
    }
    for (const [key, lane] of this.#lanes) {
      if (now.has(key)) continue;
      lane.queue = [];
      lane.lastQueued = -1n;
      lane.epoch += 1;
      // Forget the fetch position: if the partition comes back, the stream starts it from the committed offset.
      this.#stream?.offsetsToFetch.delete(key);
    }
    this.#assigned.clear();
    for (const key of now) this.#assigned.add(key);
    this.#rebalancing = false;
    for (const key of [...this.#pendingCommits.keys()]) if (!now.has(key)) this.#pendingCommits.delete(key);
    this.#scheduleCommit();
    const partitions: Record<string, number[]> = {};
    for (const assignment of this.#consumer.assignments ?? []) {
      partitions[assignment.topic] = [...assignment.partitions].sort((a, b) => a - b);
    }
    const onAssigned = this.#options.onAssigned;
    this.#assignedReady = Promise.resolve(
      onAssigned?.({
        partitions,
        generation: this.#consumer.generationId,
        memberId: this.#consumer.memberId ?? '',
      }),
    ).catch(() => {});
    this.#updateBackpressure();
    for (const lane of this.#lanes.values()) this.#kick(lane);
  }

  #enqueue(message: StringMessage): void {
    const key = `${message.topic}:${message.partition}`;
    if (!this.#assigned.has(key)) return; // fetched before a rebalance took the partition away
    let lane = this.#lanes.get(key);
    if (!lane) {
      lane = {
        topic: message.topic,
        partition: message.partition,
        queue: [],
        lastQueued: -1n,
        epoch: 0,
        running: false,
      };
      this.#lanes.set(key, lane);
    }
    if (message.offset <= lane.lastQueued) return; // fetched again after a join rewound to the committed offset
    lane.lastQueued = message.offset;
    lane.queue.push(message);
    this.#updateBackpressure();
    this.#kick(lane);
  }

  #kick(lane: Lane): void {
    if (lane.running || this.#closed || !this.#runnable(lane) || lane.queue.length === 0) return;
    lane.running = true;
    const work = this.#drain(lane).finally(() => {
      lane.running = false;
      this.#inFlight.delete(work);
      this.#kick(lane); // records that arrived while the last handler was finishing
    });
    this.#inFlight.add(work);
  }

  #runnable(lane: Lane): boolean {
    const key = `${lane.topic}:${lane.partition}`;
    return this.#assigned.has(key) && !this.#paused.has(key) && !this.#paused.has(`${lane.topic}:*`);
  }

  async #drain(lane: Lane): Promise<void> {
    const handlers = this.#handlers!;
    const backoffMs = this.#options.retryBackoffMs ?? 200;
    while (!this.#closed && this.#runnable(lane) && lane.queue.length > 0) {
      await this.#assignedReady;
      await this.#acquireSlot();
      try {
        if (this.#closed || !this.#runnable(lane) || lane.queue.length === 0) return;
        const epoch = lane.epoch;
        const batch = handlers.eachBatch ? [...lane.queue] : [lane.queue[0]!];
        try {
          if (handlers.eachBatch) await handlers.eachBatch(batch.map(toRecord), context);
          else await handlers.eachMessage!(toRecord(batch[0]!), context);
        } catch {
          // Not committed: the same record is handed again after the backoff.
          await sleep(backoffMs);
          continue;
        }
        if (lane.epoch !== epoch) return; // the partition moved on while the handler ran
        lane.queue.splice(0, batch.length);
        this.#updateBackpressure();
        const last = batch[batch.length - 1]!;
        this.#pendingCommits.set(`${last.topic}:${last.partition}`, {
          topic: last.topic,
          partition: last.partition,
          offset: last.offset + 1n,
          leaderEpoch: last.leaderEpoch,
        });
        this.#scheduleCommit();
      } finally {
        this.#releaseSlot();
      }
    }
  }

  #scheduleCommit(): void {
    if (this.#commitTimer || this.#closed || this.#rebalancing || this.#pendingCommits.size === 0) return;
    this.#commitTimer = setTimeout(() => {
      this.#commitTimer = null;
      void this.#flushCommits(false);
    }, COMMIT_INTERVAL_MS);
  }

  /**
   * Sends the pending offsets of assigned partitions in one commit (one at a
   * time). A refused commit puts its offsets back unless newer ones are
   * pending; they go with the next commit, after the rebalance if there is one.
   */
  async #flushCommits(closing: boolean): Promise<void> {
    if (this.#committing || (this.#rebalancing && !closing)) return;
    const offsets = [...this.#pendingCommits.entries()]
      .filter(([key]) => this.#assigned.has(key))
      .map(([, offset]) => offset);
    this.#pendingCommits.clear();
    if (offsets.length === 0) return;
    this.#committing = this.#consumer
      .commit({ offsets })
      .catch(() => {
        for (const offset of offsets) {
          const key = `${offset.topic}:${offset.partition}`;
          if (!this.#pendingCommits.has(key) && this.#assigned.has(key)) this.#pendingCommits.set(key, offset);
        }
      })
      .finally(() => {
        this.#committing = null;
        if (!closing) this.#scheduleCommit();
      });
    await this.#committing;
  }

  async #acquireSlot(): Promise<void> {
    const limit = this.#options.partitionsConsumedConcurrently ?? 12;
    while (this.#running >= limit && !this.#closed) {
      await new Promise<void>((resolve) => this.#slotWaiters.push(resolve));
    }
    this.#running += 1;
  }

  #releaseSlot(): void {
    this.#running -= 1;
    this.#slotWaiters.shift()?.();
  }

  #updateBackpressure(): void {
    const stream = this.#stream;
    if (!stream) return;
    let waiting = 0;
    for (const lane of this.#lanes.values()) if (this.#runnable(lane)) waiting += lane.queue.length;
    if (!this.#streamPaused && waiting > MAX_BUFFERED) {
      this.#streamPaused = true;
      stream.pause();
    } else if (this.#streamPaused && waiting < MAX_BUFFERED / 2) {
      this.#streamPaused = false;
      stream.resume();
    }
  }

  #keys(topic: string, partitions?: number[]): string[] {
    return partitions ? partitions.map((p) => `${topic}:${p}`) : [`${topic}:*`];
  }
}

function toRecord(message: StringMessage): BusRecord {
  const headers: Record<string, string> = {};
  for (const [key, value] of message.headers) headers[String(key)] = value == null ? '' : String(value);
  return {
    topic: message.topic,
    partition: message.partition,
    offset: message.offset.toString(),
    key: message.key ?? null,
    value: message.value ?? '',
    headers,
    timestampMs: Number(message.timestamp),
  };
}
