import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import {
  coerceError,
  jobEventSchema,
  jobKey,
  type Logger,
  type MessageError,
  PolyvisionError,
  type Stage,
  type StageTask,
  silentLogger,
  stageTaskSchema,
} from '@polyvision/shared';
import type { BusConsumer, BusProducer, BusRecord, MessageBus } from '../../bus/message-bus.ts';
import { groupNames, topicNames } from '../../orchestrator/contracts/topics.ts';
import { sendToDeadLetter } from '../../orchestrator/dead-letter.ts';
import { deterministicUuid, lostAttemptMessageId } from './report-ids.ts';
import type { StageClaimStore } from './stage-claims.ts';
import type { StageHandler, StageResult } from './stage-handler.ts';

export interface WorkerRuntimeOptions {
  bus: MessageBus;
  handlers: StageHandler[];
  /** Task claims (PostgreSQL in production): no task runs twice. */
  claims: StageClaimStore;
  /** @defaultValue silentLogger */
  logger?: Logger;
  /** @defaultValue 'polyvision' */
  topicPrefix?: string;
  /** @defaultValue `${hostname}:${pid}:${uuid8}` */
  workerId?: string;
  /** Kafka session timeout of the worker groups. @defaultValue 10_000 */
  sessionTimeoutMs?: number;
  /**
   * Claim lease, renewed every third of it while a task runs (the task's
   * heartbeat: a worker silent for 3 renewals loses the task, which the
   * reconciler or another worker reports as `heartbeat_timeout`).
   * @defaultValue 30_000
   */
  claimLeaseMs?: number;
  /** Least milliseconds between two `stage.progress` sends of one task. @defaultValue 1_000 */
  progressIntervalMs?: number;
  /** Task partitions handled at once per stage (tasks running at once). @defaultValue 1 */
  concurrency?: number;
}

interface RunningTask {
  task: StageTask;
  controller: AbortController;
}

/**
 * Runs `StageHandler`s: per stage, a member of group `polyvision-worker-<stage>`
 * on `polyvision.tasks.<stage>`; results go to `polyvision.jobs.commands`
 * keyed `${organization_id}:${match_id}`. Also listens to
 * `polyvision.jobs.events` (own group, new events only): on a cancelled or
 * failed job, running tasks of the job ask the database whether they are
 * still wanted and abort if not. The worker keeps no memory of jobs: the
 * database says at each claim and renewal whether a task is current, so a
 * reprocessed job runs on any worker.
 *
 * Per task: validate (else DLQ) → claim, only if the database says the
 * task is the current attempt of a running job (else dropped); a completed
 * claim re-sends its result; a live foreign claim is waited for,
 * uncommitted; an expired one is marked lost and reported
 * (`heartbeat_timeout`: the orchestrator dispatches a new attempt) → report
 * the claim at once (`stage.progress` 0: the stage is `running`, its
 * start-to-close starts) → run with an AbortSignal, renewing the claim (the
 * heartbeat; a renewal refused aborts the run) and sending throttled
 * progress → store the result in the claim → send `stage.completed` /
 * `stage.failed` with a deterministic message id → the bus commits the offset.
 */
export class WorkerRuntime {
  readonly workerId: string;
  /**
   * Owner of this runtime's claims: `workerId` plus a nonce of this life. A
   * worker restarted with the same WORKER_ID (a pod, a systemd unit) must not
   * re-take the live claim its previous life left (`stage_claims` lets an
   * owner re-take its own `processing` claim): that would re-run the same
   * attempt, recorded as attempt 1 with one claim. With its own owner it finds
   * the claim busy, then lost, and the stage re-runs as a new attempt.
   */
  readonly claimOwner: string;
  readonly #options: WorkerRuntimeOptions;
  readonly #logger: Logger;
  readonly #topics: ReturnType<typeof topicNames>;
  readonly #groups: ReturnType<typeof groupNames>;
  readonly #running = new Map<string, RunningTask>();
  readonly #consumers: BusConsumer[] = [];
  #producer: BusProducer | null = null;
  #closing = false;

  constructor(options: WorkerRuntimeOptions) {
    if (options.handlers.length === 0)
      throw new PolyvisionError('worker_no_stages', 'a worker needs at least one stage');
    const stages = options.handlers.map((h) => h.stage);
    if (new Set(stages).size !== stages.length) {
      throw new PolyvisionError('worker_duplicate_stage', `a stage is served twice: ${stages.join(',')}`);
    }
    this.#options = options;
    this.workerId = options.workerId ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.claimOwner = options.workerId ? `${options.workerId}#${randomUUID().slice(0, 8)}` : this.workerId;
    this.#logger = (options.logger ?? silentLogger).child({ worker: this.workerId });
    this.#topics = topicNames(options.topicPrefix);
    this.#groups = groupNames(options.topicPrefix);
  }

  /** Stages served by this worker. */
  get stages(): Stage[] {
    return this.#options.handlers.map((h) => h.stage);
  }

  /** Joins the groups and starts taking tasks. */
  async start(): Promise<void> {
    this.#producer = this.#options.bus.createProducer();
    const sessionTimeoutMs = this.#options.sessionTimeoutMs ?? 10_000;
    const events = this.#options.bus.createConsumer({
      groupId: `${this.#groups.worker(this.stages[0]!)}-events-${this.workerId.replaceAll(/[^A-Za-z0-9._-]/g, '_')}`,
      topics: [this.#topics.events],
      fromBeginning: false,
      sessionTimeoutMs,
    });
    this.#consumers.push(events);
    await events.run({ eachMessage: async (record) => this.#onEvent(record) });
    for (const handler of this.#options.handlers) {
      const consumer = this.#options.bus.createConsumer({
        groupId: this.#groups.worker(handler.stage),
        topics: [this.#topics.tasks(handler.stage)],
        fromBeginning: true,
        sessionTimeoutMs,
        heartbeatIntervalMs: Math.max(100, Math.floor(sessionTimeoutMs / 5)),
        partitionsConsumedConcurrently: this.#options.concurrency ?? 1,
        retryBackoffMs: 500,
      });
      this.#consumers.push(consumer);
      await consumer.run({ eachMessage: async (record, context) => this.#onTask(handler, record, context) });
    }
    this.#logger.info({ stages: this.stages }, 'worker started');
  }

  /**
   * Stops: aborts running tasks (they are handed back uncommitted, so another
   * worker takes them), leaves the groups, closes the handlers.
   */
  async close(): Promise<void> {
    this.#closing = true;
    for (const running of this.#running.values()) {
      running.controller.abort(new PolyvisionError('worker_shutdown', 'the worker is shutting down'));
    }
    await Promise.allSettled(this.#consumers.splice(0).map((c) => c.close()));
    await this.#producer?.close();
    for (const handler of this.#options.handlers) await handler.close?.();
    this.#logger.info('worker stopped');
  }

  #onEvent(record: BusRecord): void {
    let parsed: ReturnType<typeof jobEventSchema.safeParse>;
    try {
      parsed = jobEventSchema.safeParse(JSON.parse(record.value));
    } catch {
      return;
    }
    if (!parsed.success) return;
    const event = parsed.data;
    if (event.status !== 'cancelled' && event.status !== 'failed') return;
    for (const running of this.#running.values()) {
      if (running.task.job_id === event.job_id) void this.#renew(running);
    }
  }

  /** Renews a running task's claim; aborts the run when the claim or the task is no longer wanted. */
  async #renew(running: RunningTask): Promise<void> {
    try {
      const mine = await this.#options.claims.renew(running.task, this.claimOwner, this.#leaseMs);
      if (!mine && !running.controller.signal.aborted) {
        running.controller.abort(
          new PolyvisionError('claim_lost', 'the task is no longer current or its claim was lost'),
        );
      }
    } catch (error) {
      // Database unreachable: the lease still runs; the next renewal tries again.
      this.#logger.debug({ err: error }, 'claim renewal failed');
    }
  }

  get #leaseMs(): number {
    return this.#options.claimLeaseMs ?? 30_000;
  }

  async #onTask(handler: StageHandler, record: BusRecord, context: { heartbeat(): Promise<void> }): Promise<void> {
    let task: StageTask;
    try {
      const parsed = stageTaskSchema.safeParse(JSON.parse(record.value));
      if (!parsed.success)
        throw new Error(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
      task = parsed.data;
      if (task.stage !== handler.stage) throw new Error(`task for ${task.stage} on the ${handler.stage} topic`);
    } catch (error) {
      await sendToDeadLetter(this.#producer!, this.#topics.dlq, record, this.#groups.worker(handler.stage), {
        code: 'schema_mismatch',
        message: (error as Error).message,
      });
      return;
    }
    if (this.#running.has(task.message_id)) {
      // Handed again while this worker still runs it (the group rebalanced meanwhile): wait, uncommitted,
      // until the run ends; then the stored result is re-sent.
      throw new PolyvisionError('task_running_here', `task ${task.message_id} is running on this worker`, {
        retriable: true,
      });
    }
    const leaseMs = this.#leaseMs;
    const claim = await this.#options.claims.claim(task, this.claimOwner, leaseMs);
    if (claim.state === 'stale') {
      this.#logger.info({ job: task.job_id, stage: task.stage, attempt: task.attempt }, 'task no longer current');
      return;
    }
    if (claim.state === 'completed') {
      await this.#sendCompleted(task, claim.result, 0);
      return;
    }
    if (claim.state === 'failed') return; // reported already
    if (claim.state === 'lost') {
      // Its holder stopped heartbeating: this attempt is over; the orchestrator dispatches a new one.
      await this.#send({
        ...this.#envelope(task, 'stage.lost'),
        message_id: lostAttemptMessageId(task.message_id),
        type: 'stage.failed',
        error: {
          code: 'heartbeat_timeout',
          message: `worker ${claim.owner} stopped heartbeating (its claim lease ran out); the attempt is lost`,
          retriable: true,
        },
      });
      return;
    }
    if (claim.state === 'busy') {
      // Another worker holds a live claim (it runs the task, or it died and its
      // lease has not expired yet): not committed, so the bus hands the task
      // again after a backoff until the holder completes (we then re-send its
      // result) or its lease expires (we then report the attempt lost).
      throw new PolyvisionError('task_claimed_elsewhere', `task ${task.message_id} is claimed by ${claim.owner}`, {
        retriable: true,
      });
    }
    const controller = new AbortController();
    const running: RunningTask = { task, controller };
    this.#running.set(task.message_id, running);
    const startedAt = Date.now();
    const renew = setInterval(() => void this.#renew(running), Math.max(50, Math.floor(leaseMs / 3)));
    const sessionTimeoutMs = this.#options.sessionTimeoutMs ?? 10_000;
    const groupHeartbeat = setInterval(
      () => void context.heartbeat().catch(() => {}),
      Math.max(100, Math.floor(sessionTimeoutMs / 5)),
    );
    const progress = this.#progressReporter(task);
    progress(0, 'claimed'); // the first report: the stage is running from here (start-to-close)
    let outcome: { result: StageResult } | { error: MessageError };
    try {
      const result = await handler.run({
        task,
        signal: controller.signal,
        reportProgress: progress,
        logger: this.#logger.child({ job: task.job_id, stage: task.stage, attempt: task.attempt }),
      });
      outcome = { result };
    } catch (error) {
      if (controller.signal.aborted) {
        clearInterval(renew);
        clearInterval(groupHeartbeat);
        this.#running.delete(task.message_id);
        await this.#options.claims.release(task, this.claimOwner).catch(() => {});
        if (this.#closing) throw controller.signal.reason; // not committed: another worker takes it
        return; // cancelled job: nothing to report
      }
      const failure = coerceError(error, 'stage_error');
      outcome = {
        error: {
          code: failure.code,
          message: failure.message.slice(0, 4000),
          retriable: error instanceof PolyvisionError ? error.retriable : true,
        },
      };
    } finally {
      clearInterval(renew);
      clearInterval(groupHeartbeat);
      this.#running.delete(task.message_id);
    }
    // The run is over: record and report it, retrying bookkeeping (database or
    // broker briefly down) rather than running the stage again.
    const durationMs = Date.now() - startedAt;
    if ('result' in outcome) {
      const { result } = outcome;
      await this.#persistently(() => this.#options.claims.complete(task, this.claimOwner, result));
      await this.#persistently(() => this.#sendCompleted(task, result, durationMs));
    } else {
      const { error } = outcome;
      await this.#persistently(() => this.#options.claims.fail(task, this.claimOwner, error));
      await this.#persistently(() =>
        this.#send({ ...this.#envelope(task, 'stage.failed'), type: 'stage.failed', error }),
      );
    }
  }

  /** Repeats `step` with capped backoff until it succeeds or the worker closes (then throws). */
  async #persistently(step: () => Promise<unknown>): Promise<void> {
    for (let failures = 0; ; failures++) {
      try {
        await step();
        return;
      } catch (error) {
        if (this.#closing) throw error;
        if (failures === 0 || failures % 10 === 0)
          this.#logger.warn({ err: error, failures }, 'bookkeeping failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, 100 * 2 ** Math.min(failures, 5))));
      }
    }
  }

  #progressReporter(task: StageTask): (fraction: number, note?: string) => void {
    const intervalMs = this.#options.progressIntervalMs ?? 1_000;
    let lastSentAt = 0;
    return (fraction, note) => {
      const now = Date.now();
      if (now - lastSentAt < intervalMs) return;
      lastSentAt = now;
      void this.#send({
        ...this.#envelope(task, `stage.progress:${now}`),
        type: 'stage.progress',
        progress: Math.min(1, Math.max(0, Number.isFinite(fraction) ? fraction : 0)),
        ...(note ? { note: note.slice(0, 1024) } : {}),
      }).catch((error: unknown) => this.#logger.debug({ err: error }, 'progress send failed'));
    };
  }

  async #sendCompleted(task: StageTask, result: StageResult, durationMs: number): Promise<void> {
    await this.#send({
      ...this.#envelope(task, 'stage.completed'),
      type: 'stage.completed',
      model_version: task.model_version,
      outputs: result.outputs,
      duration_ms: Math.max(0, Math.round(durationMs)),
      ...(result.stats ? { stats: result.stats } : {}),
    });
  }

  #envelope(task: StageTask, kind: string) {
    return {
      message_id: deterministicUuid(`${task.message_id}:${kind}`),
      job_id: task.job_id,
      organization_id: task.organization_id,
      match_id: task.match_id,
      created_at: new Date().toISOString(),
      stage: task.stage,
      attempt: task.attempt,
      worker_id: this.workerId,
      task_message_id: task.message_id,
    };
  }

  async #send(message: Record<string, unknown> & { organization_id: string; match_id: string }): Promise<void> {
    await this.#producer!.send(this.#topics.commands, [
      { key: jobKey(message.organization_id, message.match_id), value: JSON.stringify(message) },
    ]);
  }
}
