import type {
  JobCommand,
  MatchEnd,
  MatchOpen,
  MatchSegment,
  MessageError,
  Stage,
  StageCompleted,
  StageFailed,
  StageProgress,
} from '@polyvision/shared';
import type { Queryable } from '../../db/database.ts';
import { pipelineStages, STAGE_NAMES } from '../contracts/stages.ts';
import type { TopicNames } from '../contracts/topics.ts';
import type { OrchestratorTuning } from '../options.ts';
import { enqueueOutbox, type OutboxMessage } from '../outbox/outbox-writer.ts';
import { type EventAbout, jobEventMessage } from './job-event.ts';
import { type JobRow, lockJob, resetStageRow, type StageRow } from './job-rows.ts';
import type { TransitionResult } from './job-state-machine.ts';
import { dispatchSegmentTask } from './match-dispatch.ts';
import { cancelMatch, reprocessMatch } from './match-ranges.ts';
import { loadMatch, type MatchState, matchProgressFraction, segmentStates } from './match-rows.ts';
import { dispatchableTasks, FINAL_AWARE_STAGES, lastSegmentInMatch, matchComplete } from './segment-plan.ts';
import { retryOf } from './stage-retry.ts';

const ACTIVE = new Set(['dispatched', 'running']);
const TERMINAL_JOB = new Set(['completed', 'failed', 'cancelled']);
/** Most segments a match may have (a day of 1-second segments): a slot further out is refused, not planned. */
const MAX_SEGMENT_INDEX = 86_400;

/**
 * The state machine of a match job (issue #18): one job per organization's
 * match, opened by the edge's start marker (`match.open`) or else by its first
 * `match.segment`, closed by `match.end`. Stage
 * rows are per (stage, segment); {@link dispatchableTasks} says which run
 * next (detect fans out over segments, track → vcam ∥ analyze → encode run
 * over the segments in order, each reading its previous segment's
 * `<stage>-carry` output). Reports name their task (`task_message_id`);
 * `(job, stage, segment, attempt)` is one dispatch, a report for another is stale.
 * Applied inside the caller's transaction (fenced, deduplicated), writing the
 * outbox like {@link JobStateMachine}.
 */
export class MatchStateMachine {
  readonly #tuning: OrchestratorTuning;
  readonly #topics: TopicNames;

  constructor(tuning: OrchestratorTuning, topics: TopicNames) {
    this.#tuning = tuning;
    this.#topics = topics;
  }

  /**
   * The edge's start marker: opens the job at the match's first slot (segment indices count from
   * it), unless the job exists — opened by this marker before, or by a segment that overtook it.
   */
  async open(tx: Queryable, command: MatchOpen, commandsPartition: number): Promise<TransitionResult> {
    const existing = await lockJob(tx, command.job_id);
    if (existing) {
      if (existing.kind !== 'match')
        return { outcome: 'rejected', reason: `job ${existing.job_id} is not a match job` };
      return Number(existing.base_slot) > command.first_slot
        ? {
            outcome: 'rejected',
            reason: `a later segment opened the match at slot ${existing.base_slot} before its start marker (slot ${command.first_slot}) arrived`,
          }
        : { outcome: 'duplicate', reason: 'the match job is open' };
    }
    const job = await this.#insertJob(tx, command, command.first_slot, commandsPartition);
    const effects: OutboxMessage[] = [this.event(await loadMatch(tx, job), {})];
    await enqueueOutbox(tx, job.commands_partition, effects);
    return { outcome: 'applied' };
  }

  /** A segment arrived: opens the job on the first, records the segment, dispatches what became ready. */
  async segment(tx: Queryable, command: MatchSegment, commandsPartition: number): Promise<TransitionResult> {
    let job = await lockJob(tx, command.job_id);
    if (job && job.kind !== 'match') return { outcome: 'rejected', reason: `job ${job.job_id} is not a match job` };
    if (!job) job = await this.#insertJob(tx, command, command.slot, commandsPartition);
    else if (job.inputs.length === 0 && command.match_inputs?.length) {
      // Opened by a start marker that came before the venue calibration was catalogued.
      await tx.query(`UPDATE jobs SET inputs = $2::jsonb WHERE job_id = $1`, [
        job.job_id,
        JSON.stringify(command.match_inputs),
      ]);
      job = { ...job, inputs: command.match_inputs };
    }
    if (TERMINAL_JOB.has(job.status)) return { outcome: 'rejected', reason: `match job is ${job.status}` };
    const index = command.slot - Number(job.base_slot);
    if (index < 0) {
      return { outcome: 'rejected', reason: `slot ${command.slot} is before the match's first slot ${job.base_slot}` };
    }
    if (index > MAX_SEGMENT_INDEX) {
      return { outcome: 'rejected', reason: `slot ${command.slot} is ${index} segments after the match's first` };
    }
    if (job.final_index !== null && index > job.final_index) {
      return { outcome: 'rejected', reason: `segment ${index} is after the match's last segment ${job.final_index}` };
    }
    const inserted = await tx.query(
      `INSERT INTO job_segments (job_id, segment_index, state, slot, start_s, duration_s, input, received_at)
       VALUES ($1, $2, 'received', $3, $4, $5, $6::jsonb, now())
       ON CONFLICT (job_id, segment_index) DO UPDATE
         SET state = 'received', slot = EXCLUDED.slot, start_s = EXCLUDED.start_s, duration_s = EXCLUDED.duration_s,
             input = EXCLUDED.input, received_at = now()
         WHERE job_segments.state = 'missing'`,
      [job.job_id, index, command.slot, index * command.duration_s, command.duration_s, JSON.stringify(command.input)],
    );
    if (inserted.rowCount === 0) return { outcome: 'duplicate', reason: `segment ${index} is known` };
    for (const stage of job.stages) {
      await tx.query(
        `INSERT INTO job_stages (job_id, stage, segment_index, status, max_attempts, model_version)
         VALUES ($1, $2, $3, 'pending', $4, $5) ON CONFLICT DO NOTHING`,
        [job.job_id, stage, index, this.#tuning.maxAttempts[stage], job.model_versions[stage] ?? 'default'],
      );
    }
    await tx.query(`UPDATE jobs SET last_segment_at = now(), updated_at = now() WHERE job_id = $1`, [job.job_id]);
    const state = await loadMatch(tx, job);
    const effects: OutboxMessage[] = [this.event(state, {})];
    const result = await this.advance(tx, state, effects);
    await enqueueOutbox(tx, job.commands_partition, effects);
    return result;
  }

  /** Inserts a match job whose segment indices count from `baseSlot`; returns its locked row. */
  async #insertJob(
    tx: Queryable,
    command: MatchOpen | MatchSegment,
    baseSlot: number,
    commandsPartition: number,
  ): Promise<JobRow> {
    const wanted = command.stages ?? pipelineStages(false);
    const stages = STAGE_NAMES.filter((s) => wanted.includes(s));
    await tx.query(
      `INSERT INTO jobs (job_id, organization_id, match_id, status, stages, model_versions, inputs, priority,
         requested_by, commands_partition, kind, base_slot, last_segment_at)
       VALUES ($1, $2, $3, 'running', $4, $5::jsonb, $6::jsonb, 'normal', $7, $8, 'match', $9, now())`,
      [
        command.job_id,
        command.organization_id,
        command.match_id,
        stages,
        JSON.stringify(command.model_versions ?? {}),
        JSON.stringify(command.match_inputs ?? []),
        command.requested_by ?? null,
        commandsPartition,
        baseSlot,
      ],
    );
    return (await lockJob(tx, command.job_id))!;
  }

  /** Any other command about a match job (`job` is locked by the caller). */
  async apply(
    tx: Queryable,
    job: JobRow,
    command: Exclude<JobCommand, MatchSegment | MatchOpen>,
  ): Promise<TransitionResult> {
    const state = await loadMatch(tx, job);
    const effects: OutboxMessage[] = [];
    const result = await this.#route(tx, state, command, effects);
    await enqueueOutbox(tx, job.commands_partition, effects);
    return result;
  }

  #route(
    tx: Queryable,
    state: MatchState,
    command: Exclude<JobCommand, MatchSegment | MatchOpen>,
    effects: OutboxMessage[],
  ): Promise<TransitionResult> {
    switch (command.type) {
      case 'job.submit':
        return Promise.resolve({ outcome: 'duplicate', reason: 'job exists' });
      case 'match.end':
        return this.#end(tx, state, command, effects);
      case 'job.cancel':
        return cancelMatch(this, tx, state, command, effects);
      case 'job.reprocess':
        return reprocessMatch(this, tx, state, command, effects);
      case 'stage.progress':
        return this.#progress(tx, state, command, effects);
      case 'stage.completed':
        return this.#completed(tx, state, command, effects);
      case 'stage.failed':
        return this.#failed(tx, state, command, effects);
    }
  }

  /**
   * The end of the match: fixes the final index (the edge's last slot, else
   * the last segment received). At the idle grace, indexes still missing are
   * given up (`missing`) and the sequential stages go on past them.
   */
  async #end(tx: Queryable, state: MatchState, command: MatchEnd, effects: OutboxMessage[]): Promise<TransitionResult> {
    const { job } = state;
    if (TERMINAL_JOB.has(job.status)) return { outcome: 'rejected', reason: `match job is ${job.status}` };
    const maxKnown = Math.max(-1, ...state.segments.keys());
    if (job.final_index !== null && command.reason !== 'idle_grace') {
      return { outcome: 'duplicate', reason: `the end is known (segment ${job.final_index})` };
    }
    const fromSlot = command.last_slot === undefined ? maxKnown : command.last_slot - Number(job.base_slot);
    const finalIndex = job.final_index ?? Math.max(fromSlot, maxKnown, 0);
    await tx.query(
      `UPDATE jobs SET final_index = $2, ended_by = COALESCE(ended_by, $3), ended_at = COALESCE(ended_at, now()),
         updated_at = now() WHERE job_id = $1`,
      [job.job_id, finalIndex, command.reason],
    );
    job.final_index = finalIndex;
    job.ended_by ??= command.reason;
    let about: EventAbout = {};
    if (command.reason === 'idle_grace') {
      const given: number[] = [];
      for (let k = 0; k <= finalIndex; k++) {
        if (state.segments.has(k)) continue;
        await tx.query(
          `INSERT INTO job_segments (job_id, segment_index, state) VALUES ($1, $2, 'missing') ON CONFLICT DO NOTHING`,
          [job.job_id, k],
        );
        state.segments.set(k, {
          job_id: job.job_id,
          segment_index: k,
          state: 'missing',
          slot: null,
          start_s: null,
          duration_s: null,
          input: null,
          received_at: null,
        });
        given.push(k);
      }
      about = {
        error: {
          code: 'match_idle_closed',
          message:
            `no segment for the idle grace; the match is closed at segment ${finalIndex}` +
            (given.length ? `, segments given up as missing: ${given.join(',')}` : ''),
          retriable: false,
        },
      };
    }
    effects.push(this.event(state, about));
    return this.advance(tx, state, effects);
  }

  async #progress(
    tx: Queryable,
    state: MatchState,
    command: StageProgress,
    effects: OutboxMessage[],
  ): Promise<TransitionResult> {
    const row = this.#rowOf(state, command);
    if (typeof row === 'string') return { outcome: 'stale', reason: row };
    await tx.query(
      `UPDATE job_stages SET status = 'running', progress = GREATEST(progress, $4), worker_id = $5,
         started_at = COALESCE(started_at, now()), heartbeat_at = now(),
         deadline_at = COALESCE(started_at, now()) + ($6::double precision * interval '1 millisecond')
       WHERE job_id = $1 AND stage = $2 AND segment_index = $3`,
      [
        row.job_id,
        row.stage,
        row.segment_index,
        command.progress,
        command.worker_id,
        this.#tuning.startToCloseMs[row.stage],
      ],
    );
    row.status = 'running';
    row.progress = Math.max(row.progress, command.progress);
    await this.#saveProgress(tx, state);
    effects.push(this.event(state, { stage: row.stage, stageStatus: 'running' }));
    return { outcome: 'applied' };
  }

  async #completed(
    tx: Queryable,
    state: MatchState,
    command: StageCompleted,
    effects: OutboxMessage[],
  ): Promise<TransitionResult> {
    const row = this.#rowOf(state, command);
    if (typeof row === 'string') return { outcome: 'stale', reason: row };
    await tx.query(
      `UPDATE job_stages SET status = 'completed', progress = 1, outputs = $4::jsonb, stats = $5::jsonb,
         worker_id = $6, finished_at = now(), deadline_at = NULL, error = NULL, started_at = COALESCE(started_at, now())
       WHERE job_id = $1 AND stage = $2 AND segment_index = $3`,
      [
        row.job_id,
        row.stage,
        row.segment_index,
        JSON.stringify(command.outputs),
        command.stats ? JSON.stringify(command.stats) : null,
        command.worker_id,
      ],
    );
    Object.assign(row, { status: 'completed', progress: 1, outputs: command.outputs });
    effects.push(this.event(state, { stage: row.stage, stageStatus: 'completed' }));
    return this.advance(tx, state, effects);
  }

  async #failed(
    tx: Queryable,
    state: MatchState,
    command: StageFailed,
    effects: OutboxMessage[],
  ): Promise<TransitionResult> {
    const row = this.#rowOf(state, command);
    if (typeof row === 'string') return { outcome: 'stale', reason: row };
    const retry = retryOf(this.#tuning, row, command.error);
    if (retry) {
      await tx.query(
        `UPDATE job_stages SET error = $4::jsonb, waiting_attempts = waiting_attempts + $5
         WHERE job_id = $1 AND stage = $2 AND segment_index = $3`,
        [row.job_id, row.stage, row.segment_index, JSON.stringify(command.error), retry.waiting ? 1 : 0],
      );
      if (retry.waiting) row.waiting_attempts += 1;
      await this.dispatch(tx, state, row, effects, retry.delayMs);
      effects.push(this.event(state, { stage: row.stage, stageStatus: 'pending', error: command.error }));
      return { outcome: 'applied' };
    }
    await tx.query(
      `UPDATE job_stages SET status = 'failed', error = $4::jsonb, finished_at = now(), deadline_at = NULL
       WHERE job_id = $1 AND stage = $2 AND segment_index = $3`,
      [row.job_id, row.stage, row.segment_index, JSON.stringify(command.error)],
    );
    row.status = 'failed';
    row.error = command.error;
    const error = { ...command.error, stage: row.stage, segment_index: row.segment_index };
    const failedSegments = [...state.segments.values()].filter((s) => s.state === 'failed').length + 1;
    if (failedSegments > this.#tuning.matchMaxFailedSegments) {
      await this.stopRows(tx, state, () => true);
      const failed = {
        ...error,
        message:
          failedSegments > 1
            ? `${error.message} (segment ${failedSegments} to fail: more than ORCHESTRATOR_MATCH_MAX_FAILED_SEGMENTS = ${this.#tuning.matchMaxFailedSegments})`
            : error.message,
      };
      await this.finish(tx, state, 'failed', failed);
      effects.push(this.event(state, { stage: row.stage, stageStatus: 'failed', error: failed }));
      return { outcome: 'applied', finished: { status: 'failed', createdAt: state.job.created_at } };
    }
    // One bad segment does not fail the match: it is left out like a missing one.
    await tx.query(`UPDATE job_segments SET state = 'failed' WHERE job_id = $1 AND segment_index = $2`, [
      row.job_id,
      row.segment_index,
    ]);
    state.segments.get(row.segment_index)!.state = 'failed';
    await this.stopRows(tx, state, (r) => r.segment_index === row.segment_index);
    effects.push(this.event(state, { stage: row.stage, stageStatus: 'failed', error }));
    return this.advance(tx, state, effects);
  }

  /** The stage row a worker report is about (by its task id, else by stage and attempt), or why it is stale. */
  #rowOf(state: MatchState, command: { stage: Stage; attempt: number; task_message_id?: string | undefined }) {
    if (state.job.status !== 'running') return `job is ${state.job.status}`;
    const candidates = command.task_message_id
      ? state.rows.filter((r) => r.task_message_id === command.task_message_id)
      : state.rows.filter((r) => r.stage === command.stage && r.attempt === command.attempt && ACTIVE.has(r.status));
    if (candidates.length !== 1) {
      return candidates.length === 0
        ? `no ${command.stage} task ${command.task_message_id ?? `attempt ${command.attempt}`} is current`
        : `report names no task and ${candidates.length} segments run ${command.stage} attempt ${command.attempt}`;
    }
    const row = candidates[0]!;
    if (row.stage !== command.stage) return `task is ${row.stage}, not ${command.stage}`;
    if (row.attempt !== command.attempt) return `attempt ${command.attempt} is not the current ${row.attempt}`;
    if (!ACTIVE.has(row.status)) return `stage is ${row.status}`;
    return row;
  }

  /**
   * Dispatches every task the plan allows, then completes the job when the
   * match ended and all its segments went through every stage.
   */
  async advance(tx: Queryable, state: MatchState, effects: OutboxMessage[]): Promise<TransitionResult> {
    if (state.job.status !== 'running') return { outcome: 'applied' };
    await this.#finalAgain(tx, state);
    const plan = {
      stages: state.job.stages,
      segments: segmentStates(state),
      rows: state.rows,
      finalIndex: state.job.final_index,
      fanOutInFlight: this.#tuning.matchFanOutInFlight,
    };
    for (const task of dispatchableTasks(plan)) {
      const row = state.rows.find((r) => r.stage === task.stage && r.segment_index === task.index)!;
      await this.dispatch(tx, state, row, effects, 0);
    }
    if (matchComplete(plan)) {
      // Completed without its failed segments (the error says which); failed when none is left.
      const error = failedSegmentsError(state);
      const received = [...state.segments.values()].some((s) => s.state === 'received');
      const status = error && !received ? 'failed' : 'completed';
      await this.finish(tx, state, status, error);
      effects.push(this.event(state, error ? { error } : {}));
      return { outcome: 'applied', finished: { status, createdAt: state.job.created_at } };
    }
    await this.#saveProgress(tx, state);
    return { outcome: 'applied' };
  }

  /**
   * When the segments after the match's last one still in it were left out after that segment's
   * analyze/encode ran (as not final), those stages run again on it as final: the playlist gets its
   * `#EXT-X-ENDLIST`, the analytics their final summary.
   */
  async #finalAgain(tx: Queryable, state: MatchState): Promise<void> {
    const last = lastSegmentInMatch(segmentStates(state), state.job.final_index);
    if (last === null) return;
    for (const row of state.rows) {
      if (row.segment_index !== last || !FINAL_AWARE_STAGES.has(row.stage)) continue;
      if (row.status === 'completed' && !row.dispatched_final) await resetStageRow(tx, row, row.model_version);
    }
  }

  /** Sets active and pending rows that `which` selects to `cancelled` and drops their unsent tasks. */
  async stopRows(tx: Queryable, state: MatchState, which: (row: StageRow) => boolean): Promise<void> {
    const stopped = state.rows.filter((r) => (r.status === 'pending' || ACTIVE.has(r.status)) && which(r));
    for (const row of stopped) {
      await tx.query(
        `UPDATE job_stages SET status = 'cancelled', finished_at = now(), deadline_at = NULL
         WHERE job_id = $1 AND stage = $2 AND segment_index = $3`,
        [row.job_id, row.stage, row.segment_index],
      );
      row.status = 'cancelled';
    }
    const taskIds = stopped.map((r) => r.task_message_id).filter((id) => id !== null);
    if (taskIds.length > 0) {
      // Tasks not yet published are dropped; workers abort published ones (their claim is no longer current).
      await tx.query(`DELETE FROM outbox WHERE sent_at IS NULL AND payload->>'message_id' = ANY($1::text[])`, [
        taskIds,
      ]);
    }
  }

  /** Ends the job with `status`. */
  async finish(tx: Queryable, state: MatchState, status: 'completed' | 'failed' | 'cancelled', error: unknown) {
    await tx.query(
      `UPDATE jobs SET status = $2, error = $3::jsonb, finished_at = now(), updated_at = now(),
         progress = CASE WHEN $2 = 'completed' THEN 1 ELSE progress END
       WHERE job_id = $1`,
      [state.job.job_id, status, error === null ? null : JSON.stringify(error)],
    );
    state.job.status = status;
  }

  async #saveProgress(tx: Queryable, state: MatchState): Promise<void> {
    await tx.query(`UPDATE jobs SET progress = $2, updated_at = now() WHERE job_id = $1`, [
      state.job.job_id,
      matchProgressFraction(state),
    ]);
  }

  /** Starts the next attempt of `row` (see {@link dispatchSegmentTask}). */
  dispatch(tx: Queryable, state: MatchState, row: StageRow, effects: OutboxMessage[], delayMs: number) {
    return dispatchSegmentTask(this.#tuning, this.#topics, tx, state, row, effects, delayMs);
  }

  /** A `job.event` of the match job (progress over its received segments). */
  event(state: MatchState, about: EventAbout): OutboxMessage {
    return jobEventMessage(this.#topics, state.job, matchProgressFraction(state), about);
  }
}

/**
 * The note a match job ends with when segments failed (`segments_failed`): which, at which stage, and
 * why (the first failure's code and message); null when none failed.
 */
export function failedSegmentsError(state: MatchState): (MessageError & { segments: number[] }) | null {
  const failed = [...state.segments.values()]
    .filter((s) => s.state === 'failed')
    .map((s) => s.segment_index)
    .sort((a, b) => a - b);
  if (failed.length === 0) return null;
  const why = failed.map((k) => {
    const row = state.rows.find((r) => r.segment_index === k && r.status === 'failed');
    return `${k} (${row ? `${row.stage}: ${row.error?.code ?? 'failed'}` : 'failed'})`;
  });
  const first = state.rows.find((r) => r.segment_index === failed[0] && r.status === 'failed')?.error;
  return {
    code: 'segments_failed',
    message:
      `segment${failed.length > 1 ? 's' : ''} ${why.join(', ')} failed; the match went on without ${failed.length > 1 ? 'them' : 'it'}` +
      (first ? ` — ${first.message}` : ''),
    retriable: false,
    segments: failed,
  };
}

/** Errors of a match job's stage carry the segment they failed on. */
export type MatchStageError = MessageError & { stage: Stage; segment_index: number };
