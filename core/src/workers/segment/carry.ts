import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type ArtifactRef, carryKind, PolyvisionError, type SegmentRef, type StageTask } from '@polyvision/shared';
import { z } from 'zod';
import type { ArtifactIo } from '../artifacts/artifact-io.ts';
import { segmentOutputKey } from './segment-output-key.ts';

/** Format tag of a carry artifact. */
export const CARRY_FORMAT = 'polyvision.carry';

const envelopeSchema = z.object({
  format: z.literal(CARRY_FORMAT),
  version: z.literal(1),
  stage: z.string(),
  match_id: z.string(),
  /** The segment whose run wrote it. */
  segment_index: z.number().int().min(0),
  state: z.unknown(),
});

/**
 * The state a sequential stage's run of the previous segment left for segment k (issue #18), or
 * `null` when there is none to read: a whole-file job, the match's first segment, or a segment
 * that starts fresh (`task.segment.carry_from` null: no earlier segment went through). The
 * previous segment is `task.segment.carry_from` (segments left out of the match are skipped; see
 * `gap_s`), else k−1. Reads the input of kind `carryKind(task.stage)` (`track-carry`, …) that the
 * orchestrator passes.
 *
 * @param schema - validates the stage's own state.
 * @throws PolyvisionError `carry_missing` (not retriable: the orchestrator gave no carry to a
 *   segment that continues from another, which the same task repeats) when the input is absent;
 *   `carry_invalid` (not retriable) when it is not JSON, not a carry of this stage and match,
 *   not from the previous segment, or its state does not validate; `input_unavailable` (retriable) from the store.
 */
export async function readCarry<T>(
  task: StageTask,
  schema: z.ZodType<T>,
  io: ArtifactIo,
  workDir: string,
  signal?: AbortSignal,
): Promise<T | null> {
  if (!task.segment) return null;
  const from = previousSegmentOf(task.segment);
  if (from === null) return null;
  const kind = carryKind(task.stage);
  const ref = task.inputs.find((i) => i.kind === kind);
  if (!ref) {
    throw new PolyvisionError(
      'carry_missing',
      `${task.stage} of segment ${task.segment.index} of match ${task.match_id} needs the ${kind} of segment ${from} in its inputs; got ${
        task.inputs.map((i) => i.kind).join(', ') || 'none'
      }`,
      { details: { stage: task.stage, segment: task.segment.index } },
    );
  }
  const path = await io.openInput(ref, workDir, signal);
  const invalid = (why: string, cause?: unknown) =>
    new PolyvisionError('carry_invalid', `${ref.object_key}: ${why}`, {
      cause,
      details: { stage: task.stage, segment: task.segment?.index },
    });
  let json: unknown;
  try {
    json = JSON.parse(await readFile(path, 'utf8'));
  } catch (cause) {
    throw invalid('not JSON', cause);
  }
  const envelope = envelopeSchema.safeParse(json);
  if (!envelope.success) throw invalid(`not a ${CARRY_FORMAT} file (${envelope.error.issues[0]?.message})`);
  const e = envelope.data;
  if (e.stage !== task.stage || e.match_id !== task.match_id) {
    throw invalid(`a carry of ${e.stage} for match ${e.match_id}, not of ${task.stage} for ${task.match_id}`);
  }
  if (e.segment_index !== from) {
    throw invalid(`written by segment ${e.segment_index}, segment ${task.segment.index} needs ${from}`);
  }
  const state = schema.safeParse(e.state);
  if (!state.success) {
    const issue = state.error.issues[0];
    throw invalid(`state ${issue?.path.join('.')}: ${issue?.message}`);
  }
  return state.data;
}

/**
 * The segment whose carry a segment's task reads: `carry_from` when the orchestrator says (null:
 * start fresh), else the one before (none for segment 0).
 */
export function previousSegmentOf(segment: SegmentRef): number | null {
  if (segment.carry_from !== undefined) return segment.carry_from;
  return segment.index === 0 ? null : segment.index - 1;
}

/**
 * Stores the state this segment's run leaves for the next one, as a JSON carry artifact of kind
 * `carryKind(task.stage)` at `…/<stage>/<version>/segment-00000k/<stage>-carry.json`; returns its
 * ref (one of the task's outputs). Nothing is written for a whole-file job (returns null).
 */
export async function writeCarry(
  task: StageTask,
  state: unknown,
  io: ArtifactIo,
  workDir: string,
  signal?: AbortSignal,
): Promise<ArtifactRef | null> {
  if (!task.segment) return null;
  const kind = carryKind(task.stage);
  const path = join(workDir, `${kind}.json`);
  const temporary = `${path}.part`;
  try {
    await writeFile(
      temporary,
      JSON.stringify({
        format: CARRY_FORMAT,
        version: 1,
        stage: task.stage,
        match_id: task.match_id,
        segment_index: task.segment.index,
        state,
      }),
    );
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
  return io.writeOutput(
    { task, kind, objectKey: segmentOutputKey(task, `${kind}.json`), localPath: path, contentType: 'application/json' },
    signal,
  );
}
