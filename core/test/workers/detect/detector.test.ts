import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sharedAsset } from '../../../../test/support/index.ts';
import { Detector, readDetectionsFile, runDetect } from '../../../src/workers/detect/index.ts';
import { makeClip } from '../support/media.ts';
import { constantModel, reshapeModel } from '../support/onnx-builder.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pv-detect-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('Detector with a YOLOv8-layout model', () => {
  it('maps a model box through the centred letterbox back to source pixels', async () => {
    // 64×64 input → 84 anchors; output [1, 6, 84] = YOLOv8 with 2 classes.
    const N = 84;
    const values = new Float32Array(6 * N);
    const n = 5;
    values[n] = 32; // cx
    values[N + n] = 32; // cy
    values[2 * N + n] = 10; // w
    values[3 * N + n] = 20; // h
    values[5 * N + n] = 0.9; // class 1
    const modelPath = join(dir, 'v8.onnx');
    await writeFile(modelPath, constantModel(64, [1, 6, N], values));
    const clip = await makeClip(join(dir, 'wide.mp4'), 'testsrc2=size=128x64:rate=10', 2);
    const detector = await Detector.open({
      model: { path: modelPath },
      modelVersion: 'const-v8',
      classMap: { 1: 'ball' },
    });
    try {
      expect(detector.info).toMatchObject({ layout: 'yolov8', classCount: 2, inputWidth: 64, batchSize: 1 });
      expect(detector.info.executionProvider).toBe('cpu');
      const outputPath = join(dir, 'v8.jsonl');
      const summary = await runDetect({ inputPath: clip, outputPath, detector });
      expect(summary.frames).toBe(20);
      const file = await readDetectionsFile(outputPath);
      expect(file.header).toMatchObject({ source: { width: 128, height: 64 }, classes: ['ball'] });
      // 128×64 → scale 0.5 → 64×32 centred (padY 16): model (27,22)-(37,42) → source (54,12)-(74,52)
      for (const frame of file.frames) {
        expect(frame.detections).toEqual([{ class: 'ball', score: 0.9, box: [54, 12, 74, 52] }]);
      }
      expect(file.frames[3]!.tMs).toBe(300);
    } finally {
      await detector.close();
    }
  });
});

describe('Detector: onnxruntime threads sleeping or spinning between operators', () => {
  it('opens and infers the same with either (session.intra_op.allow_spinning), and refuses a bad value', async () => {
    const N = 84;
    const values = new Float32Array(6 * N);
    values[7] = 32;
    values[N + 7] = 32;
    values[2 * N + 7] = 10;
    values[3 * N + 7] = 20;
    values[5 * N + 7] = 0.8;
    const modelPath = join(dir, 'spin.onnx');
    await writeFile(modelPath, constantModel(64, [1, 6, N], values));
    const clip = await makeClip(join(dir, 'spin.mp4'), 'testsrc2=size=64x64:rate=10', 1);
    const boxes: unknown[] = [];
    for (const threadSpinning of [false, true]) {
      const detector = await Detector.open({
        model: { path: modelPath },
        modelVersion: 'const-spin',
        classMap: { 1: 'ball' },
        threadSpinning,
      });
      try {
        const outputPath = join(dir, `spin-${threadSpinning}.jsonl`);
        await runDetect({ inputPath: clip, outputPath, detector, minDurationMs: 0 });
        boxes.push((await readDetectionsFile(outputPath)).frames.map((f) => f.detections));
      } finally {
        await detector.close();
      }
    }
    expect((boxes[0] as unknown[][])[0]).toEqual([{ class: 'ball', score: 0.8, box: [27, 22, 37, 42] }]);
    expect(boxes[1]).toEqual(boxes[0]);
    await expect(
      Detector.open({ model: { path: modelPath }, modelVersion: 'x', threadSpinning: 'yes' as never }),
    ).rejects.toMatchObject({ code: 'detect_options_invalid', message: expect.stringMatching(/threadSpinning/) });
  });
});

describe('Detector on a wide panorama (tiling)', () => {
  it('runs every tile and maps each tile’s boxes back to panorama pixels', async () => {
    // The model sees the same box (model px (27,22)-(37,42)) in every 64×64 input.
    const N = 84;
    const values = new Float32Array(6 * N);
    values.set([32], 5);
    values[N + 5] = 32;
    values[2 * N + 5] = 10;
    values[3 * N + 5] = 20;
    values[4 * N + 5] = 0.8; // class 0
    const modelPath = join(dir, 'v8-tiles.onnx');
    await writeFile(modelPath, constantModel(64, [1, 6, N], values));
    const clip = await makeClip(join(dir, 'pano.mp4'), 'testsrc2=size=512x128:rate=10', 1.2);
    const detector = await Detector.open({
      model: { path: modelPath },
      modelVersion: 'const-tiles',
      classMap: { 0: 'player' },
      tiling: { mode: 'grid', columns: 3, rows: 1, overlapFraction: 0.25 },
    });
    try {
      const outputPath = join(dir, 'tiles.jsonl');
      const summary = await runDetect({ inputPath: clip, outputPath, detector });
      // 3 tiles of 205 px overlapping by ≈ 51 px (x = 0, 154, 307).
      expect(summary.header.model.tiles).toBe(3);
      expect(summary.header.tiling).toMatchObject({ mode: 'grid', columns: 3, rows: 1, source: 'grid' });
      const file = await readDetectionsFile(outputPath);
      const boxes = file.frames[0]!.detections.map((d) => d.box).sort((a, b) => a[0] - b[0]);
      // Each tile 205×128 → scale 64/205; model box (27,22)-(37,42) centred vertically (padY 12):
      // x = 27·205/64 + tileX, y = (22 − 12)·205/64.
      const s = 205 / 64;
      const padY = Math.floor((64 - Math.round(128 / s)) / 2);
      expect(boxes).toHaveLength(3);
      for (const [i, tileX] of [0, 154, 307].entries()) {
        expect(boxes[i]![0]).toBeCloseTo(27 * s + tileX, 0);
        expect(boxes[i]![1]).toBeCloseTo((22 - padY) * s, 0);
      }
    } finally {
      await detector.close();
    }
  });
});

describe('Detector with a symbolic input size (input fitted to the tiles)', () => {
  // Input [1, 3, height, width] reshaped to the output: [1, 6, -1] runs at any size (YOLOv8 layout,
  // 2 classes); [1, 6, 2048] only at the nominal 64×64 (a model whose sizes are not free after all).
  const open = async (name: string, shape: number[]) => {
    const path = join(dir, `${name}.onnx`);
    await writeFile(path, reshapeModel([1, 3, 'height', 'width'], shape, [1, 6, 'cells']));
    return Detector.open({ model: { path }, modelVersion: name, inputSize: 64, classMap: { 0: 'player' } });
  };
  // A 128×32 strip: scale 0.5 → 64×16 of picture (decoded at that size), letterboxed.
  const strip = { width: 64, height: 16, data: new Uint8Array(64 * 16 * 3).fill(60) };
  const cases = [
    { name: 'free-size', shape: [1, 6, -1], fitted: true, tensor: [1, 3, 32, 64] },
    { name: 'fixed-reshape', shape: [1, 6, 2048], fitted: false, tensor: [1, 3, 64, 64] },
  ];
  it.each(cases)('$name: tensors $tensor (fitted: $fitted), inferred', async ({ name, shape, fitted, tensor }) => {
    const detector = await open(name, shape);
    try {
      expect(detector.info).toMatchObject({ inputWidth: 64, inputHeight: 64, inputFitted: fitted });
      // Fitted: the picture's 16 rows rounded up to 32, not the nominal 64.
      const plan = detector.plan(128, 32);
      expect(plan).toMatchObject({ decodeWidth: 64, decodeHeight: 16, inputWidth: 64, inputHeight: tensor[2] });
      const batches = detector.prepare([strip], plan);
      expect(batches[0]!.tensor.dims).toEqual(tensor);
      await expect(detector.infer(batches)).resolves.toHaveLength(1);
    } finally {
      await detector.close();
    }
  });
});

const YOLOX_NANO = sharedAsset('models/yolox_nano.onnx');
const WALKING_MP4 = sharedAsset('footage/walking.mp4');

describe.skipIf(!YOLOX_NANO || !WALKING_MP4)('Detector with YOLOX-Nano on walking.mp4', () => {
  it('finds the walking people in every analysed frame', async () => {
    const detector = await Detector.open({ model: { path: YOLOX_NANO! }, modelVersion: 'yolox-nano-coco' });
    try {
      expect(detector.info).toMatchObject({ layout: 'yolox', classCount: 80, inputWidth: 416, inputHeight: 416 });
      const outputPath = join(dir, 'walking.jsonl');
      let lastProgress = 0;
      const summary = await runDetect({
        inputPath: WALKING_MP4!,
        outputPath,
        detector,
        analysisFps: 5,
        onProgress: (p) => {
          lastProgress = p;
        },
      });
      expect(summary.frames).toBeGreaterThanOrEqual(67);
      expect(lastProgress).toBeGreaterThan(0.95);
      const file = await readDetectionsFile(outputPath);
      for (const frame of file.frames) {
        const confident = frame.detections.filter((d) => d.class === 'player' && d.score >= 0.3);
        expect(confident.length).toBeGreaterThanOrEqual(10);
        for (const d of frame.detections) {
          expect(d.box[0]).toBeGreaterThanOrEqual(0);
          expect(d.box[2]).toBeLessThanOrEqual(1280);
          expect(d.box[3]).toBeLessThanOrEqual(720);
          // People seen from above at an angle are taller than wide.
        }
        const tall = confident.filter((d) => d.box[3] - d.box[1] > d.box[2] - d.box[0]);
        expect(tall.length / confident.length).toBeGreaterThan(0.8);
      }
    } finally {
      await detector.close();
    }
    // CPU-bound real inference (67 frames): a hang guard for a loaded 2-core host, like the pipeline tests'.
  }, 300_000);
});
