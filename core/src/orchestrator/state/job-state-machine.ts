import { randomUUID } from 'node:crypto';
import {
  type ArtifactRef,
  type JobCancel,
  type JobCommand,
  type JobReprocess,
  type JobSubmit,
  jobKey,
  type MatchEnd,
  type MatchOpen,
  type MatchSegment,
  type MessageError,
  type Stage,
  type StageCompleted,
  type StageFailed,
  type StageProgress,
  type StageTask,
  stageIdempotencyKey,
} from '@polyvision/shared';
import type { Queryable } from '../../db/database.ts';
import { dependenciesOf, pipelineStages, STAGE_NAMES, stageAndDownstream } from '../contracts/stages.ts';
import type { TopicNames } from '../contracts/topics.ts';
import { PoisonMessageError } from '../errors.ts';
import type { OrchestratorTuning } from '../options.ts';
import { enqueueOutbox, type OutboxMessage } from '../outbox/outbox-writer.ts';
import { type EventAbout, jobEventMessage } from './job-event.ts';
import {
  type JobRow,
  jobProgress,
  loadStages,
  lockJob,
  resetStageRow,
  type StageRow,
  type StageStatus,
} from './job-rows.ts';
import { MatchStateMachine } from './match-state-machine.ts';
import { retryOf } from './stage-retry.ts';

/** What applying one command did. */
export interface TransitionResult {
  outcome: 'applied' | 'duplicate' | 'stale' | 'rejected';
  /** Set when the command finished the job (for `job_processing_time`). */
  finished?: { status: 'completed' | 'failed' | 'cancelled'; createdAt: Date };
  /** Why a command was `stale` or `rejected`, for logs. */
  reason?: string;
}

const ACTIVE: readonly StageStatus[] = ['dispatched', 'running'];
const TERMINAL_JOB = new Set(['completed', 'failed', 'cancelled']);

/**
 * The job state machine: applies one command inside the caller's
 * transaction, writing the job and stage rows and the outbox rows (tasks,
 * events) the change causes.
 *
 * Pipeline (seeds, orchestration-decision.md): [Stitch →] Detect → Track →
 * (VCam ∥ Analyze) → Encode → completed. A stage is dispatched when all the
 * job's stages it depends on are completed; `(job_id, stage, attempt)` names
 * one dispatch, and a worker's report for another attempt is stale.
 */
export class JobStateMachine {
  readonly #tuning: OrchestratorTuning;
  readonly #topics: TopicNames;
  readonly #match: MatchStateMachine;

  constructor(tuning: OrchestratorTuning, topics: TopicNames) {
    this.#tuning = tuning;
    this.#topics = topics;
    this.#match = new MatchStateMachine(tuning, topics);
  }

  /**
   * Applies `command` (already deduplicated by message id and fenced by the caller).
   * Match jobs (`match.open`, `match.segment`, and every command about a job of kind `match`)
   * go to {@link MatchStateMachine}.
   *
   * @param commandsPartition - the partition the command came from (stored on new jobs, scopes the outbox).
   * @throws PoisonMessageError `unknown_job` for a command about a job that does not exist.
   */
  async apply(tx: Queryable, command: JobCommand, commandsPartition: number): Promise<TransitionResult> {
    if (command.type === 'job.submit') return this.#submit(tx, command, commandsPartition);
    if (command.type === 'match.segment') return this.#match.segment(tx, command, commandsPartition);
    if (command.type === 'match.open') return this.#match.open(tx, command, commandsPartition);
    const job = await lockJob(tx, command.job_id);
    if (!job && command.type === 'match.end') {
      // The marker overtook every segment upload, or the match recorded none: the idle grace covers a late segment.
      return { outcome: 'rejected', reason: 'no segment of the match arrived yet' };
    }
    if (!job) throw new PoisonMessageError('unknown_job', `${command.type} for unknown job ${command.job_id}`);
    if (job.kind === 'match') return this.#match.apply(tx, job, command);
    if (command.type === 'match.end') return { outcome: 'rejected', reason: 'not a match job' };
    if ((command.type === 'job.cancel' || command.type === 'job.reprocess') && command.segments) {
      return { outcome: 'rejected', reason: 'segments apply to match jobs only' };
    }
    const stages = await loadStages(tx, job);
    const effects: OutboxMessage[] = [];
    const result = await this.#dispatchCommand(tx, job, stages, command, effects);
    await enqueueOutbox(tx, job.commands_partition, effects);
    return result;
  }

  #dispatchCommand(
    tx: Queryable,
    job: JobRow,
    stages: StageRow[],
    command: Exclude<JobCommand, JobSubmit | MatchSegment | MatchOpen | MatchEnd>,
    effects: OutboxMessage[],
  ): Promise<TransitionResult> {
    switch (command.type) {
      case 'job.cancel':
        return this.#cancel(tx, job, stages, command, effects);
      case 'job.reprocess':
        return this.#reprocess(tx, job, stages, command, effects);
      case 'stage.progress':
        return this.#progress(tx, job, stages, command, effects);
      case 'stage.completed':
        return this.#completed(tx, job, stages, command, effects);
      case 'stage.failed':
        return this.#failed(tx, job, stages, command, effects);
    }
  }

  async #submit(tx: Queryable, command: JobSubmit, commandsPartition: number): Promise<TransitionResult> {
    const existing = await tx.query(`SELECT 1 FROM jobs WHERE job_id = $1`, [command.job_id]);
    if (existing.rowCount > 0) return { outcome: 'duplicate', reason: 'job exists' };
    const wanted = command.stages ?? pipelineStages(false);
    const stages = STAGE_NAMES.filter((stage) => wanted.includes(stage));
    const modelVersions = command.model_versions ?? {};
    await tx.query(
      `INSERT INTO jobs (job_id, organization_id, match_id, status, stages, model_versions, inputs, priority, requested_by, commands_partition)
       VALUES ($1, $2, $3, 'running', $4, $5::jsonb, $6::jsonb, $7, $8, $9)`,
      [
        command.job_id,
        command.organization_id,
        command.match_id,
        stages,
        JSON.stringify(modelVersions),
        JSON.stringify(command.inputs),
        command.priority,
        command.requested_by ?? null,
        commandsPartition,
      ],
    );
    for (const stage of stages) {
      await tx.query(
        `INSERT INTO job_stages (job_id, stage, status, max_attempts, model_version) VALUES ($1, $2, 'pending', $3, $4)`,
        [command.job_id, stage, this.#tuning.maxAttempts[stage], modelVersions[stage] ?? 'default'],
      );
    }
    const job = (await lockJob(tx, command.job_id))!;
    const rows = await loadStages(tx, job);
    const effects: OutboxMessage[] = [this.#event(job, rows, {})];
    await this.#dispatchReady(tx, job, rows, effects);
    await enqueueOutbox(tx, commandsPartition, effects);
    return { outcome: 'applied' };
  }

  async #cancel(
    tx: Queryable,
    job: JobRow,
    stages: StageRow[],
    command: JobCancel,
    effects: OutboxMessage[],
  ): Promise<TransitionResult> {
    if (TERMINAL_JOB.has(job.status)) return { outcome: 'rejected', reason: `job is ${job.status}` };
    const error: MessageError = { code: 'cancelled', message: command.reason ?? 'cancelled', retriable: false };
    await tx.query(
      `UPDATE job_stages SET status = 'cancelled', finished_at = now()
       WHERE job_id = $1 AND status IN ('pending', 'dispatched', 'running')`,
      [job.job_id],
    );
    // Tasks not yet published are dropped; workers abort published ones on the cancelled event.
    await tx.query(`DELETE FROM outbox WHERE sent_at IS NULL AND topic LIKE $2 AND payload->>'job_id' = $1`, [
      job.job_id,
      `${this.#topics.tasks('detect').slice(0, -'detect'.length)}%`,
    ]);
    await this.#finishJob(tx, job, 'cancelled', error);
    for (const s of stages) if (s.status !== 'completed' && s.status !== 'failed') s.status = 'cancelled';
    effects.push(this.#event({ ...job, status: 'cancelled' }, stages, { error }));
    return { outcome: 'applied', finished: { status: 'cancelled', createdAt: job.created_at } };
  }

  async #reprocess(
    tx: Queryable,
    job: JobRow,
    stages: StageRow[],
    command: JobReprocess,
    effects: OutboxMessage[],
  ): Promise<TransitionResult> {
    if (!TERMINAL_JOB.has(job.status)) {
      return { outcome: 'rejected', reason: `job is ${job.status}; cancel it or wait before reprocessing` };
    }
    if (!job.stages.includes(command.from_stage)) {
      return { outcome: 'rejected', reason: `job has no stage ${command.from_stage}` };
    }
    const again = new Set(stageAndDownstream(command.from_stage, job.stages));
    for (const s of stages) if (s.status !== 'completed') again.add(s.stage);
    const versions = { ...job.model_versions, ...(command.model_versions ?? {}) };
    for (const s of stages) {
      if (!again.has(s.stage)) continue;
      await resetStageRow(tx, s, versions[s.stage] ?? s.model_version);
    }
    await tx.query(
      `UPDATE jobs SET status = 'running', error = NULL, finished_at = NULL, model_versions = $2::jsonb,
         progress = $3, updated_at = now() WHERE job_id = $1`,
      [job.job_id, JSON.stringify(versions), jobProgress(stages)],
    );
    const running: JobRow = { ...job, status: 'running', error: null, model_versions: versions };
    effects.push(this.#event(running, stages, {}));
    await this.#dispatchReady(tx, running, stages, effects);
    return { outcome: 'applied' };
  }

  async #progress(
    tx: Queryable,
    job: JobRow,
    stages: StageRow[],
    command: StageProgress,
    effects: OutboxMessage[],
  ): Promise<TransitionResult> {
    const stage = this.#current(job, stages, command);
    if (typeof stage === 'string') return { outcome: 'stale', reason: stage };
    // The first report of an attempt is sent at the worker's claim: start-to-close counts from it.
    await tx.query(
      `UPDATE job_stages SET status = 'running', progress = GREATEST(progress, $3), worker_id = $4,
         started_at = COALESCE(started_at, now()), heartbeat_at = now(),
         deadline_at = COALESCE(started_at, now()) + ($5::double precision * interval '1 millisecond')
       WHERE job_id = $1 AND stage = $2`,
      [job.job_id, stage.stage, command.progress, command.worker_id, this.#tuning.startToCloseMs[stage.stage]],
    );
    stage.status = 'running';
    stage.progress = Math.max(stage.progress, command.progress);
    const progress = jobProgress(stages);
    await tx.query(`UPDATE jobs SET progress = $2, updated_at = now() WHERE job_id = $1`, [job.job_id, progress]);
    effects.push(this.#event(job, stages, { stage: stage.stage, stageStatus: 'running' }));
    return { outcome: 'applied' };
  }

  async #completed(
    tx: Queryable,
    job: JobRow,
    stages: StageRow[],
    command: StageCompleted,
    effects: OutboxMessage[],
  ): Promise<TransitionResult> {
    const stage = this.#current(job, stages, command);
    if (typeof stage === 'string') return { outcome: 'stale', reason: stage };
    await tx.query(
      `UPDATE job_stages SET status = 'completed', progress = 1, outputs = $3::jsonb, stats = $4::jsonb,
         worker_id = $5, finished_at = now(), deadline_at = NULL, error = NULL,
         started_at = COALESCE(started_at, now())
       WHERE job_id = $1 AND stage = $2`,
      [
        job.job_id,
        stage.stage,
        JSON.stringify(command.outputs),
        command.stats ? JSON.stringify(command.stats) : null,
        command.worker_id,
      ],
    );
    Object.assign(stage, { status: 'completed', progress: 1, outputs: command.outputs });
    effects.push(this.#event(job, stages, { stage: stage.stage, stageStatus: 'completed' }));
    if (stages.every((s) => s.status === 'completed')) {
      await this.#finishJob(tx, job, 'completed', null);
      effects.push(this.#event({ ...job, status: 'completed' }, stages, {}));
      return { outcome: 'applied', finished: { status: 'completed', createdAt: job.created_at } };
    }
    await tx.query(`UPDATE jobs SET progress = $2, updated_at = now() WHERE job_id = $1`, [
      job.job_id,
      jobProgress(stages),
    ]);
    await this.#dispatchReady(tx, job, stages, effects);
    return { outcome: 'applied' };
  }

  async #failed(
    tx: Queryable,
    job: JobRow,
    stages: StageRow[],
    command: StageFailed,
    effects: OutboxMessage[],
  ): Promise<TransitionResult> {
    const stage = this.#current(job, stages, command);
    if (typeof stage === 'string') return { outcome: 'stale', reason: stage };
    const retry = retryOf(this.#tuning, stage, command.error);
    if (retry) {
      await tx.query(
        `UPDATE job_stages SET error = $3::jsonb, waiting_attempts = waiting_attempts + $4 WHERE job_id = $1 AND stage = $2`,
        [job.job_id, stage.stage, JSON.stringify(command.error), retry.waiting ? 1 : 0],
      );
      if (retry.waiting) stage.waiting_attempts += 1;
      await this.#dispatch(tx, job, stages, stage, effects, retry.delayMs);
      effects.push(this.#event(job, stages, { stage: stage.stage, stageStatus: 'pending', error: command.error }));
      return { outcome: 'applied' };
    }
    await tx.query(
      `UPDATE job_stages SET status = 'failed', error = $3::jsonb, finished_at = now(), deadline_at = NULL
       WHERE job_id = $1 AND stage = $2`,
      [job.job_id, stage.stage, JSON.stringify(command.error)],
    );
    stage.status = 'failed';
    await tx.query(
      `UPDATE job_stages SET status = 'cancelled', finished_at = now()
       WHERE job_id = $1 AND status IN ('pending', 'dispatched', 'running')`,
      [job.job_id],
    );
    for (const s of stages) if (s.status === 'pending' || ACTIVE.includes(s.status)) s.status = 'cancelled';
    const error = { ...command.error, stage: stage.stage };
    await this.#finishJob(tx, job, 'failed', error);
    effects.push(
      this.#event({ ...job, status: 'failed' }, stages, { stage: stage.stage, stageStatus: 'failed', error }),
    );
    return { outcome: 'applied', finished: { status: 'failed', createdAt: job.created_at } };
  }

  /** The stage row a worker report is about, or why the report is stale. */
  #current(
    job: JobRow,
    stages: StageRow[],
    command: { stage: Stage; attempt: number; type: string },
  ): StageRow | string {
    if (job.status !== 'running') return `job is ${job.status}`;
    const stage = stages.find((s) => s.stage === command.stage);
    if (!stage) return `job has no stage ${command.stage}`;
    if (stage.attempt !== command.attempt) return `attempt ${command.attempt} is not the current ${stage.attempt}`;
    if (!ACTIVE.includes(stage.status)) return `stage is ${stage.status}`;
    return stage;
  }

  async #finishJob(tx: Queryable, job: JobRow, status: 'completed' | 'failed' | 'cancelled', error: unknown) {
    await tx.query(
      `UPDATE jobs SET status = $2, error = $3::jsonb, finished_at = now(), updated_at = now(),
         progress = CASE WHEN $2 = 'completed' THEN 1 ELSE progress END
       WHERE job_id = $1`,
      [job.job_id, status, error === null ? null : JSON.stringify(error)],
    );
  }

  async #dispatchReady(tx: Queryable, job: JobRow, stages: StageRow[], effects: OutboxMessage[]): Promise<void> {
    for (const stage of stages) {
      if (stage.status !== 'pending') continue;
      const deps = dependenciesOf(stage.stage, job.stages);
      const ready = deps.every((dep) => stages.find((s) => s.stage === dep)?.status === 'completed');
      if (ready) await this.#dispatch(tx, job, stages, stage, effects, 0);
    }
  }

  /**
   * Starts the next attempt of `stage`: a new task id, the task in the outbox
   * (after `delayMs`). The stage is `dispatched` (queued) until a worker's
   * claim report makes it `running`; its `deadline_at` is schedule-to-start
   * until then. The task carries no deadline: the worker asks the database
   * whether the task is still current when it claims it.
   */
  async #dispatch(
    tx: Queryable,
    job: JobRow,
    stages: StageRow[],
    stage: StageRow,
    effects: OutboxMessage[],
    delayMs: number,
  ): Promise<void> {
    const attempt = stage.attempt + 1;
    const messageId = randomUUID();
    const priority = job.priority === 'high' ? 'high' : 'normal';
    const deadlineMs = delayMs + this.#tuning.scheduleToStartMs[priority];
    await tx.query(
      `UPDATE job_stages SET status = 'dispatched', attempt = $3, task_message_id = $4, progress = 0,
         dispatched_at = now(), scheduled_at = now() + ($6::double precision * interval '1 millisecond'),
         run_started_at = COALESCE(run_started_at, now()),
         deadline_at = now() + ($5::double precision * interval '1 millisecond'),
         started_at = NULL, heartbeat_at = NULL, worker_id = NULL
       WHERE job_id = $1 AND stage = $2`,
      [job.job_id, stage.stage, attempt, messageId, deadlineMs, delayMs],
    );
    Object.assign(stage, { status: 'dispatched', attempt, task_message_id: messageId, progress: 0 });
    stage.run_started_at ??= new Date();
    const task: StageTask = {
      type: 'stage.task',
      message_id: messageId,
      job_id: job.job_id,
      organization_id: job.organization_id,
      match_id: job.match_id,
      created_at: new Date().toISOString(),
      stage: stage.stage,
      attempt,
      model_version: stage.model_version,
      inputs: this.#inputsOf(job, stages, stage.stage),
      params: {
        idempotency_key: stageIdempotencyKey(stage.stage, job.organization_id, job.match_id, stage.model_version),
      },
    };
    effects.push({
      topic: this.#topics.tasks(stage.stage),
      key: jobKey(job.organization_id, job.match_id),
      payload: task as unknown as Record<string, unknown>,
      delayMs,
    });
  }

  /** The job's uploads plus the outputs of every completed stage upstream of `stage`. */
  #inputsOf(job: JobRow, stages: StageRow[], stage: Stage): ArtifactRef[] {
    const upstream = new Set<Stage>();
    const visit = (s: Stage) => {
      for (const dep of dependenciesOf(s, job.stages)) {
        if (!upstream.has(dep)) {
          upstream.add(dep);
          visit(dep);
        }
      }
    };
    visit(stage);
    return [...job.inputs, ...stages.filter((s) => upstream.has(s.stage)).flatMap((s) => s.outputs)];
  }

  #event(job: JobRow, stages: StageRow[], about: EventAbout): OutboxMessage {
    return jobEventMessage(this.#topics, job, jobProgress(stages), about);
  }
}
