import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { type ArtifactRef, carryKind, PolyvisionError, type Stage } from '@polyvision/shared';
import type { Database } from '../db/database.ts';
import type { StageHandler } from '../workers/runtime/stage-handler.ts';

/**
 * TEST DOUBLE — not a real stage. Runs one stage on one segment of a match
 * job: records the run in `test_segment_runs` (segment index, attempt,
 * which carry it read, whether the segment was final, the task's params), sleeps, and returns
 * an output plus, for every stage, a `<stage>-carry` artifact whose key
 * names the segment (`…/<stage>/carry-<index>`), so tests see which carry a
 * sequential stage's next segment read. Nothing is stored: the refs are shapes.
 */
export interface SegmentStageOptions {
  db: Database;
  /** How long one run sleeps, ms. @defaultValue 20 */
  sleepMs?: number | ((stage: Stage, index: number) => number);
  /** Fail with a non-retriable error when it returns true. */
  failPermanently?: (stage: Stage, index: number) => boolean;
  /** Stats a run reports beside its `segment_index` (as a real stage's, e.g. detect's `person_height_px`). */
  stats?: (stage: Stage, index: number) => Record<string, number>;
}

/** Creates `test_segment_runs` (idempotent). */
export async function ensureSegmentRunsTable(db: Database): Promise<void> {
  await db.exec(
    `CREATE TABLE IF NOT EXISTS test_segment_runs (
       id bigserial PRIMARY KEY,
       task_message_id uuid NOT NULL,
       job_id text NOT NULL,
       stage text NOT NULL,
       segment_index integer NOT NULL,
       attempt integer NOT NULL,
       final boolean NOT NULL,
       carry_key text,
       carry_from integer,
       gap_s double precision,
       worker_id text NOT NULL,
       params jsonb,
       started_at timestamptz NOT NULL DEFAULT now(),
       finished_at timestamptz
     )`,
  );
  // A table made before these columns existed (a kept local database).
  await db.exec(
    `ALTER TABLE test_segment_runs ADD COLUMN IF NOT EXISTS carry_from integer,
       ADD COLUMN IF NOT EXISTS gap_s double precision, ADD COLUMN IF NOT EXISTS params jsonb`,
  );
}

function ref(kind: string, key: string): ArtifactRef {
  return {
    kind,
    storage_id: 'se-test',
    object_key: key,
    size_bytes: 1,
    sha256: createHash('sha256').update(key).digest('hex'),
  };
}

/** A segment test stage for `stage` (`workerId` is recorded with each run). */
export function segmentStage(stage: Stage, options: SegmentStageOptions, workerId = 'test'): StageHandler {
  return {
    stage,
    async run({ task, signal, reportProgress }) {
      const index = task.segment?.index ?? -1;
      const carry = task.inputs.find((i) => i.kind === carryKind(stage));
      const inserted = await options.db.query<{ id: string }>(
        `INSERT INTO test_segment_runs (task_message_id, job_id, stage, segment_index, attempt, final, carry_key,
           carry_from, gap_s, worker_id, params)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id`,
        [
          task.message_id,
          task.job_id,
          stage,
          index,
          task.attempt,
          task.segment?.final ?? false,
          carry?.object_key ?? null,
          task.segment?.carry_from ?? null,
          task.segment?.gap_s ?? null,
          workerId,
          JSON.stringify(task.params),
        ],
      );
      const sleepMs = typeof options.sleepMs === 'function' ? options.sleepMs(stage, index) : (options.sleepMs ?? 20);
      reportProgress(0.1);
      await sleep(sleepMs, undefined, { signal });
      if (options.failPermanently?.(stage, index)) {
        throw new PolyvisionError('test_permanent_failure', `${stage} fails on segment ${index} (test double)`, {
          retriable: false,
        });
      }
      await options.db.query(`UPDATE test_segment_runs SET finished_at = now() WHERE id = $1`, [inserted.rows[0]!.id]);
      const base = `${task.organization_id}/${task.match_id}/${stage}`;
      return {
        outputs: [ref(stage, `${base}/out-${index}`), ref(carryKind(stage), `${base}/carry-${index}`)],
        stats: { segment_index: index, ...options.stats?.(stage, index) },
      };
    },
  };
}
