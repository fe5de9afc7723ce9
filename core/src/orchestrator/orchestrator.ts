import { setTimeout as sleep } from 'node:timers/promises';
import {
  coerceError,
  isRetriable,
  type JobCommand,
  jobCommandSchema,
  jobKey,
  jobProcessedKey,
  type Logger,
  PolyvisionError,
  Registry,
  silentLogger,
} from '@polyvision/shared';
import type { Assignment, BusConsumer, BusProducer, BusRecord, MessageBus } from '../bus/message-bus.ts';
import type { Database } from '../db/database.ts';
import { groupNames, type TopicNames, topicNames } from './contracts/topics.ts';
import { sendToDeadLetter } from './dead-letter.ts';
import { PartitionFencedError, PoisonMessageError } from './errors.ts';
import { PartitionOwnership } from './fencing/partition-ownership.ts';
import { type IdempotencyCache, JOB_PROCESSED_TTL_MS } from './idempotency/idempotency-cache.ts';
import { createOrchestratorMetrics, type OrchestratorMetrics } from './metrics/orchestrator-metrics.ts';
import { compileOrchestratorTuning, type OrchestratorTuning } from './options.ts';
import { OutboxRelay } from './outbox/outbox-relay.ts';
import { JobStateMachine, type TransitionResult } from './state/job-state-machine.ts';

export interface OrchestratorOptions {
  bus: MessageBus;
  /** Migrated database (see `migrate`). */
  db: Database;
  /** Redis fast path of `job:processed:{job_id}`. */
  idempotency: IdempotencyCache;
  /** @defaultValue silentLogger */
  logger?: Logger;
  /** Where the metrics go (`/metrics`). @defaultValue a private registry */
  registry?: Registry;
  tuning?: Partial<OrchestratorTuning>;
}

/** What handling one record ended in (tests and benchmarks observe it). */
export type HandleOutcome = TransitionResult['outcome'] | 'dead_lettered';

/**
 * One orchestrator replica: a member of the consumer group
 * `polyvision-orchestrator` over `polyvision.jobs.commands` (12 partitions).
 * All replicas are active; each handles the partitions it is assigned
 * (seeds, orchestrator-ha-decision.md, "Partitioned load distribution").
 *
 * For each command, in order per partition:
 * 1. parse and validate (shared `jobCommandSchema`, key = `${organization_id}:${match_id}`);
 *    a poison message goes to `polyvision.dlq` and its offset is committed;
 * 2. `job.submit` only: skip when Redis says `job:processed:{job_id}`;
 * 3. one transaction: fencing check (`partition_owners` epoch), insert the
 *    message id into `processed_messages` (a duplicate stops here), apply the
 *    state machine, write tasks and events to the outbox;
 * 4. after COMMIT, the bus commits the offset and the relay publishes.
 * A transient error (database down) throws: the bus hands the same message
 * again after a backoff, without moving past it.
 */
export class Orchestrator {
  readonly tuning: OrchestratorTuning;
  readonly topics: TopicNames;
  readonly groupId: string;
  readonly metrics: OrchestratorMetrics;
  readonly #bus: MessageBus;
  readonly #db: Database;
  readonly #idempotency: IdempotencyCache;
  readonly #logger: Logger;
  readonly #machine: JobStateMachine;
  readonly #ownership: PartitionOwnership;
  readonly #epochs = new Map<number, Promise<number>>();
  readonly #claimed = new Set<number>();
  /** The commands partitions Kafka assigned to this replica (claimed or not). */
  readonly #assigned = new Set<number>();
  /** Assigned partitions whose claim failed or was fenced: retried with backoff; `/health/ready` fails meanwhile. */
  readonly #claimProblems = new Map<number, { failures: number; since: number; error: string }>();
  /** Failures of the record being retried per partition (`partition:offset` → count), for the poison cap. */
  readonly #recordFailures = new Map<string, number>();
  #producer: BusProducer | null = null;
  #consumer: BusConsumer | null = null;
  #relay: OutboxRelay | null = null;
  #lagTimer: NodeJS.Timeout | null = null;
  #observers = new Set<(record: BusRecord, outcome: HandleOutcome, command: JobCommand | null) => void>();

  constructor(options: OrchestratorOptions) {
    this.tuning = compileOrchestratorTuning(options.tuning);
    this.topics = topicNames(this.tuning.topicPrefix);
    this.groupId = groupNames(this.tuning.topicPrefix).orchestrator;
    this.#bus = options.bus;
    this.#db = options.db;
    this.#idempotency = options.idempotency;
    this.#logger = (options.logger ?? silentLogger).child({ instance: this.tuning.instanceId });
    this.metrics = createOrchestratorMetrics(options.registry ?? new Registry());
    this.#machine = new JobStateMachine(this.tuning, this.topics);
    this.#ownership = new PartitionOwnership(this.#db, {
      consumerGroup: this.groupId,
      topic: this.topics.commands,
      owner: this.tuning.instanceId,
    });
  }

  /** The commands partitions this replica owns (claimed in `partition_owners`). */
  ownedPartitions(): number[] {
    return [...this.#claimed].sort((a, b) => a - b);
  }

  /**
   * Assigned partitions this replica cannot claim (database down, or fenced by
   * a claim that landed out of order): each is retried with backoff. Not
   * empty means the replica is not ready: those partitions' jobs stand still.
   */
  claimProblems(): Array<{ partition: number; failures: number; sinceMs: number; error: string }> {
    return [...this.#claimProblems].map(([partition, p]) => ({
      partition,
      failures: p.failures,
      sinceMs: Date.now() - p.since,
      error: p.error,
    }));
  }

  /** Calls `observer` after every handled record (tests, benchmarks). Returns the unsubscribe function. */
  observe(observer: (record: BusRecord, outcome: HandleOutcome, command: JobCommand | null) => void): () => void {
    this.#observers.add(observer);
    return () => this.#observers.delete(observer);
  }

  /** Joins the group and starts handling commands; resolves once the consumer runs. */
  async start(): Promise<void> {
    if (this.#consumer) throw new PolyvisionError('orchestrator_started', 'the orchestrator is already started');
    this.#producer = this.#bus.createProducer();
    this.#relay = new OutboxRelay({
      db: this.#db,
      producer: this.#producer,
      partitions: () => this.ownedPartitions(),
      batchSize: this.tuning.relayBatchSize,
      pollIntervalMs: this.tuning.relayPollIntervalMs,
      logger: this.#logger,
      onPublished: (count) => this.metrics.outboxPublished.inc(count),
    });
    this.#relay.start();
    this.#consumer = this.#bus.createConsumer({
      groupId: this.groupId,
      topics: [this.topics.commands],
      fromBeginning: true,
      sessionTimeoutMs: this.tuning.sessionTimeoutMs,
      heartbeatIntervalMs: this.tuning.heartbeatIntervalMs,
      retryBackoffMs: this.tuning.handlerRetryBackoffMs,
      partitionsConsumedConcurrently: 12,
      onAssigned: (assignment) => this.#onAssigned(assignment),
      onRevoked: () => this.#onRevoked(),
    });
    await this.#consumer.run({ eachMessage: (record) => this.#handle(record) });
    this.#lagTimer = setInterval(() => void this.#refreshLag(), this.tuning.lagPollIntervalMs);
    this.#lagTimer.unref();
    this.#logger.info({ bus: this.#bus.kind, db: this.#db.kind, group: this.groupId }, 'orchestrator started');
  }

  /**
   * Graceful stop (SIGTERM): stop fetching, let in-flight commands finish
   * and commit, leave the group (its partitions move at once), publish what
   * the outbox still holds for them, close the producer.
   */
  async close(): Promise<void> {
    if (this.#lagTimer) clearInterval(this.#lagTimer);
    await this.#consumer?.close();
    this.#consumer = null;
    try {
      await this.#relay?.publishDue();
    } catch (error) {
      this.#logger.warn({ err: error }, 'final outbox round failed; the next owner publishes the rows');
    }
    await this.#relay?.close();
    this.#relay = null;
    this.#epochs.clear();
    this.#claimed.clear();
    await this.#producer?.close();
    this.#producer = null;
    this.#logger.info('orchestrator stopped');
  }

  /**
   * Test hook (in-memory bus only): dies like `kill -9` — the group drops
   * this member at once without any commit, the relay stops; handlers in
   * flight go on as zombies, which fencing must stop from writing.
   *
   * @throws PolyvisionError `not_supported` on a bus without crash simulation.
   */
  async crashForTest(): Promise<void> {
    const consumer = this.#consumer as (BusConsumer & { simulateCrash?: () => Promise<void> }) | null;
    if (!consumer?.simulateCrash)
      throw new PolyvisionError('not_supported', 'crash simulation needs the in-memory bus');
    if (this.#lagTimer) clearInterval(this.#lagTimer);
    await this.#relay?.close();
    this.#relay = null;
    this.#assigned.clear(); // a dead process claims nothing again; its in-flight handlers are zombies
    await consumer.simulateCrash();
    this.#consumer = null;
  }

  #onAssigned(assignment: Assignment): void {
    const mine = assignment.partitions[this.topics.commands] ?? [];
    this.metrics.rebalanceCount.inc();
    this.#epochs.clear();
    this.#claimed.clear();
    this.#assigned.clear();
    this.#claimProblems.clear();
    this.#recordClaimProblems(() => this.#ownership.clearProblems());
    for (const partition of mine) {
      this.#assigned.add(partition);
      this.#epochs.set(partition, this.#claim(partition));
    }
    this.#logger.info({ partitions: mine, generation: assignment.generation }, 'partitions assigned');
  }

  #onRevoked(): void {
    this.#epochs.clear();
    this.#claimed.clear();
    this.#assigned.clear();
    this.#claimProblems.clear();
    this.#recordClaimProblems(() => this.#ownership.clearProblems());
    this.metrics.ownedPartitions.set(0);
  }

  /** Writes a change of {@link claimProblems} for the ops page; a failure is logged (health still says it). */
  #recordClaimProblems(write: () => Promise<void>): void {
    write().catch((error: unknown) =>
      this.#logger.warn({ err: error }, 'could not record partition claim problems for the ops page'),
    );
  }

  /**
   * Claims `partition` (after `delayMs`) and records the epoch. A failed
   * claim is retried with backoff (0.25 s doubling to 30 s) for as long as
   * the partition stays assigned, and reported by {@link claimProblems}.
   */
  #claim(partition: number, delayMs = 0): Promise<number> {
    const claim: Promise<number> = (delayMs > 0 ? sleep(delayMs) : Promise.resolve())
      .then(() => {
        if (this.#epochs.get(partition) !== claim) {
          throw new PolyvisionError('partition_not_assigned', `partition ${partition} moved on`, { retriable: true });
        }
        return this.#ownership.claim(partition);
      })
      .then(
        (epoch) => {
          if (this.#epochs.get(partition) === claim) {
            this.#claimed.add(partition);
            if (this.#claimProblems.delete(partition)) {
              this.#recordClaimProblems(() => this.#ownership.clearProblems(partition));
            }
            this.metrics.ownedPartitions.set(this.#claimed.size);
            this.#relay?.kick();
          }
          return epoch;
        },
        (error: unknown) => {
          if (this.#epochs.get(partition) === claim) this.#reclaimLater(partition, error);
          throw error;
        },
      );
    claim.catch(() => {});
    return claim;
  }

  /** Records why `partition` is not claimed and claims it again after a backoff, if it is still assigned. */
  #reclaimLater(partition: number, error: unknown): void {
    this.#claimed.delete(partition);
    this.metrics.ownedPartitions.set(this.#claimed.size);
    if (!this.#assigned.has(partition)) {
      this.#epochs.delete(partition);
      return;
    }
    const previous = this.#claimProblems.get(partition);
    const failures = (previous?.failures ?? 0) + 1;
    const problem = {
      failures,
      since: previous?.since ?? Date.now(),
      error: error instanceof Error ? error.message : String(error),
    };
    this.#claimProblems.set(partition, problem);
    this.#recordClaimProblems(() =>
      this.#ownership.reportProblem(partition, { failures, sinceMs: problem.since, error: problem.error }),
    );
    const delayMs = Math.min(30_000, 250 * 2 ** Math.min(failures - 1, 7));
    this.#logger.warn({ partition, failures, delayMs, err: error }, 'partition not claimed; claiming again');
    this.#epochs.set(partition, this.#claim(partition, delayMs));
  }

  async #epochFor(partition: number): Promise<number> {
    const claim = this.#epochs.get(partition);
    if (!claim) {
      throw new PolyvisionError('partition_not_assigned', `partition ${partition} is not assigned to this replica`, {
        retriable: true,
      });
    }
    return claim; // a failed claim is retried by #claim itself; the bus hands the record again
  }

  async #handle(record: BusRecord): Promise<void> {
    const command = this.#parse(record);
    if (typeof command === 'string') {
      await this.#deadLetter(record, 'schema_mismatch', command);
      return;
    }
    const claimUsed = this.#epochs.get(record.partition);
    const epoch = await this.#epochFor(record.partition);
    if (command.type === 'job.submit' && (await this.#idempotency.has(jobProcessedKey(command.job_id))) === true) {
      this.metrics.idempotencyHits.inc({ source: 'redis' });
      this.#done(record, command, 'duplicate');
      return;
    }
    let result: TransitionResult;
    try {
      result = await this.#db.transaction(async (tx) => {
        await this.#ownership.assertOwner(tx, record.partition, epoch);
        const fresh = await tx.query(
          `INSERT INTO processed_messages (message_id, job_id, type, commands_partition, handled_by)
           VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
          [command.message_id, command.job_id, command.type, record.partition, this.tuning.instanceId],
        );
        if (fresh.rowCount === 0) return { outcome: 'duplicate' } as TransitionResult;
        return this.#machine.apply(tx, command, record.partition);
      });
    } catch (error) {
      if (error instanceof PoisonMessageError) {
        await this.#deadLetter(record, error.code, error.message, command);
        return;
      }
      if (error instanceof PartitionFencedError) {
        this.metrics.commandsHandled.inc({ type: command.type, outcome: 'fenced' });
        this.#logger.warn({ partition: record.partition, offset: record.offset }, 'fenced: partition moved on');
        // Still assigned by Kafka (a claim landed out of order): claim again with backoff.
        if (this.#epochs.get(record.partition) === claimUsed) this.#reclaimLater(record.partition, error);
        throw error;
      }
      await this.#afterFailure(record, command, error);
      return;
    }
    this.#recordFailures.delete(`${record.partition}:${record.offset}`);
    if (result.outcome === 'duplicate') this.metrics.idempotencyHits.inc({ source: 'database' });
    if (result.outcome === 'stale' || result.outcome === 'rejected') {
      this.#logger.info(
        { job: command.job_id, type: command.type, reason: result.reason },
        `command ${result.outcome}`,
      );
    }
    if (command.type === 'job.submit') {
      await this.#idempotency.set(jobProcessedKey(command.job_id), JOB_PROCESSED_TTL_MS);
    }
    if (result.finished) {
      this.metrics.jobProcessingTime.observe(
        { status: result.finished.status },
        (Date.now() - new Date(result.finished.createdAt).getTime()) / 1000,
      );
    }
    this.#relay?.kick();
    this.#done(record, command, result.outcome);
  }

  /**
   * A command that failed (not poison, not fenced). A retriable error
   * (database down) is retried for as long as it lasts; any other
   * (deterministic: a bug, a constraint) at most `poisonMaxAttempts` times,
   * then the command goes to the DLQ with its error and the partition moves
   * on. Between tries: exponential backoff up to `handlerRetryMaxBackoffMs`.
   *
   * @throws the error, to have the bus hand the record again (unless dead-lettered).
   */
  async #afterFailure(record: BusRecord, command: JobCommand, error: unknown): Promise<void> {
    const key = `${record.partition}:${record.offset}`;
    const failures = (this.#recordFailures.get(key) ?? 0) + 1;
    if (this.#recordFailures.size > 10_000) this.#recordFailures.clear();
    const retriable = isRetriable(error);
    if (!retriable && failures >= this.tuning.poisonMaxAttempts) {
      this.#recordFailures.delete(key);
      const failure = coerceError(error, 'command_failed');
      await this.#deadLetter(record, failure.code, `failed ${failures} times, last: ${failure.message}`, command);
      return;
    }
    this.#recordFailures.set(key, failures);
    const delayMs = Math.min(
      this.tuning.handlerRetryMaxBackoffMs,
      this.tuning.handlerRetryBackoffMs * 2 ** Math.min(failures - 1, 10),
    );
    this.#logger.warn(
      { err: error, partition: record.partition, offset: record.offset, failures, retriable, delayMs },
      'command failed; retrying',
    );
    await sleep(Math.max(0, delayMs - this.tuning.handlerRetryBackoffMs)); // the bus waits handlerRetryBackoffMs too
    throw error;
  }

  #parse(record: BusRecord): JobCommand | string {
    let json: unknown;
    try {
      json = JSON.parse(record.value);
    } catch (error) {
      return `not JSON: ${(error as Error).message}`;
    }
    const parsed = jobCommandSchema.safeParse(json);
    if (!parsed.success) {
      return parsed.error.issues
        .slice(0, 5)
        .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
        .join('; ');
    }
    const expectedKey = jobKey(parsed.data.organization_id, parsed.data.match_id);
    if (record.key !== expectedKey) return `key ${JSON.stringify(record.key)} is not ${JSON.stringify(expectedKey)}`;
    return parsed.data;
  }

  async #deadLetter(record: BusRecord, code: string, message: string, command: JobCommand | null = null) {
    await sendToDeadLetter(this.#producer!, this.topics.dlq, record, this.groupId, { code, message });
    this.#logger.warn({ partition: record.partition, offset: record.offset, code, message }, 'message dead-lettered');
    this.#done(record, command, 'dead_lettered');
  }

  #done(record: BusRecord, command: JobCommand | null, outcome: HandleOutcome) {
    this.metrics.commandsHandled.inc({ type: command?.type ?? 'unknown', outcome });
    for (const observer of this.#observers) observer(record, outcome, command);
  }

  async #refreshLag(): Promise<void> {
    try {
      const lag = await this.#bus.groupLag(this.groupId, this.topics.commands);
      for (const [partition, value] of lag) {
        this.metrics.consumerLag.set({ topic: this.topics.commands, partition: String(partition) }, value);
      }
    } catch (error) {
      this.#logger.debug({ err: error }, 'lag refresh failed');
    }
  }
}
