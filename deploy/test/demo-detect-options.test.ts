import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { digestFile, LocalArtifactIo, loadStageHandler, readDetectionsFile } from '@polyvision/core';
import { silentLogger } from '@polyvision/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nothingDetectedHint, parseDemoArgs, stitchPanorama } from '../src/demo/index.ts';

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const SHARED = join(repoRoot, '..', 'shared');
const WALKING = join(SHARED, 'footage', 'walking.mp4');
const YOLOX = join(SHARED, 'models', 'yolox_nano.onnx');
const missing = [WALKING, YOLOX].find((p) => !existsSync(p));
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pv-demo-detect-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('pnpm demo detector options', () => {
  it('turns flags and shell DETECT_* into the workers’ variables, flags winning', () => {
    const options = parseDemoArgs(
      ['--tiling', '2x1', '--score-threshold', '0.4', '--analysis-fps', '5'],
      repoRoot,
      repoRoot,
      { DETECT_TILING: 'off', DETECT_PERSON_HEIGHT_PX: '40', DETECT_ANALYSIS_FPS: '9', HOME: '/x' },
    );
    if (options === 'help') throw new Error('unexpected help');
    expect(options.stageEnv).toMatchObject({
      DETECT_TILING: '2x1',
      DETECT_SCORE_THRESHOLD: '0.4',
      DETECT_ANALYSIS_FPS: '5',
      DETECT_PERSON_HEIGHT_PX: '40',
    });
    expect(options.stageEnv.HOME).toBeUndefined();
    const fromShell = parseDemoArgs([], repoRoot, repoRoot, { DETECT_ANALYSIS_FPS: '9' });
    expect(fromShell !== 'help' && fromShell.stageEnv.DETECT_ANALYSIS_FPS).toBe('9');
    expect(() => parseDemoArgs(['--tiling', 'wide'], repoRoot, repoRoot, {})).toThrow(/--tiling wide/);
    expect(() => parseDemoArgs(['--score-threshold', '2'], repoRoot, repoRoot, {})).toThrow(/--score-threshold/);
    const fp32 = parseDemoArgs(['--precision', 'fp32'], repoRoot, repoRoot, { DETECT_PRECISION: 'int8' });
    expect(fp32 !== 'help' && fp32.stageEnv.DETECT_PRECISION).toBe('fp32');
    expect(() => parseDemoArgs(['--precision', 'fp16'], repoRoot, repoRoot, {})).toThrow(/--precision fp16/);
    const tta = parseDemoArgs(['--tta', 'flip'], repoRoot, repoRoot, {});
    expect(tta !== 'help' && tta.stageEnv.DETECT_TTA).toBe('flip');
    expect(() => parseDemoArgs(['--tta', 'rotate'], repoRoot, repoRoot, {})).toThrow(/--tta rotate/);
    const verifier = parseDemoArgs(['--verifier', 'off'], repoRoot, repoRoot, {});
    expect(verifier !== 'help' && verifier.stageEnv.DETECT_VERIFIER).toBe('off');
    expect(() => parseDemoArgs(['--verifier', 'maybe'], repoRoot, repoRoot, {})).toThrow(/--verifier maybe/);
    const still = parseDemoArgs(['--camera-motion', 'off'], repoRoot, repoRoot, {});
    expect(still !== 'help' && [still.stageEnv.DETECT_CAMERA_MOTION, still.stageEnv.TRACK_CAMERA_MOTION]).toEqual([
      'off',
      'off',
    ]);
    expect(() => parseDemoArgs(['--camera-motion', 'maybe'], repoRoot, repoRoot, {})).toThrow(/--camera-motion maybe/);
  });

  it('reads the pitch points before calibrating: a file it cannot use fails at once', async () => {
    const points = join(dir, 'few-points.json');
    await writeFile(points, JSON.stringify({ points: [] }));
    // The "cameras" are not videos: calibrating first would fail on them instead.
    const notVideo = join(repoRoot, 'package.json');
    await expect(
      stitchPanorama({ cameraPaths: [notVideo, notVideo], calibrationPath: null, pitchPointsPath: points }, dir),
    ).rejects.toMatchObject({
      code: 'pitch_points_invalid',
      message: expect.stringMatching(/at least 4 pitch points/),
    });
  });

  it('takes --pitch-points only for a stitched rig, and only a file that exists', () => {
    const points = join(repoRoot, 'bench', 'label', 'tsukuba-pair', 'pitch-points.json');
    const video = join(repoRoot, 'package.json'); // any existing path: the options only check existence
    const two = parseDemoArgs(['--cameras', `${video},${video}`, '--pitch-points', points], repoRoot, repoRoot, {});
    expect(two !== 'help' && two.pitchPoints).toBe(points);
    expect(() => parseDemoArgs(['--cameras', video, '--pitch-points', points], repoRoot, repoRoot, {})).toThrow(
      /--pitch-points needs a stitched rig/,
    );
    expect(() =>
      parseDemoArgs(['--cameras', `${video},${video}`, '--pitch-points', 'nope.json'], repoRoot, repoRoot, {}),
    ).toThrow(/--pitch-points: .*nope\.json does not exist/);
  });

  it.skipIf(missing)(
    `the demo's stage variables reach its detect worker${missing ? ` (skipped: ${missing} is missing)` : ''}`,
    async () => {
      const options = parseDemoArgs(
        [
          '--model',
          YOLOX,
          '--model-layout',
          'yolox',
          '--tiling',
          '2x1',
          '--score-threshold',
          '0.4',
          '--analysis-fps',
          '1',
        ],
        repoRoot,
        repoRoot,
        {},
      );
      if (options === 'help') throw new Error('unexpected help');
      const store = join(dir, 'store');
      await mkdir(join(store, 'org', 'm'), { recursive: true });
      await copyFile(WALKING, join(store, 'org', 'm', 'panorama.mp4'));
      const digest = await digestFile(WALKING);
      const io = new LocalArtifactIo(store);
      // As deploy/src/demo/stack.ts builds its worker's handlers.
      const handler = await loadStageHandler(
        'detect',
        { env: { ...options.stageEnv, WORKER_WORK_DIR: join(dir, 'work') } },
        { io },
      );
      try {
        const result = await handler.run({
          task: {
            type: 'stage.task',
            message_id: randomUUID(),
            job_id: 'job',
            organization_id: 'org',
            match_id: 'm',
            created_at: new Date().toISOString(),
            stage: 'detect',
            attempt: 1,
            model_version: 'default',
            inputs: [
              {
                kind: 'panorama',
                storage_id: 'local',
                object_key: 'org/m/panorama.mp4',
                size_bytes: digest.sizeBytes,
                sha256: digest.sha256,
              },
            ],
            params: {},
          },
          signal: new AbortController().signal,
          reportProgress: () => {},
          logger: silentLogger,
        });
        const file = await readDetectionsFile(join(store, result.outputs[0]!.object_key));
        expect(file.header.analysisFps).toBe(1);
        expect(file.header.tiling).toMatchObject({ mode: 'grid', columns: 2, rows: 1 });
        expect(file.header.model.layout).toBe('yolox');
        const scores = file.frames.flatMap((f) => f.detections.map((d) => d.score));
        expect(scores.length).toBeGreaterThan(0);
        expect(Math.min(...scores)).toBeGreaterThanOrEqual(0.4);
      } finally {
        await handler.close?.();
      }
    },
    600_000,
  );

  it('says what to do when the default detector finds nothing, and only then', () => {
    const parse = (args: string[], env: Record<string, string> = {}) => {
      const options = parseDemoArgs(args, repoRoot, repoRoot, env);
      if (options === 'help') throw new Error('unexpected help');
      return options.stageEnv;
    };
    const nothing = { code: 'no_detections', message: 'no player/goalkeeper/referee/ball detected in 100 frames' };
    expect(nothingDetectedHint(nothing, parse([]))).toMatch(/^\nHINT: .*--model .*--model-layout yolox/);
    // The user chose the model (flag or shell): the hint about the default model would be wrong.
    const mine = join(repoRoot, 'core', 'models', 'player-detector', 'player-detector.onnx');
    expect(nothingDetectedHint(nothing, parse(['--model', mine]))).toBe('');
    expect(nothingDetectedHint(nothing, parse([], { DETECT_MODEL_PATH: mine }))).toBe('');
    expect(nothingDetectedHint({ code: 'video_corrupt', message: 'x' }, parse([]))).toBe('');
    expect(nothingDetectedHint(null, parse([]))).toBe('');
  });

  it('converts a one-camera .avi to an MP4 panorama instead of renaming it', async () => {
    const avi = join(dir, 'camera.avi');
    await run('ffmpeg', [
      '-v',
      'error',
      '-y',
      '-f',
      'lavfi',
      '-i',
      'testsrc2=size=160x90:rate=10:duration=2',
      '-c:v',
      'mpeg4',
      avi,
    ]);
    const work = join(dir, 'edge');
    await mkdir(work);
    const panorama = await stitchPanorama({ cameraPaths: [avi], calibrationPath: null }, work);
    const { stdout } = await run('ffprobe', [
      '-v',
      'error',
      '-count_frames',
      '-show_entries',
      'format=format_name:stream=codec_name,nb_read_frames',
      '-of',
      'json',
      panorama.path,
    ]);
    const probe = JSON.parse(stdout);
    expect(probe.format.format_name).toContain('mp4');
    expect(probe.streams[0]).toMatchObject({ codec_name: 'h264', nb_read_frames: '20' });
    await expect(
      stitchPanorama({ cameraPaths: [join(dir, 'notes.mkv')], calibrationPath: null }, work),
    ).rejects.toMatchObject({
      code: 'demo_input_unreadable',
    });
  });
});
