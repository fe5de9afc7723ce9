import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ArtifactRef, StageTask } from '@polyvision/shared';
import { PolyvisionError } from '@polyvision/shared';
import { segmentOutputKey } from '../segment/segment-output-key.ts';

/** The artifact stores moved to core/src/workers/artifacts/; re-exported for the stages' imports. */
export {
  type ArtifactIo,
  digestFile,
  LocalArtifactIo,
  type OutputFile,
  type OutputProducer,
} from '../artifacts/artifact-io.ts';

/**
 * The first input of one of `kinds` (in order of preference).
 *
 * @throws PolyvisionError `input_missing` (not retriable) when none is there.
 */
export function findInput(task: StageTask, kinds: readonly string[]): ArtifactRef {
  for (const kind of kinds) {
    const ref = task.inputs.find((i) => i.kind === kind);
    if (ref) return ref;
  }
  throw new PolyvisionError(
    'input_missing',
    `stage ${task.stage} of job ${task.job_id} needs an input of kind ${kinds.join(' or ')}; got ${
      task.inputs.map((i) => i.kind).join(', ') || 'none'
    }`,
  );
}

/**
 * The object key of a stage output: `<org>/<match>/<stage>/<model_version>/<name…>`, with
 * `segment-00000k/` after the version for a segment of a match job (`segmentOutputKey`); the same on every re-run.
 */
export function outputKey(task: StageTask, ...name: string[]): string {
  return segmentOutputKey(task, ...name);
}

/** Runs `fn` with a fresh work folder under `baseDir` (the system temp folder by default), removed afterwards. */
export async function withWorkDir<T>(fn: (dir: string) => Promise<T>, baseDir = tmpdir()): Promise<T> {
  await mkdir(baseDir, { recursive: true });
  const dir = await mkdtemp(join(baseDir, 'pv-stage-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Calls `report` at most every `intervalMs` (always for the final 1). */
export function throttle(report: (fraction: number) => void, intervalMs = 500): (fraction: number) => void {
  let last = 0;
  return (fraction) => {
    const now = Date.now();
    if (fraction >= 1 || now - last >= intervalMs) {
      last = now;
      report(fraction);
    }
  };
}

/** Where the stage handlers keep artifacts and scratch files, from the environment. */
export interface StageIoConfig {
  /** `WORKER_ARTIFACT_DIR`: root of the local artifact store. @defaultValue `.work/artifacts` */
  artifactDir: string;
  /** `WORKER_ARTIFACT_STORAGE_ID`: the storage id its refs carry. @defaultValue `local` */
  storageId: string;
  /** `WORKER_WORK_DIR`: scratch folders for one task each. @defaultValue the system temp folder */
  workDir: string;
}

/** Reads {@link StageIoConfig} from the environment. */
export function stageIoConfig(env: Record<string, string | undefined>): StageIoConfig {
  return {
    artifactDir: env.WORKER_ARTIFACT_DIR || '.work/artifacts',
    storageId: env.WORKER_ARTIFACT_STORAGE_ID || 'local',
    workDir: env.WORKER_WORK_DIR || tmpdir(),
  };
}
