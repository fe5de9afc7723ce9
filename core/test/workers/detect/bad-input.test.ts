import { copyFile, mkdtemp, open, readdir, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sharedAsset } from '../../../../test/support/index.ts';
import { Detector, runDetect } from '../../../src/workers/detect/index.ts';
import { childPids, makeClip } from '../support/media.ts';
import { constantModel, identityModel } from '../support/onnx-builder.ts';

/**
 * Bad input is refused whatever the weights: a tiny YOLOv8-layout model (64×64 input, 2 classes,
 * 84 anchors) that never detects anything keeps these tests cheap and needs nothing from ../shared.
 */
const CLASS_MAP = { 0: 'player', 1: 'ball' } as const;
let modelPath: string;
/** Real footage to damage; the tests that need it skip in a plain clone. */
const WALKING_MP4 = sharedAsset('footage/walking.mp4');

let dir: string;
let detector: Detector;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pv-detect-bad-'));
  // Input handling, one tile per frame; the auto tiling's first pass on a bad file has its own case below.
  modelPath = join(dir, 'nothing-detector.onnx');
  await writeFile(modelPath, constantModel(64, [1, 6, 84], new Float32Array(6 * 84)));
  detector = await Detector.open({
    model: { path: modelPath },
    modelVersion: 'nothing',
    classMap: CLASS_MAP,
    tiling: { mode: 'off' },
  });
});
afterAll(async () => {
  await detector?.close();
  await rm(dir, { recursive: true, force: true });
});
afterEach(async () => {
  // No ffmpeg may outlive a failed stage, and no partial output may remain.
  expect(await childPids()).toEqual([]);
  expect((await readdir(dir)).filter((f) => f.endsWith('.part'))).toEqual([]);
});

const failure = (code: string) => expect.objectContaining({ code, retriable: false });

describe('detect refuses bad input clearly', () => {
  it('a file that is not a video', async () => {
    const inputPath = join(dir, 'notes.mp4');
    await writeFile(inputPath, 'this is not a video\n');
    await expect(runDetect({ inputPath, outputPath: join(dir, 'a.jsonl'), detector })).rejects.toEqual(
      failure('input_not_video'),
    );
  });

  it('a still image', async () => {
    const inputPath = join(dir, 'still.png');
    const { execFile } = await import('node:child_process');
    await new Promise((resolve, reject) =>
      execFile(
        'ffmpeg',
        ['-v', 'error', '-f', 'lavfi', '-i', 'color=c=red:size=32x32', '-frames:v', '1', inputPath],
        (e) => (e ? reject(e) : resolve(null)),
      ),
    );
    await expect(runDetect({ inputPath, outputPath: join(dir, 'b.jsonl'), detector })).rejects.toEqual(
      failure('input_not_video'),
    );
  });

  it.skipIf(!WALKING_MP4)('a truncated video', async () => {
    const inputPath = join(dir, 'truncated.mp4');
    await copyFile(WALKING_MP4!, inputPath);
    await truncate(inputPath, Math.floor((await stat(inputPath)).size / 2));
    await expect(runDetect({ inputPath, outputPath: join(dir, 'c.jsonl'), detector, analysisFps: 2 })).rejects.toEqual(
      failure('video_truncated'),
    );
  });

  it.skipIf(!WALKING_MP4)('a corrupt video (garbage written over the stream)', async () => {
    const inputPath = join(dir, 'corrupt.mp4');
    await copyFile(WALKING_MP4!, inputPath);
    const size = (await stat(inputPath)).size;
    const handle = await open(inputPath, 'r+');
    let seed = 7;
    const garbage = Buffer.alloc(4000, 0).map(() => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed & 0xff;
    });
    for (let offset = Math.floor(size / 4); offset < size; offset += Math.floor(size / 40)) {
      await handle.write(garbage, 0, garbage.length, offset);
    }
    await handle.close();
    await expect(runDetect({ inputPath, outputPath: join(dir, 'd.jsonl'), detector, analysisFps: 2 })).rejects.toEqual(
      failure('video_corrupt'),
    );
  });

  it.skipIf(!WALKING_MP4)(
    'a truncated video with automatic tiling (its first pass seeks past the end)',
    async () => {
      const inputPath = join(dir, 'truncated-auto.mp4');
      await copyFile(WALKING_MP4!, inputPath);
      await truncate(inputPath, Math.floor((await stat(inputPath)).size / 2));
      const auto = await Detector.open({ model: { path: modelPath }, modelVersion: 'nothing', classMap: CLASS_MAP });
      try {
        await expect(
          runDetect({ inputPath, outputPath: join(dir, 'c2.jsonl'), detector: auto, analysisFps: 1 }),
        ).rejects.toEqual(failure('video_truncated'));
      } finally {
        await auto.close();
      }
    },
    300_000,
  );

  it('a clip shorter than a second', async () => {
    const inputPath = await makeClip(join(dir, 'short.mp4'), 'testsrc2=size=160x90:rate=25', 0.4);
    await expect(runDetect({ inputPath, outputPath: join(dir, 'e.jsonl'), detector })).rejects.toEqual(
      failure('clip_too_short'),
    );
  });

  it('zero detections in the whole clip', async () => {
    const inputPath = await makeClip(join(dir, 'black.mp4'), 'color=c=black:size=160x90:rate=10', 1.5);
    const outputPath = join(dir, 'f.jsonl');
    await expect(runDetect({ inputPath, outputPath, detector })).rejects.toEqual(failure('no_detections'));
    await expect(stat(outputPath)).rejects.toThrow(/ENOENT/);
    // Allowed when asked: an empty pitch is then a valid (empty) result.
    const summary = await runDetect({ inputPath, outputPath, detector, failOnZeroDetections: false });
    expect(summary).toMatchObject({ frames: 15, detections: 0 });
  });

  it.skipIf(!WALKING_MP4)('stops promptly on abort and leaves no ffmpeg behind', async () => {
    const controller = new AbortController();
    let aborted = false;
    let progressAfterAbort = 0;
    const run = runDetect({
      inputPath: WALKING_MP4!,
      outputPath: join(dir, 'g.jsonl'),
      detector,
      signal: controller.signal,
      onProgress: (p) => {
        if (aborted) progressAfterAbort++;
        else if (p > 0.05) {
          aborted = true;
          controller.abort(new Error('cancelled by test'));
        }
      },
    });
    await expect(run).rejects.toThrow(/cancelled by test/);
    // The batch in flight finishes; nothing after it runs (no further batch reports progress).
    expect(aborted).toBe(true);
    expect(progressAfterAbort).toBe(0);
  });
});

describe('detect refuses bad models clearly', () => {
  it('a file that is not ONNX', async () => {
    const path = join(dir, 'not-a-model.onnx');
    await writeFile(path, 'PK\u0003\u0004 definitely not protobuf');
    await expect(Detector.open({ model: { path }, modelVersion: 'x' })).rejects.toEqual(failure('model_invalid'));
  });

  it('a missing model file', async () => {
    await expect(Detector.open({ model: { path: join(dir, 'nope.onnx') }, modelVersion: 'x' })).rejects.toEqual(
      failure('model_not_found'),
    );
  });

  it('an ONNX model whose output shape matches no layout', async () => {
    const path = join(dir, 'identity.onnx');
    await writeFile(path, identityModel(64));
    await expect(Detector.open({ model: { path }, modelVersion: 'x' })).rejects.toEqual(
      failure('model_layout_unsupported'),
    );
    const wrongCount = join(dir, 'wrong-anchors.onnx');
    // YOLOX-like rows, but 100 anchors where a 64×64 input has 84.
    await writeFile(wrongCount, constantModel(64, [1, 100, 6], new Float32Array(600)));
    await expect(Detector.open({ model: { path: wrongCount }, modelVersion: 'x' })).rejects.toEqual(
      failure('model_layout_unsupported'),
    );
  });

  it('a class map naming classes the model does not have', async () => {
    const path = join(dir, 'two-classes.onnx');
    await writeFile(path, constantModel(64, [1, 6, 84], new Float32Array(6 * 84)));
    await expect(Detector.open({ model: { path }, modelVersion: 'x', classMap: { 32: 'ball' } })).rejects.toEqual(
      failure('class_map_invalid'),
    );
  });

  it('options out of range', async () => {
    await expect(
      Detector.open({ model: { path: modelPath }, modelVersion: 'x', classMap: CLASS_MAP, scoreThreshold: 2 }),
    ).rejects.toEqual(failure('detect_options_invalid'));
  });
});
