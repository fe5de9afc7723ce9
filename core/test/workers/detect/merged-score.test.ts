import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  compileDetectOptions,
  decodeYolov8,
  percentileOf,
  readModelCard,
  scoreCell,
  scoreFloorsOf,
} from '../../../src/workers/detect/index.ts';

/** Model classes of the default detector: 0 player, 1 goalkeeper, 2 referee, 3 ball. */
const PEOPLE = new Set([0, 1, 2]);
const CARD_FLOORS = { 0: 0.481, 1: 0.481, 2: 0.481, 3: 0.18 };
const options = { classIds: [0, 1, 2, 3], scoreThreshold: 0.1, personClassIds: PEOPLE, floors: CARD_FLOORS };
const cell = (p: number[]) => (c: number) => p[c]!;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pv-merged-score-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('merged person score', () => {
  it('is 1 − ∏(1 − p) over the person classes, classed by the best role', () => {
    // A person split between roles: no role reaches the 0.481 floor, the person does (1 − 0.7·0.7·0.8).
    expect(scoreCell(cell([0.3, 0.3, 0.2, 0]), options)).toEqual({ classId: 0, score: expect.closeTo(0.608, 6) });
    // The best role names the class.
    expect(scoreCell(cell([0.2, 0.45, 0.1, 0]), options)).toEqual({
      classId: 1,
      score: expect.closeTo(1 - 0.8 * 0.55 * 0.9, 6),
    });
    // One dominant role: about that role's score.
    expect(scoreCell(cell([0.9, 0, 0, 0]), options)?.score).toBeCloseTo(0.9, 6);
    // The same cell scored by the best role alone is lost under the floor.
    expect(scoreCell(cell([0.3, 0.3, 0.2, 0]), { ...options, personClassIds: new Set() })).toBeUndefined();
  });

  it('applies per-class floors: people at the card low, the ball at its own floor', () => {
    expect(scoreCell(cell([0.2, 0.1, 0.1, 0]), options)).toBeUndefined(); // person 0.352 < 0.481
    expect(scoreCell(cell([0, 0, 0, 0.2]), options)).toEqual({ classId: 3, score: expect.closeTo(0.2, 6) });
    expect(scoreCell(cell([0, 0, 0, 0.15]), options)).toBeUndefined(); // ball 0.15 < 0.18
    // Without floors the global threshold applies to every class.
    expect(scoreCell(cell([0, 0, 0, 0.15]), { ...options, floors: {} })?.classId).toBe(3);
    // A cell is the person or the ball, whichever scores higher.
    expect(scoreCell(cell([0.5, 0, 0, 0.6]), options)?.classId).toBe(3);
    expect(scoreCell(cell([0.5, 0.2, 0, 0.6]), options)).toEqual({ classId: 0, score: expect.closeTo(0.6, 6) });
  });

  it('scales by objectness (YOLOX) and clamps probabilities', () => {
    expect(scoreCell(cell([0.5, 0.5, 0, 0]), options, 0.8)?.score).toBeCloseTo(0.8 * 0.75, 6);
    expect(scoreCell(cell([1.2, 0, 0, 0]), options)?.score).toBe(1);
  });

  it('keeps a split person when decoding a YOLOv8 output', () => {
    const N = 84; // 64×64 input
    const data = new Float32Array(8 * N);
    const n = 7;
    data[n] = 32;
    data[N + n] = 20;
    data[2 * N + n] = 10;
    data[3 * N + n] = 20;
    for (const [c, p] of [0.3, 0.3, 0.2, 0].entries()) data[(4 + c) * N + n] = p;
    // A second cell: the ball alone, just above its floor; a third: a person under the floor.
    data[(4 + 3) * N + 20] = 0.19;
    data[(4 + 0) * N + 30] = 0.4;
    const out = decodeYolov8(data, 0, N, options);
    expect(out.map((c) => [c.classId, Math.round(c.score * 1000)])).toEqual([
      [0, 608],
      [3, 190],
    ]);
    expect(out[0]!.box).toEqual([27, 10, 37, 30]);
  });
});

describe('model card', () => {
  it('gives per-class floors from the tracker thresholds', async () => {
    await writeFile(
      join(dir, 'metrics.json'),
      JSON.stringify({ tracker: { high: 0.641, low: 0.481, ball: 0.18, person_score: 'noisy-or', source: 'x' } }),
    );
    const card = await readModelCard(join(dir, 'model.onnx'));
    expect(card).toEqual({
      tracker: { high: 0.641, low: 0.481, ball: 0.18 },
      personScore: 'noisy-or',
      scoreFloors: { player: 0.481, goalkeeper: 0.481, referee: 0.481, ball: 0.18 },
      renditions: [],
    });
    expect(scoreFloorsOf({ high: 0.5, low: 0.2 })).toEqual({ player: 0.2, goalkeeper: 0.2, referee: 0.2 });
    // The nominal input [1, 3, H, W] (for a model whose height and width are symbolic); a malformed one is ignored.
    await writeFile(
      join(dir, 'metrics.json'),
      JSON.stringify({ tracker: { high: 0.6, low: 0.4 }, input: [1, 3, 720, 1280] }),
    );
    expect((await readModelCard(join(dir, 'model.onnx')))?.input).toEqual({ width: 1280, height: 720 });
    await writeFile(join(dir, 'metrics.json'), JSON.stringify({ tracker: { high: 0.6, low: 0.4 }, input: [1, 3, 0] }));
    const lenient = await readModelCard(join(dir, 'model.onnx'));
    expect(lenient).toMatchObject({ tracker: { high: 0.6 } });
    expect(lenient).not.toHaveProperty('input');
  });

  it('is null without a valid card (the detector keeps its global threshold)', async () => {
    expect(await readModelCard(join(dir, 'absent', 'model.onnx'))).toBeNull();
    await writeFile(join(dir, 'metrics.json'), JSON.stringify({ tracker: { high: 0.2, low: 0.5 } }));
    expect(await readModelCard(join(dir, 'model.onnx'))).toBeNull();
    await writeFile(join(dir, 'metrics.json'), '{not json');
    expect(await readModelCard(join(dir, 'model.onnx'))).toBeNull();
  });

  it("is the repository's card for the default model: thresholds on the merged score", async () => {
    const card = await readModelCard(
      new URL('../../../models/player-detector/player-detector.onnx', import.meta.url).pathname,
    );
    expect(card).toMatchObject({
      personScore: 'noisy-or',
      scoreFloors: { player: 0.314, ball: 0.183 },
      input: { width: 1280, height: 720 },
    });
    // player-detector 3.4's card: people floors at the tracker's low on the verified score; the ball at the ball
    // track's candidate floor (≤ 2 false ball boxes per real validation frame, evaluate.py) on the ball verifier's
    // fused score, below the single-frame best F1. The detector's own scores (DETECT_VERIFIER=off) keep 3.2's
    // thresholds.
    expect(card!.tracker).toMatchObject({ high: 0.394, low: 0.314, ball: 0.183 });
    expect(card!.tracker.high).toBeGreaterThan(card!.tracker.low);
    expect(card!.verifier).toMatchObject({
      candidateFloor: 0.25,
      unverified: { high: 0.499, low: 0.345, ball: 0.236 },
    });
    expect(card!.verifier!.candidateFloor).toBeLessThan(card!.tracker.low);
    // The ball verifier looks at every ball candidate from 0.1 up (its training's mining floor).
    expect(card!.ballVerifier).toMatchObject({ candidateFloor: 0.1, weight: 0.5 });
    expect(card!.ballVerifier!.candidateFloor).toBeLessThan(card!.tracker.ball!);
  });

  it('floors are validated as detector options', () => {
    expect(compileDetectOptions({ model: { path: 'm' }, modelVersion: 'v' })).toMatchObject({
      classScoreFloors: {},
      personScore: 'noisy-or',
      personHeightPercentile: 25,
    });
    expect(() =>
      compileDetectOptions({ model: { path: 'm' }, modelVersion: 'v', classScoreFloors: { ball: 1.5 } }),
    ).toThrow(/classScoreFloors\.ball/);
  });
});

describe('person height for tiling', () => {
  it('is a low percentile (nearest rank), not pulled up by a few near people', () => {
    const heights = [30, 31, 32, 33, 34, 35, 90, 95, 100, 110].sort((a, b) => a - b);
    expect(percentileOf(heights, 25)).toBe(32);
    expect(percentileOf(heights, 50)).toBe(34);
    expect(percentileOf([], 25)).toBe(0);
    expect(percentileOf([7], 25)).toBe(7);
  });
});
