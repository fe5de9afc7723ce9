/**
 * The default detector's detections of a synthetic sample as `pnpm demo` makes them (seed `seed`,
 * 20 s, 3 cameras → 2880×392 panorama, `bench/workers/synthetic-clip.ts`): the detect stage at
 * `fps` analysed frames per second, `auto` tiling, the scoring's options, and — for exploration —
 * another ball floor. Written once under `.cache/bench-detect/synthetic-demo/` and reused with `reuse`.
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_MODEL_PATH, DEFAULT_MODEL_PERSON_HEIGHT_PX } from '../../core/src/workers/detect/handler.ts';
import { type DetectionsFile, Detector, runDetect } from '../../core/src/workers/detect/index.ts';
import type { BallFrame } from '../../core/src/workers/track/index.ts';
import { type SyntheticClip, syntheticClip } from '../workers/synthetic-clip.ts';
import { type Scoring, scoringOptions } from './scoring.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Options of {@link syntheticDetections}. */
export interface SyntheticDetectionsOptions {
  seed: number;
  scoring: Scoring;
  /** Analysed frames per second. */
  fps: number;
  /** The lowest ball score the detector keeps (its card's `ball` when absent). */
  ballFloor?: number;
  /** The model card's verifiers (`DETECT_VERIFIER`, default `auto`). */
  verifier?: 'auto' | 'off';
  /** Keep a detections file an earlier run wrote. */
  reuse: boolean;
}

/**
 * Runs (or reuses) the detect stage on the sample.
 * @returns the clip, the detections file's path, its variant name and the stage's frames per second
 *   (undefined when reused).
 */
export async function syntheticDetections(options: SyntheticDetectionsOptions): Promise<{
  clip: SyntheticClip;
  detectionsPath: string;
  variant: string;
  framesPerSecond: number | undefined;
}> {
  const clip = await syntheticClip(options.seed, 20);
  const work = join(root, '.cache', 'bench-detect', 'synthetic-demo');
  await mkdir(work, { recursive: true });
  const floor = options.ballFloor;
  const verifier = options.verifier ?? 'auto';
  const variant = `${options.scoring}-seed${options.seed}${floor !== undefined ? `-ball${floor}` : ''}${verifier === 'off' ? '-unverified' : ''}`;
  const detectionsPath = join(work, `${variant}.detections.jsonl`);
  if (options.reuse && existsSync(detectionsPath)) return { clip, detectionsPath, variant, framesPerSecond: undefined };
  const { options: scored } = await scoringOptions(options.scoring, DEFAULT_MODEL_PATH, verifier);
  const detector = await Detector.open({
    model: { path: DEFAULT_MODEL_PATH },
    modelVersion: `bench-${options.scoring}`,
    classMap: { 0: 'player', 1: 'goalkeeper', 2: 'referee', 3: 'ball' },
    tiling: { modelPersonHeightPx: DEFAULT_MODEL_PERSON_HEIGHT_PX },
    ...scored,
    ...(floor !== undefined ? { classScoreFloors: { ...scored.classScoreFloors, ball: floor } } : {}),
  });
  try {
    const summary = await runDetect({
      inputPath: clip.panoramaPath,
      outputPath: detectionsPath,
      detector,
      analysisFps: options.fps,
    });
    return { clip, detectionsPath, variant, framesPerSecond: summary.framesPerSecond };
  } finally {
    await detector.close();
  }
}

/** The sample's true ball per analysed frame of a detections file. */
export interface BallTruth {
  /** Analysed frames in which the ball is in the picture. */
  frames: number;
  /** Whether (x, y) lies within 5 px of the true ball's centre in analysed frame `k`. */
  near(k: number, x: number, y: number): boolean;
}

/** The ball's truth for the analysed frames of `detections` (their `sourceFrame`s). */
export function ballTruth(clip: SyntheticClip, detections: DetectionsFile): BallTruth {
  const boxes = new Map(
    clip.truth.tracks.find((t) => t.class === 'ball')?.frames.map((f) => [f.frame, f.box] as const) ?? [],
  );
  return {
    frames: detections.frames.filter((f) => boxes.has(f.sourceFrame ?? -1)).length,
    near(k, x, y) {
      const b = boxes.get(detections.frames[k]?.sourceFrame ?? -1);
      return b !== undefined && Math.hypot((b[0] + b[2]) / 2 - x, (b[1] + b[3]) / 2 - y) <= 5;
    },
  };
}

/**
 * A ball track against the truth: precision = its `detected` and `interpolated` positions within 5 px
 * of the ball over all of them (`predicted` ones are not counted: the stage draws none), recall = the
 * right ones over the frames with the ball.
 */
export function scoreBallTrack(
  truth: BallTruth,
  frames: readonly BallFrame[],
): { positions: number; right: number; precision: number; recall: number } {
  let positions = 0;
  let right = 0;
  for (const f of frames) {
    if (f.x === null || f.y === null || f.state === 'predicted') continue;
    positions += 1;
    if (truth.near(f.frame, f.x, f.y)) right += 1;
  }
  const ratio = (a: number, b: number) => (b > 0 ? +(a / b).toFixed(3) : 0);
  return { positions, right, precision: ratio(right, positions), recall: ratio(right, truth.frames) };
}
