import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import type { ArtifactRef, SegmentRef, Stage, StageTask } from '@polyvision/shared';
import { silentLogger } from '@polyvision/shared';
import type { DetectionsFile } from '../../../src/workers/detect/index.ts';
import { formatFrameLine } from '../../../src/workers/detect/index.ts';
import type { StageHandler, StageResult } from '../../../src/workers/runtime/stage-handler.ts';

/** A stage task of match `match-1` of `org-1`, for `segment` (undefined: a whole-file job). */
export function segmentTask(stage: Stage, inputs: ArtifactRef[], segment?: SegmentRef): StageTask {
  return {
    type: 'stage.task',
    message_id: randomUUID(),
    job_id: 'job-1',
    organization_id: 'org-1',
    match_id: 'match-1',
    created_at: new Date().toISOString(),
    stage,
    attempt: 1,
    model_version: 'default',
    inputs,
    params: {},
    ...(segment ? { segment } : {}),
  };
}

/** Segment `index` of a match cut into `count` segments of `durationS` seconds. */
export function segmentOf(index: number, count: number, durationS: number): SegmentRef {
  return { index, start_s: index * durationS, duration_s: durationS, final: index === count - 1 };
}

/** Runs a handler on a task with a never-aborted signal. */
export function runStage(handler: StageHandler, task: StageTask): Promise<StageResult> {
  return handler.run({ task, signal: new AbortController().signal, reportProgress: () => {}, logger: silentLogger });
}

/** Stores a file in the local artifact store at `root/key` and returns its ref. */
export async function storeFile(root: string, key: string, bytes: Buffer | string, kind: string): Promise<ArtifactRef> {
  const path = join(root, key);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, bytes);
  const data = await readFile(path);
  return {
    kind,
    storage_id: 'local',
    object_key: key,
    size_bytes: data.length,
    sha256: createHash('sha256').update(data).digest('hex'),
  };
}

/** A detections file as JSONL text (header line, then one line per frame). */
export function detectionsText(file: DetectionsFile): string {
  return `${JSON.stringify(file.header)}\n${file.frames.map(formatFrameLine).join('')}`;
}

/** Every file under `root` → its sha256 and mtime (ms), keyed by path relative to `root`. */
export async function snapshotStore(root: string): Promise<Map<string, { sha256: string; mtimeMs: number }>> {
  const out = new Map<string, { sha256: string; mtimeMs: number }>();
  const walk = async (dir: string) => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await walk(path);
      else {
        out.set(relative(root, path), {
          sha256: createHash('sha256')
            .update(await readFile(path))
            .digest('hex'),
          mtimeMs: (await stat(path)).mtimeMs,
        });
      }
    }
  };
  await walk(root);
  return out;
}
