import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Detector,
  modelLooksWrong,
  readDetectionsFile,
  runDetect,
  TORSO_MEAN_RGB,
} from '../../../src/workers/detect/index.ts';
import { makeClip } from '../support/media.ts';
import { constantModel } from '../support/onnx-builder.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pv-sanity-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('a model that looks wrong for the footage', () => {
  it('is recognised from many boxes per frame, almost all low-scoring', () => {
    expect(modelLooksWrong({ boxes: 270 * 10, lowScoreBoxes: 260 * 10 }, 10)).toMatch(
      /looks wrong.*270 boxes per frame/,
    );
    // Many confident boxes (a crowded scene) or few weak ones are fine.
    expect(modelLooksWrong({ boxes: 270 * 10, lowScoreBoxes: 100 * 10 }, 10)).toBeUndefined();
    expect(modelLooksWrong({ boxes: 40 * 10, lowScoreBoxes: 40 * 10 }, 10)).toBeUndefined();
    expect(modelLooksWrong({ boxes: 0, lowScoreBoxes: 0 }, 0)).toBeUndefined();
  });

  it('stores torso mean colours only when it saw the frames at the source size', async () => {
    // 128² input, YOLOv8 layout [1, 5, 8]: one 16×32 "player" at the centre scoring 0.9, 7 empty anchors.
    const N = 8;
    const values = new Float32Array(5 * N);
    values.set([64], 0);
    values.set([64], N);
    values.set([16], 2 * N);
    values.set([32], 3 * N);
    values.set([0.9], 4 * N);
    const modelPath = join(dir, 'one.onnx');
    await writeFile(modelPath, constantModel(128, [1, 5, N], values));
    const detector = await Detector.open({
      model: { path: modelPath },
      modelVersion: 'one',
      classMap: { 0: 'player' },
      tiling: { mode: 'off' },
    });
    try {
      for (const [size, measured] of [
        [128, true], // the source size: the colours the analyze stage would measure
        [256, false], // decoded at half size for the one tile: a shirt blended with its surroundings
      ] as const) {
        const clip = await makeClip(join(dir, `red-${size}.mp4`), `color=c=red:size=${size}x${size}:rate=5`, 1.2);
        const outputPath = join(dir, `one-${size}.jsonl`);
        await runDetect({ inputPath: clip, outputPath, detector });
        const file = await readDetectionsFile(outputPath);
        const boxes = file.frames.flatMap((f) => f.detections);
        expect(boxes.length).toBeGreaterThan(0);
        expect(file.header.torsoColour).toBe(measured ? TORSO_MEAN_RGB : undefined);
        for (const d of boxes) {
          if (!measured) expect(d.torso).toBeUndefined();
          else expect(d.torso![0]).toBeGreaterThan(200);
        }
      }
    } finally {
      await detector.close();
    }
  }, 300_000);

  it('puts a warning in the detections header', async () => {
    // 128² input, YOLOv8 layout [1, 5, 192]: 192 separate 4×4 "players" scoring 0.15 in every frame.
    const N = 192;
    const values = new Float32Array(5 * N);
    for (let i = 0; i < N; i++) {
      values[i] = 4 + (i % 16) * 8;
      values[N + i] = 4 + Math.floor(i / 16) * 8;
      values[2 * N + i] = 4;
      values[3 * N + i] = 4;
      values[4 * N + i] = 0.15;
    }
    const modelPath = join(dir, 'noise.onnx');
    await writeFile(modelPath, constantModel(128, [1, 5, N], values));
    const clip = await makeClip(join(dir, 'clip.mp4'), 'testsrc2=size=128x128:rate=5', 1.2);
    const detector = await Detector.open({
      model: { path: modelPath },
      modelVersion: 'noise',
      classMap: { 0: 'player' },
      tiling: { mode: 'off' },
    });
    try {
      const outputPath = join(dir, 'noise.jsonl');
      const summary = await runDetect({ inputPath: clip, outputPath, detector });
      expect(summary.warnings).toHaveLength(1);
      const file = await readDetectionsFile(outputPath);
      expect(file.header.warnings?.[0]).toMatch(/the model looks wrong for this footage: 192 boxes per frame, 100 %/);
      expect(file.frames[0]!.detections).toHaveLength(192);
    } finally {
      await detector.close();
    }
  }, 300_000);
});
