import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { BoxXyxy, DetectionsFile } from '../../../src/workers/detect/index.ts';
import {
  calibrateScoreThresholds,
  modelCardThresholds,
  otsuThreshold,
  quantile,
  resolveScoreThresholds,
  trackClip,
} from '../../../src/workers/track/index.ts';

const box = (cx: number, cy: number, w = 20, h = 50): BoxXyxy => [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2];
const evenly = (n: number, from: number, to: number) =>
  Array.from({ length: n }, (_, i) => from + ((to - from) * i) / (n - 1));

function file(frames: DetectionsFile['frames']): DetectionsFile {
  return {
    header: {
      format: 'polyvision.detections',
      version: 1,
      source: { width: 1920, height: 1080, fps: 10, frameCount: frames.length, durationMs: frames.length * 100 },
      analysisFps: 10,
      model: {
        version: 't',
        sha256: 'x',
        layout: 'yolov8',
        inputWidth: 640,
        inputHeight: 640,
        executionProvider: 'cpu',
        tiles: 1,
      },
      classes: ['player', 'referee', 'ball'],
    },
    frames,
  };
}

/** 10 people walking right, real-footage scores (0.2–0.38); 20 weak background boxes per frame (0.10–0.14). */
function realisticClip(frameCount = 40): DetectionsFile {
  return file(
    Array.from({ length: frameCount }, (_, f) => ({
      frame: f,
      tMs: f * 100,
      detections: [
        ...Array.from({ length: 10 }, (_, p) => ({
          class: 'player' as const,
          score: 0.2 + 0.02 * p,
          box: box(100 + 150 * p + 2 * f, 500),
        })),
        ...Array.from({ length: 20 }, (_, k) => ({
          class: 'player' as const,
          score: 0.1 + 0.002 * k,
          box: box(((37 * (f * 20 + k)) % 1800) + 50, 900, 10, 10),
        })),
      ],
    })),
  );
}

describe('score thresholds', () => {
  it('quantile interpolates like NumPy', () => {
    expect(quantile([1, 2, 3, 4], 0.5)).toBe(2.5);
    expect(quantile([1, 2, 3, 4], 0)).toBe(1);
    expect(quantile([1, 2, 3, 4], 1)).toBe(4);
  });

  it('Otsu cuts between the two modes', () => {
    const cut = otsuThreshold([...evenly(100, 0.1, 0.14), ...evenly(100, 0.3, 0.4)]);
    expect(cut).toBeGreaterThan(0.14);
    expect(cut).toBeLessThanOrEqual(0.3);
  });

  it('calibrates high on the confident mode and low below it', () => {
    // 200 background scores 0.10–0.15, 300 real ones 0.25–0.45.
    const t = calibrateScoreThresholds([...evenly(200, 0.1, 0.15), ...evenly(300, 0.25, 0.45)]);
    expect(t.source).toBe('calibration');
    expect(t.samples).toBe(500);
    expect(t.high).toBeGreaterThan(0.15); // between the two modes
    expect(t.high).toBeLessThanOrEqual(0.25);
    expect(t.low).toBeCloseTo(0.1 + (0.05 * 49.9) / 199, 2); // 10 % quantile of all 500
  });

  it('keeps ByteTrack defaults with too few scores', () => {
    expect(calibrateScoreThresholds([0.3, 0.2])).toEqual({ high: 0.5, low: 0.1, source: 'default', samples: 0 });
  });

  it('prefers explicit options, then the model card, then the calibration', () => {
    const clip = realisticClip(10);
    expect(resolveScoreThresholds(clip, { highScoreThreshold: 0.7 })).toMatchObject({ high: 0.7, source: 'options' });
    expect(resolveScoreThresholds(clip, { modelCardThresholds: { high: 0.3, low: 0.05 } })).toMatchObject({
      high: 0.3,
      low: 0.05,
      source: 'model-card',
    });
    expect(resolveScoreThresholds(clip, {}).source).toBe('calibration');
  });

  it('tracks people whose scores sit below ByteTrack fixed 0.5 / 0.6', () => {
    const clip = realisticClip();
    const fixed = trackClip(clip, { highScoreThreshold: 0.5, lowScoreThreshold: 0.1 });
    expect(fixed.tracks.tracks).toHaveLength(0);
    const calibrated = trackClip(clip);
    expect(calibrated.thresholds.source).toBe('calibration');
    expect(calibrated.thresholds.high).toBeGreaterThan(0.14);
    expect(calibrated.thresholds.high).toBeLessThanOrEqual(0.2);
    const long = calibrated.tracks.tracks.filter((t) => t.frames.length === 40);
    expect(long).toHaveLength(10);
  });

  it("starts a track at the model card's high, not ByteTrack's high + 0.1", () => {
    // One player scoring 0.68 in every frame: above the card's high (0.641), under high + 0.1.
    const clip = file(
      Array.from({ length: 20 }, (_, f) => ({
        frame: f,
        tMs: f * 100,
        detections: [{ class: 'player' as const, score: 0.68, box: box(500 + 2 * f, 500) }],
      })),
    );
    const card = { modelCardThresholds: { high: 0.641, low: 0.481 } };
    expect(trackClip(clip, card).tracks.tracks).toHaveLength(1);
    expect(trackClip(clip, { ...card, newTrackThreshold: 0.741 }).tracks.tracks).toHaveLength(0);
  });

  it('drops tracks whose whole life is off the pitch', () => {
    const clip = file(
      Array.from({ length: 20 }, (_, f) => ({
        frame: f,
        tMs: f * 100,
        detections: [
          { class: 'player' as const, score: 0.9, box: box(500 + f, 500) }, // on the pitch
          { class: 'player' as const, score: 0.9, box: box(500, 1000) }, // the bench, below y = 800
        ],
      })),
    );
    const result = trackClip(clip, { pitchRegion: (_x, y) => y < 800 });
    expect(result.offPitchTracksDropped).toBe(1);
    expect(result.tracks.tracks.map((t) => t.frames[0]!.box[3])).toEqual([525]);
  });
});

describe('model card thresholds', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it('reads tracker thresholds only for detections of that very model', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pv-card-'));
    dirs.push(dir);
    const model = Buffer.from('not really onnx, but hashed all the same');
    await writeFile(join(dir, 'm.onnx'), model);
    await writeFile(join(dir, 'metrics.json'), JSON.stringify({ tracker: { high: 0.31, low: 0.08 } }));
    const sha = createHash('sha256').update(model).digest('hex');
    expect(await modelCardThresholds(join(dir, 'm.onnx'), { sha256: sha })).toEqual({ high: 0.31, low: 0.08 });
    expect(await modelCardThresholds(join(dir, 'm.onnx'), { sha256: 'f'.repeat(64) })).toBeNull();
    expect(await modelCardThresholds(join(dir, 'missing.onnx'), { sha256: sha })).toBeNull();
    // The training's evaluate.py name, with the ball's threshold.
    await writeFile(
      join(dir, 'metrics.json'),
      JSON.stringify({ tracker_thresholds: { high: 0.4, low: 0.1, ball: 0.2 } }),
    );
    expect(await modelCardThresholds(join(dir, 'm.onnx'), { sha256: sha })).toEqual({ high: 0.4, low: 0.1, ball: 0.2 });
  });

  it("applies them to detections of the card's int8 rendition of that model, not of another model's", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pv-card-'));
    dirs.push(dir);
    const model = Buffer.from('the float model');
    await writeFile(join(dir, 'm.onnx'), model);
    const sha = createHash('sha256').update(model).digest('hex');
    const rendition = (sourceSha256: string) => ({
      file: 'm-int8.onnx',
      precision: 'int8',
      sha256: 'a'.repeat(64),
      source_sha256: sourceSha256,
    });
    const card = (renditions: unknown) => JSON.stringify({ tracker: { high: 0.31, low: 0.08 }, renditions });
    await writeFile(join(dir, 'metrics.json'), card([rendition(sha)]));
    expect(await modelCardThresholds(join(dir, 'm.onnx'), { sha256: 'a'.repeat(64) })).toEqual({
      high: 0.31,
      low: 0.08,
    });
    expect(await modelCardThresholds(join(dir, 'm.onnx'), { sha256: sha })).toEqual({ high: 0.31, low: 0.08 });
    // A rendition made from other weights (the float model was retrained, the rendition not).
    await writeFile(join(dir, 'metrics.json'), card([rendition('b'.repeat(64))]));
    expect(await modelCardThresholds(join(dir, 'm.onnx'), { sha256: 'a'.repeat(64) })).toBeNull();
    // Malformed renditions are ignored; the model's own detections keep the thresholds.
    await writeFile(join(dir, 'metrics.json'), card('nonsense'));
    expect(await modelCardThresholds(join(dir, 'm.onnx'), { sha256: sha })).toEqual({ high: 0.31, low: 0.08 });
  });

  it("gives verified detections the card's thresholds, and the detector's own scores the unverified ones", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pv-card-'));
    dirs.push(dir);
    const model = Buffer.from('the detector');
    await writeFile(join(dir, 'm.onnx'), model);
    const sha = createHash('sha256').update(model).digest('hex');
    const verifierSha = 'c'.repeat(64);
    await writeFile(
      join(dir, 'metrics.json'),
      JSON.stringify({
        tracker: { high: 0.55, low: 0.3, ball: 0.2 },
        verifier: { sha256: verifierSha, tracker_unverified: { high: 0.5, low: 0.35, ball: 0.2 } },
      }),
    );
    const path = join(dir, 'm.onnx');
    expect(await modelCardThresholds(path, { sha256: sha, verifier: { sha256: verifierSha } })).toEqual({
      high: 0.55,
      low: 0.3,
      ball: 0.2,
    });
    // DETECT_VERIFIER=off, an older detections file, or another verifier's scores.
    expect(await modelCardThresholds(path, { sha256: sha })).toEqual({ high: 0.5, low: 0.35, ball: 0.2 });
    expect(await modelCardThresholds(path, { sha256: sha, verifier: { sha256: 'd'.repeat(64) } })).toEqual({
      high: 0.5,
      low: 0.35,
      ball: 0.2,
    });
    // Still only for this model's detections.
    expect(await modelCardThresholds(path, { sha256: 'f'.repeat(64), verifier: { sha256: verifierSha } })).toBeNull();
  });

  it("gives the ball the ball verifier's threshold only when that verifier scored it", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pv-card-'));
    dirs.push(dir);
    const model = Buffer.from('the detector');
    await writeFile(join(dir, 'm.onnx'), model);
    const sha = createHash('sha256').update(model).digest('hex');
    const person = 'c'.repeat(64);
    const ball = 'e'.repeat(64);
    await writeFile(
      join(dir, 'metrics.json'),
      JSON.stringify({
        tracker: { high: 0.55, low: 0.3, ball: 0.21 },
        verifier: { sha256: person, tracker_unverified: { high: 0.5, low: 0.35, ball: 0.24 } },
        ball_verifier: { sha256: ball },
      }),
    );
    const path = join(dir, 'm.onnx');
    const both = { sha256: sha, verifier: { sha256: person }, ballVerifier: { sha256: ball } };
    expect(await modelCardThresholds(path, both)).toEqual({ high: 0.55, low: 0.3, ball: 0.21 });
    // Detections of 3.3's stage (the person verifier only): verified people, the ball on the detector's score.
    expect(await modelCardThresholds(path, { sha256: sha, verifier: { sha256: person } })).toEqual({
      high: 0.55,
      low: 0.3,
      ball: 0.24,
    });
    // DETECT_VERIFIER=off: both on the detector's own scores.
    expect(await modelCardThresholds(path, { sha256: sha })).toEqual({ high: 0.5, low: 0.35, ball: 0.24 });
  });
});

describe("a match segment's young tracks", () => {
  it('keeps a track born in the last frames of a segment, so its id holds across the boundary', () => {
    // Player A all along; player B appears 2 frames before the boundary (under minTrackFrames 3).
    const frames = (from: number, to: number, bFrom: number) =>
      Array.from({ length: to - from }, (_, k) => {
        const f = from + k;
        return {
          frame: k,
          tMs: k * 100,
          detections: [
            { class: 'player' as const, score: 0.9, box: box(300 + 3 * f, 500) },
            ...(f >= bFrom ? [{ class: 'player' as const, score: 0.9, box: box(1200 - 3 * f, 400) }] : []),
          ],
        };
      });
    const options = { highScoreThreshold: 0.5, lowScoreThreshold: 0.1 };
    const first = trackClip(file(frames(0, 10, 8)), { ...options, segment: { carry: null } });
    const second = trackClip(file(frames(10, 20, 8)), { ...options, segment: { carry: first.carry } });
    const whole = trackClip(file(frames(0, 20, 8)), options);
    const idAt = (clip: typeof first, x: number) =>
      clip.tracks.tracks.find((t) => t.frames.some((f) => Math.abs((f.box[0] + f.box[2]) / 2 - x) < 1))?.id;
    const lengths = (clip: typeof first) => clip.tracks.tracks.map((t) => t.frames.length).sort((a, b) => a - b);
    // B is confirmed at frame 9 (its second frame, as ByteTrack does): that frame is in segment 0's
    // output, under the id it keeps in segment 1 — as in the whole clip.
    expect(lengths(whole)).toEqual([11, 20]);
    expect(lengths(first)).toEqual([1, 10]);
    expect(idAt(first, 1200 - 3 * 9)).toBeDefined();
    expect(idAt(first, 1200 - 3 * 9)).toBe(idAt(second, 1200 - 3 * 10));
  });
});
