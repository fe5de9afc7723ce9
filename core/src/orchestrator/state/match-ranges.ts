import type { JobCancel, JobReprocess, MessageError, SegmentRange } from '@polyvision/shared';
import type { Queryable } from '../../db/database.ts';
import { stageAndDownstream } from '../contracts/stages.ts';
import type { OutboxMessage } from '../outbox/outbox-writer.ts';
import { resetStageRow, type StageRow } from './job-rows.ts';
import type { TransitionResult } from './job-state-machine.ts';
import type { MatchState } from './match-rows.ts';
import type { MatchStateMachine } from './match-state-machine.ts';
import { isSequential } from './segment-plan.ts';

const TERMINAL_JOB = new Set(['completed', 'failed', 'cancelled']);
const inRange = (range: SegmentRange | undefined, k: number) =>
  !range || (k >= range.from_index && k <= range.to_index);

/**
 * Cancels a match job, or only a range of its segments: those segments are
 * `cancelled` (one not arrived yet is cancelled ahead, and ignored when it
 * comes), their tasks stop, and the sequential stages go on past them; the
 * job completes without them.
 */
export async function cancelMatch(
  machine: MatchStateMachine,
  tx: Queryable,
  state: MatchState,
  command: JobCancel,
  effects: OutboxMessage[],
): Promise<TransitionResult> {
  const { job } = state;
  if (TERMINAL_JOB.has(job.status)) return { outcome: 'rejected', reason: `job is ${job.status}` };
  const range = command.segments;
  if (!range) {
    const error: MessageError = { code: 'cancelled', message: command.reason ?? 'cancelled', retriable: false };
    await machine.stopRows(tx, state, () => true);
    await machine.finish(tx, state, 'cancelled', error);
    effects.push(machine.event(state, { error }));
    return { outcome: 'applied', finished: { status: 'cancelled', createdAt: job.created_at } };
  }
  const top = job.final_index === null ? range.to_index : Math.min(range.to_index, job.final_index);
  for (let k = range.from_index; k <= top; k++) {
    await tx.query(
      `INSERT INTO job_segments (job_id, segment_index, state) VALUES ($1, $2, 'cancelled')
       ON CONFLICT (job_id, segment_index) DO UPDATE SET state = 'cancelled' WHERE job_segments.state = 'received'`,
      [job.job_id, k],
    );
    const known = state.segments.get(k);
    if (known) {
      if (known.state === 'received') known.state = 'cancelled';
    } else {
      state.segments.set(k, {
        job_id: job.job_id,
        segment_index: k,
        state: 'cancelled',
        slot: null,
        start_s: null,
        duration_s: null,
        input: null,
        received_at: null,
      });
    }
  }
  await machine.stopRows(tx, state, (r) => inRange(range, r.segment_index));
  effects.push(machine.event(state, {}));
  return machine.advance(tx, state, effects);
}

/**
 * Runs a match job again from `from_stage`, on the whole match or on a range
 * of segments. In the range, `from_stage` and its downstream stages run
 * again (and every row that did not complete, cancelled and failed segments included);
 * a sequential stage among them also runs again on every later received
 * segment, because its carry changes. Refused while an affected row runs
 * (cancel it or wait), and on the whole match while the job runs.
 */
export async function reprocessMatch(
  machine: MatchStateMachine,
  tx: Queryable,
  state: MatchState,
  command: JobReprocess,
  effects: OutboxMessage[],
): Promise<TransitionResult> {
  const { job } = state;
  const range = command.segments;
  if (!range && !TERMINAL_JOB.has(job.status)) {
    return { outcome: 'rejected', reason: `job is ${job.status}; cancel it, wait, or reprocess a range of segments` };
  }
  if (!job.stages.includes(command.from_stage)) {
    return { outcome: 'rejected', reason: `job has no stage ${command.from_stage}` };
  }
  const again = new Set(stageAndDownstream(command.from_stage, job.stages));
  const revived = [...state.segments.values()].filter(
    (s) => (s.state === 'cancelled' || s.state === 'failed') && s.input !== null && inRange(range, s.segment_index),
  );
  const affected = (row: StageRow): boolean => {
    const seg = state.segments.get(row.segment_index);
    const k = row.segment_index;
    if (inRange(range, k)) {
      return again.has(row.stage) || row.status !== 'completed' || revived.some((s) => s.segment_index === k);
    }
    return (
      seg?.state === 'received' &&
      range !== undefined &&
      k > range.to_index &&
      again.has(row.stage) &&
      isSequential(row.stage)
    );
  };
  const rows = state.rows.filter(affected);
  const busy = rows.find((r) => r.status === 'dispatched' || r.status === 'running');
  if (busy) {
    return {
      outcome: 'rejected',
      reason: `${busy.stage} runs on segment ${busy.segment_index}; cancel it or wait before reprocessing`,
    };
  }
  for (const seg of revived) {
    await tx.query(`UPDATE job_segments SET state = 'received' WHERE job_id = $1 AND segment_index = $2`, [
      job.job_id,
      seg.segment_index,
    ]);
    seg.state = 'received';
  }
  const versions = { ...job.model_versions, ...(command.model_versions ?? {}) };
  for (const row of rows) await resetStageRow(tx, row, versions[row.stage] ?? row.model_version);
  await tx.query(
    `UPDATE jobs SET status = 'running', error = NULL, finished_at = NULL, model_versions = $2::jsonb,
       updated_at = now() WHERE job_id = $1`,
    [job.job_id, JSON.stringify(versions)],
  );
  Object.assign(job, { status: 'running', error: null, finished_at: null, model_versions: versions });
  effects.push(machine.event(state, {}));
  return machine.advance(tx, state, effects);
}
