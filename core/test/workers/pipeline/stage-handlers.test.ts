import { randomUUID } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ArtifactRef, Stage, StageTask } from '@polyvision/shared';
import { silentLogger } from '@polyvision/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sharedAsset } from '../../../../test/support/index.ts';
import { createStageHandler as analyzeHandler } from '../../../src/workers/analyze/handler.ts';
import { createStageHandler as detectHandler } from '../../../src/workers/detect/handler.ts';
import { digestFile, LocalArtifactIo } from '../../../src/workers/detect/index.ts';
import { createStageHandler as encodeHandler } from '../../../src/workers/encode/handler.ts';
import type { StageHandler, StageResult } from '../../../src/workers/runtime/stage-handler.ts';
import { createStageHandler as trackHandler } from '../../../src/workers/track/handler.ts';
import { createStageHandler as vcamHandler } from '../../../src/workers/vcam/handler.ts';

const WALKING_MP4 = sharedAsset('footage/walking.mp4');
const YOLOX_NANO = sharedAsset('models/yolox_nano.onnx');
const missing = !WALKING_MP4 || !YOLOX_NANO;

let root: string;
let io: LocalArtifactIo;
let env: Record<string, string>;
let panorama: ArtifactRef;

beforeAll(async () => {
  if (missing) return;
  root = await mkdtemp(join(tmpdir(), 'pv-stages-'));
  io = new LocalArtifactIo(join(root, 'store'));
  await mkdir(join(root, 'store', 'org-1', 'match-1'), { recursive: true });
  await copyFile(WALKING_MP4!, join(root, 'store', 'org-1', 'match-1', 'panorama.mp4'));
  const digest = await digestFile(WALKING_MP4!);
  panorama = {
    kind: 'panorama',
    storage_id: 'local',
    object_key: 'org-1/match-1/panorama.mp4',
    size_bytes: digest.sizeBytes,
    sha256: digest.sha256,
  };
  env = {
    DETECT_MODEL_PATH: YOLOX_NANO!,
    DETECT_MODEL_VERSION: 'yolox-nano-coco',
    DETECT_CLASS_MAP: '0:player,32:ball',
    WORKER_WORK_DIR: join(root, 'work'),
    VCAM_OUTPUT_WIDTH: '640',
    VCAM_OUTPUT_HEIGHT: '360',
    ENCODE_SEGMENT_SECONDS: '2',
  };
});
afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

function task(stage: Stage, inputs: ArtifactRef[], modelVersion = 'default'): StageTask {
  return {
    type: 'stage.task',
    message_id: randomUUID(),
    job_id: 'job-1',
    organization_id: 'org-1',
    match_id: 'match-1',
    created_at: new Date().toISOString(),
    stage,
    attempt: 1,
    model_version: modelVersion,
    inputs,
    params: stage === 'detect' ? { analysis_fps: 12.5 } : {},
  };
}

async function run(handler: StageHandler, t: StageTask): Promise<{ result: StageResult; progress: number[] }> {
  const progress: number[] = [];
  const result = await handler.run({
    task: t,
    signal: new AbortController().signal,
    reportProgress: (f) => progress.push(f),
    logger: silentLogger,
  });
  return { result, progress };
}

describe.skipIf(missing)('the five stages as worker handlers on walking.mp4 (one-camera rig)', () => {
  it('detect → track → vcam ∥ analyze → encode, idempotent', async () => {
    const detect = await detectHandler({ env }, { io });
    try {
      const d = await run(detect, task('detect', [panorama]));
      expect(d.result.outputs.map((o) => o.kind)).toEqual(['detections']);
      expect(d.result.outputs[0]!.object_key).toBe('org-1/match-1/detect/default/detections.jsonl');
      expect(d.result.stats!.frames).toBeGreaterThan(160);
      expect(d.progress.at(-1)).toBe(1);
      // A re-run writes the same bytes under the same key.
      const again = await run(detect, task('detect', [panorama]));
      expect(again.result.outputs[0]!.sha256).toBe(d.result.outputs[0]!.sha256);
      // The person height its first pass measured is in the stats (the orchestrator hands it to a
      // match's later segments).
      const header = JSON.parse(
        (await readFile(join(root, 'store', d.result.outputs[0]!.object_key), 'utf8')).split('\n')[0]!,
      );
      expect(header.tiling.source).toBe('estimated');
      expect(d.result.stats!.person_height_px).toBeCloseTo(header.tiling.personHeightPx, 0);
      // Another model version cannot be served by this worker.
      await expect(run(detect, task('detect', [panorama], 'yolo11x-2027'))).rejects.toEqual(
        expect.objectContaining({ code: 'model_version_unavailable', retriable: false }),
      );

      const t = await run(trackHandler({ env }, { io }), task('track', [panorama, ...d.result.outputs]));
      expect(t.result.outputs.map((o) => o.kind)).toEqual(['tracks', 'ball-track']);
      expect(t.result.stats!.people).toBeGreaterThan(5);
      const ballTrack = JSON.parse(await readFile(join(root, 'store', t.result.outputs[1]!.object_key), 'utf8'));
      expect(ballTrack.format).toBe('polyvision.ball-track');
      expect(ballTrack.frames).toHaveLength(t.result.stats!.frames!);

      const upstream = [panorama, ...t.result.outputs];
      const [v, a] = await Promise.all([
        run(vcamHandler({ env }, { io }), task('vcam', upstream)),
        run(analyzeHandler({ env }, { io }), task('analyze', upstream)),
      ]);
      expect(v.result.outputs.map((o) => o.kind)).toEqual(['vcam', 'vcam-path', 'vcam-overlay']);
      expect(v.result.stats!.frames).toBe(341);
      expect(a.result.outputs[0]!.kind).toBe('analytics');
      const summary = JSON.parse(await readFile(join(root, 'store', a.result.outputs[0]!.object_key), 'utf8'));
      expect(summary.unit).toBe('px');
      expect(summary.players.length).toBe(t.result.stats!.people);
      // No calibration for one plain camera: no distances or sprints, and the summary says why.
      expect(summary.players[0].sprints).toBeNull();
      expect(summary.warnings.map((w: { code: string }) => w.code)).toContain('no_calibration');

      const e = await run(
        encodeHandler({ env }, { io }),
        task('encode', [panorama, ...v.result.outputs, ...a.result.outputs]),
      );
      expect(e.result.outputs.map((o) => o.kind)).toEqual(['hls', 'hls-playlist', 'poster']);
      const master = await readFile(join(root, 'store', e.result.outputs[0]!.object_key), 'utf8');
      expect(master).toMatch(/RESOLUTION=640x360/);

      // Last (it writes the same key): a run given a person height skips the first pass and reports none.
      const given = task('detect', [panorama]);
      given.params.person_height_px = 70;
      const hinted = await run(detect, given);
      expect(hinted.result.stats!.person_height_px).toBeUndefined();
      const hintedHeader = JSON.parse(
        (await readFile(join(root, 'store', hinted.result.outputs[0]!.object_key), 'utf8')).split('\n')[0]!,
      );
      expect(hintedHeader.tiling).toMatchObject({ source: 'hint', personHeightPx: 70 });
    } finally {
      await detect.close?.();
    }
  }, 600_000);

  it('fails clearly on a missing input kind', async () => {
    await expect(run(trackHandler({ env }, { io }), task('track', [panorama]))).rejects.toEqual(
      expect.objectContaining({ code: 'input_missing', retriable: false }),
    );
  });
});
