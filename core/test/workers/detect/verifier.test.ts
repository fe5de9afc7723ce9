import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BgrImage, type BoxXyxy, Detector } from '../../../src/workers/detect/index.ts';
import { readModelCard } from '../../../src/workers/detect/model/model-card.ts';
import {
  fusedScore,
  refineBox,
  sampleWindow,
  type VerifierWindowSpec,
  verifierWindow,
} from '../../../src/workers/detect/verify/index.ts';

const MODEL_DIR = new URL('../../../models/player-detector/', import.meta.url).pathname;
const SPEC: VerifierWindowSpec = { widthPx: 32, heightPx: 64, context: 1.6, minExtentPx: 1 };
const BALL_SPEC: VerifierWindowSpec = { widthPx: 32, heightPx: 32, context: 6, minExtentPx: 6 };
const CLASSES = { 0: 'player', 1: 'goalkeeper', 2: 'referee', 3: 'ball' } as const;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pv-verifier-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** RGB pixel (x, y) channel c = (17x + 29y + 53c) mod 256, stored as BGR: the pattern verifier_window.py was run on. */
function patternImage(width: number, height: number): BgrImage {
  const data = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++)
      for (let c = 0; c < 3; c++) data[(y * width + x) * 3 + (2 - c)] = (17 * x + 29 * y + 53 * c) % 256;
  return { width, height, data };
}

/** One window of `image` for `box` as the stage samples it: RGB at (row, col) and per-channel sums, 0–255. */
function sampled(image: BgrImage, box: BoxXyxy, spec: VerifierWindowSpec) {
  const plane = spec.widthPx * spec.heightPx;
  const out = new Float32Array(3 * plane);
  sampleWindow(image, verifierWindow(box, spec), spec, out, 0);
  const at = (row: number, col: number) =>
    [0, 1, 2].map((c) => Math.round(out[c * plane + row * spec.widthPx + col]! * 255));
  const sums = [0, 1, 2].map((c) =>
    out.subarray(c * plane, (c + 1) * plane).reduce((s, v) => s + Math.round(v * 255), 0),
  );
  return { at, sums };
}

describe("the person verifier's window", () => {
  it('is centred on the box, 1.6 × max(height, 2 × width) tall and half as wide', () => {
    expect(verifierWindow([2, 1.5, 6, 10.5], SPEC).map((v) => Number(v.toFixed(6)))).toEqual([0.4, -1.2, 7.6, 13.2]);
    // A wide box (a player lying down): the window grows with its width.
    expect(verifierWindow([0, 0, 20, 10], SPEC)).toEqual([-6, -27, 26, 37]);
  });

  it("samples as the training's verifier_window.sample does (numbers from that file)", () => {
    const { at, sums } = sampled(patternImage(13, 9), [2, 1.5, 6, 10.5], SPEC);
    // python: out = floor(sample(rgb, *window([2, 1.5, 6, 10.5])) + 0.5); out[0,0], out[10,5], out[40,20], out[63,31]
    expect(at(0, 0)).toEqual([114, 114, 114]);
    expect(at(10, 5)).toEqual([39, 92, 145]);
    expect(at(40, 20)).toEqual([36, 89, 142]);
    expect(at(63, 31)).toEqual([114, 114, 114]);
    // out.sum((0, 1)): every sample, per channel.
    expect(sums).toEqual([249419, 249534, 250662]);
  });
});

describe("the ball verifier's window", () => {
  const image = patternImage(64, 48);

  it('is a square 6 × the box, at least 36 frame px (the floor for a ball of a few pixels)', () => {
    expect(verifierWindow([30, 20, 34, 24], BALL_SPEC)).toEqual([14, 4, 50, 40]);
    expect(verifierWindow([20, 10, 28, 18.5], BALL_SPEC)).toEqual([-1.5, -11.25, 49.5, 39.75]);
  });

  it("samples as the training's verifier_window.sample does with the BALL spec (numbers from that file)", () => {
    // python: out = floor(sample(rgb, *window(box, BALL), BALL) + 0.5); out[0,0], out[10,5], out[20,17], out[31,31]
    const small = sampled(image, [30, 20, 34, 24], BALL_SPEC);
    expect([small.at(0, 0), small.at(10, 5), small.at(20, 17), small.at(31, 31)]).toEqual([
      [101, 154, 207],
      [66, 64, 117],
      [55, 108, 161],
      [169, 222, 35],
    ]);
    expect(small.sums).toEqual([130447, 131030, 131013]);
    const edge = sampled(image, [20, 10, 28, 18.5], BALL_SPEC);
    expect([edge.at(0, 0), edge.at(10, 5), edge.at(20, 17), edge.at(31, 31)]).toEqual([
      [114, 114, 114],
      [67, 57, 110],
      [43, 76, 129],
      [143, 196, 133],
    ]);
    expect(edge.sums).toEqual([126793, 127174, 127495]);
  });
});

describe("the verifier's box deltas", () => {
  it('move the centre in box widths and heights and scale the size by e^delta (R-CNN)', () => {
    expect(refineBox([10, 20, 30, 60], [0.1, -0.05, Math.log(2), 0])).toEqual([2, 18, 42, 58]);
    expect(refineBox([10, 20, 30, 60], [0, 0, 0, 0])).toEqual([10, 20, 30, 60]);
  });
});

describe('the fused score', () => {
  it('is the weighted geometric mean detector^(1 − w) · verifier^w', () => {
    expect(fusedScore(0.5, 0.5, 0.3)).toBeCloseTo(0.5, 12);
    expect(fusedScore(0.6, 0.99, 0.3)).toBeCloseTo(0.6 ** 0.7 * 0.99 ** 0.3, 12);
    // A box the verifier rejects falls far; one it is sure of rises.
    expect(fusedScore(0.7, 0.01, 0.3)).toBeLessThan(0.2);
    expect(fusedScore(0.55, 0.99, 0.3)).toBeGreaterThan(0.65);
  });
});

describe("the default model card's verifier", () => {
  it('is opened with the detector and named in its info; DETECT_VERIFIER=off leaves it out', async () => {
    const card = (await readModelCard(join(MODEL_DIR, 'player-detector.onnx')))!;
    expect(card.verifier).toMatchObject({ file: 'person-verifier.onnx', window: SPEC });
    expect(card.ballVerifier).toMatchObject({ file: 'ball-verifier.onnx', window: BALL_SPEC, weight: 0.5 });
    const on = await Detector.open({
      model: { path: join(MODEL_DIR, 'player-detector.onnx') },
      modelVersion: 'test',
      classMap: CLASSES,
    });
    const off = await Detector.open({
      model: { path: join(MODEL_DIR, 'player-detector.onnx') },
      modelVersion: 'test',
      classMap: CLASSES,
      verifier: 'off',
    });
    try {
      expect(on.info.verifier).toEqual({ sha256: card.verifier!.sha256, weight: card.verifier!.weight });
      expect(on.info.ballVerifier).toEqual({ sha256: card.ballVerifier!.sha256, weight: 0.5 });
      expect(off.info.verifier).toBeUndefined();
      expect(off.info.ballVerifier).toBeUndefined();
    } finally {
      await on.close();
      await off.close();
    }
  });

  it("refuses a verifier trained for another detector, naming the fix; 'off' still opens", async () => {
    const staleDir = join(dir, 'stale');
    await mkdir(staleDir);
    for (const file of [
      'player-detector.onnx',
      'player-detector-int8.onnx',
      'person-verifier.onnx',
      'ball-verifier.onnx',
    ])
      await copyFile(join(MODEL_DIR, file), join(staleDir, file));
    const card = JSON.parse(await readFile(join(MODEL_DIR, 'metrics.json'), 'utf8'));
    card.verifier.detector_sha256 = 'a'.repeat(64);
    await writeFile(join(staleDir, 'metrics.json'), JSON.stringify(card));
    const model = { path: join(staleDir, 'player-detector.onnx') };
    await expect(Detector.open({ model, modelVersion: 'test', classMap: CLASSES })).rejects.toMatchObject({
      code: 'model_invalid',
      message: expect.stringMatching(/person verifier .*trained for another detector.*DETECT_VERIFIER=off/),
    });
    const off = await Detector.open({ model, modelVersion: 'test', classMap: CLASSES, verifier: 'off' });
    await off.close();
  });

  it('refuses an altered ball verifier file, naming it', async () => {
    const alteredDir = join(dir, 'altered-ball');
    await mkdir(alteredDir);
    for (const file of ['player-detector.onnx', 'player-detector-int8.onnx', 'person-verifier.onnx', 'metrics.json'])
      await copyFile(join(MODEL_DIR, file), join(alteredDir, file));
    // The person verifier's file in the ball verifier's place: a valid model, not the card's.
    await copyFile(join(MODEL_DIR, 'person-verifier.onnx'), join(alteredDir, 'ball-verifier.onnx'));
    const model = { path: join(alteredDir, 'player-detector.onnx') };
    await expect(Detector.open({ model, modelVersion: 'test', classMap: CLASSES })).rejects.toMatchObject({
      code: 'model_invalid',
      message: expect.stringMatching(
        /ball verifier .*ball-verifier\.onnx: does not have the sha256 its model card gives/,
      ),
    });
  });
});
