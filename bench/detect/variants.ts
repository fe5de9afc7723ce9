/**
 * The default detector's variants side by side on the real validation frames: one pass or flip test-time
 * augmentation (`DETECT_TTA=flip`, core/src/workers/detect/flip-fusion.ts), each with the model card's person
 * and ball verifiers (`DETECT_VERIFIER=auto`, the default: the person's from player-detector 3.3, the ball's
 * from 3.4, core/src/workers/detect/verify/) and without them (`off`: the detector's own scores, what 3.2 wrote;
 * 3.3's ball is this row's ball).
 *
 *   node bench/detect/variants.ts
 *
 * The default detector (the card's scoring and tiling, the int8 rendition on the CPU, as the stage runs it) on
 * the 51 frames of the held-out matches 121364, 54745b, 573e61 of ../shared/datasets/football-players-detection,
 * opened once per variant in one process, with one tile plan. People (player + goalkeeper + referee): AP50, the
 * best recall at precision ≥ 0.90 and ≥ 0.95 (scores swept in steps of 0.01), P / R at the card's tracker `high`
 * for that variant's scores (the verified `tracker.high`, or `verifier.tracker_unverified.high`); the ball
 * matched on centres ≤ 4 px apart (`eval detections --ball-centre-px 4`, as the card's `ball_centre_within_4px`):
 * AP, the best recall at precision ≥ 0.6, P / R at the card's ball floor;
 * the time per 1920×1080 frame (prepare + inference + NMS + fusion + verification, decode excluded; the variants
 * interleaved, best of 3 rounds over the 51 frames).
 * Writes bench/results/detect-variants.json and prints a table.
 */
import { writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_MODEL_PATH, DEFAULT_MODEL_PERSON_HEIGHT_PX } from '../../core/src/workers/detect/handler.ts';
import {
  type BgrImage,
  type Detection,
  Detector,
  type FrameDetections,
  parseTilingSetting,
} from '../../core/src/workers/detect/index.ts';
import { evaluateDetections } from '../../core/src/workers/quality/evaluate-detections.ts';
import { readGroundTruth } from '../../core/src/workers/quality/ground-truth.ts';
import { decodeFrame, validationFrames } from './real-validation.ts';
import { scoringOptions } from './scoring.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const W = 1920;
const H = 1080;
const labelsDir = join(root, '.cache', 'bench-detect', 'val-labels');
const images = await validationFrames(labelsDir);

type Variant = { testTimeAugmentation: 'none' | 'flip'; verifier: 'auto' | 'off' };
const VARIANTS: Record<string, Variant> = {
  'one pass (3.2)': { testTimeAugmentation: 'none', verifier: 'off' },
  'one pass + verifiers (3.4 default)': { testTimeAugmentation: 'none', verifier: 'auto' },
  'flip TTA': { testTimeAugmentation: 'flip', verifier: 'off' },
  'flip TTA + verifiers': { testTimeAugmentation: 'flip', verifier: 'auto' },
};
const detectors: Record<string, { detector: Detector; high: number; ball: number }> = {};
for (const [name, variant] of Object.entries(VARIANTS)) {
  const scoring = await scoringOptions('card', DEFAULT_MODEL_PATH, variant.verifier);
  const detector = await Detector.open({
    ...scoring.options,
    model: { path: DEFAULT_MODEL_PATH },
    modelVersion: name,
    layout: 'auto',
    classMap: { 0: 'player', 1: 'goalkeeper', 2: 'referee', 3: 'ball' },
    tiling: { ...parseTilingSetting('auto'), modelPersonHeightPx: DEFAULT_MODEL_PERSON_HEIGHT_PX },
    precision: 'auto',
    ...variant,
  });
  detectors[name] = { detector, high: scoring.high ?? 0.5, ball: scoring.options.classScoreFloors?.ball ?? 0.3 };
}
const first = detectors['one pass (3.2)']!.detector;
const sample = await Promise.all(
  [0.125, 0.375, 0.625, 0.875].map((f) => decodeFrame(images[Math.floor(f * images.length)] as string, W, H)),
);
// One tile plan for all (the one pass's estimate), so that only the variant differs.
const estimate = await first.estimatePersonHeight(sample);
const plan = first.plan(W, H, estimate.personHeightPx, estimate.personHeightPx !== undefined);
const frames: BgrImage[] = [];
for (const image of images) frames.push(await decodeFrame(image, plan.decodeWidth, plan.decodeHeight));
const found = new Map<string, Detection[][]>();
const msPerFrame = new Map<string, number>();
for (let round = 0; round < 3; round++) {
  for (const [name, { detector }] of Object.entries(detectors)) {
    const perFrame: Detection[][] = [];
    const started = performance.now();
    for (const frame of frames) perFrame.push((await detector.infer(detector.prepare([frame], plan)))[0] ?? []);
    const ms = (performance.now() - started) / frames.length;
    msPerFrame.set(name, Math.min(ms, msPerFrame.get(name) ?? Number.POSITIVE_INFINITY));
    found.set(name, perFrame);
  }
}
for (const { detector } of Object.values(detectors)) await detector.close();

const gt = await readGroundTruth(labelsDir, { imageSize: { width: W, height: H } });
const rows: Record<string, unknown>[] = [];
process.stdout.write(
  '| variant | people AP50 | R at P ≥ 0.90 | R at P ≥ 0.95 | P / R at its high | ball AP (4 px) | ball R at P ≥ 0.6 | ball P / R at its floor | ms / frame |\n|---|---|---|---|---|---|---|---|---|\n',
);
for (const [name, perFrame] of found) {
  const { high, ball: ballFloor } = detectors[name]!;
  const evaluated: FrameDetections[] = perFrame.map((d, i) => ({
    frame: i,
    sourceFrame: i,
    tMs: i * 1000,
    detections: d,
  }));
  const row = (minScore: number, cls: string) =>
    evaluateDetections(gt, evaluated, 1, { minScore, ballCentrePx: 4 }).rows.find((r) => r.class === cls);
  let recallAt90 = 0;
  let recallAt95 = 0;
  let ballRecallAt60 = 0;
  for (let t = 0.05; t < 0.95; t += 0.01) {
    const people = row(t, 'people');
    if (people && people.precision >= 0.9) recallAt90 = Math.max(recallAt90, people.recall);
    if (people && people.precision >= 0.95) recallAt95 = Math.max(recallAt95, people.recall);
    const balls = row(t, 'ball');
    if (balls && balls.precision >= 0.6) ballRecallAt60 = Math.max(ballRecallAt60, balls.recall);
  }
  const all = row(0.01, 'people');
  const atHigh = row(high, 'people');
  const ball = row(0.01, 'ball');
  const ballAtFloor = row(ballFloor, 'ball');
  rows.push({
    variant: name,
    peopleAp50: all?.ap,
    recallAtPrecision90: recallAt90,
    recallAtPrecision95: recallAt95,
    atHigh: { minScore: high, precision: atHigh?.precision, recall: atHigh?.recall },
    ballApCentre4Px: ball?.ap,
    ballRecallAtPrecision60: ballRecallAt60,
    ballAtFloor: { minScore: ballFloor, precision: ballAtFloor?.precision, recall: ballAtFloor?.recall },
    msPerFrame: msPerFrame.get(name),
  });
  process.stdout.write(
    `| ${name} | ${all?.ap.toFixed(3)} | ${recallAt90.toFixed(3)} | ${recallAt95.toFixed(3)} | ${atHigh?.precision.toFixed(3)} / ${atHigh?.recall.toFixed(3)} at ${high} | ${ball?.ap.toFixed(3)} | ${ballRecallAt60.toFixed(3)} | ${ballAtFloor?.precision.toFixed(3)} / ${ballAtFloor?.recall.toFixed(3)} at ${ballFloor} | ${msPerFrame.get(name)?.toFixed(1)} |\n`,
  );
}
await writeFile(
  join(root, 'bench', 'results', 'detect-variants.json'),
  `${JSON.stringify(
    {
      command: 'node bench/detect/variants.ts',
      model: { sha256: first.info.sha256.slice(0, 12), precision: first.info.precision },
      tiling: plan.grid,
      frames: images.length,
      rows,
      loadAverage1m: loadavg()[0],
      measuredAt: new Date().toISOString(),
    },
    null,
    2,
  )}\n`,
);
