import type { FrameDetections } from '../detect/detections-format.ts';
import { averagePrecision } from './average-precision.ts';
import { type DetectionQuality, detectionQuality, type MatchRule } from './detection-quality.ts';
import { centreInRegions, type GroundTruth, type LabelledBox, type Region } from './ground-truth.ts';

/** One row of {@link evaluateDetections}: a class, or `people` (player + goalkeeper + referee merged). */
export interface DetectionEvalRow extends DetectionQuality {
  class: string;
  /** Average precision at the IoU threshold (all scores), VOC all-point. */
  ap: number;
  groundTruthBoxes: number;
  predictedBoxes: number;
}

/** What {@link evaluateDetections} reports. */
export interface DetectionEval {
  iouThreshold: number;
  /** The ball row matched on centre distance (≤ this many source px) instead of IoU; absent: IoU. */
  ballCentrePx?: number;
  minScore: number;
  /** Regions (x1, y1, x2, y2 in source pixels) left out: a box whose centre is inside counts neither way. */
  ignoreRegions: readonly Region[];
  /** Frames compared (analysed frames that have ground truth). */
  frames: number;
  rows: DetectionEvalRow[];
}

/** The classes merged into the `people` row. */
export const PEOPLE_CLASSES = ['player', 'goalkeeper', 'referee'] as const;

/**
 * The source frame an analysed frame is: `sourceFrame` when the file has it,
 * else `round(tMs · sourceFps / 1000)`.
 */
export function sourceFrameOf(frame: Pick<FrameDetections, 'sourceFrame' | 'tMs'>, sourceFps: number): number {
  return frame.sourceFrame ?? Math.round((frame.tMs * sourceFps) / 1000);
}

/**
 * Precision/recall (Hungarian matching at `iouThreshold`, detections scoring
 * ≥ `minScore`) and AP (all detections) per class and for `people`
 * (player + goalkeeper + referee as one class), over the analysed frames that
 * have ground truth. A class only in the predictions gets a row too (all its
 * boxes false positives). `ignoreRegions` (source pixels, the same in every
 * frame: a broadcaster's logo, a score overlay) drop the truth and the
 * detections whose box centre lies inside, as MOTChallenge's ignore regions do.
 * `ballCentrePx` matches the ball on centre distance instead (a ball of ~11 px at 1080p: a box 2 px off
 * already fails IoU 0.5; train/evaluate.py scores the ball within 4 px).
 */
export function evaluateDetections(
  gt: GroundTruth,
  predictions: readonly FrameDetections[],
  sourceFps: number,
  options: {
    iouThreshold?: number;
    minScore?: number;
    ignoreRegions?: readonly Region[];
    ballCentrePx?: number;
  } = {},
): DetectionEval {
  const iouThreshold = options.iouThreshold ?? 0.5;
  const minScore = options.minScore ?? 0.3;
  const ignoreRegions = options.ignoreRegions ?? [];
  const kept = (box: readonly number[]) => !centreInRegions(box, ignoreRegions);
  const pairs: { gt: LabelledBox[]; detections: FrameDetections['detections'] }[] = [];
  for (const frame of predictions) {
    const labelled = gt.frames.get(sourceFrameOf(frame, sourceFps));
    if (labelled) {
      pairs.push({ gt: labelled.filter((g) => kept(g.box)), detections: frame.detections.filter((d) => kept(d.box)) });
    }
  }
  const classes = new Set<string>(gt.classes);
  for (const p of pairs) for (const d of p.detections) classes.add(d.class);
  const rowFor = (name: string, members: ReadonlySet<string>): DetectionEvalRow => {
    const frames = pairs.map((p) => ({
      gt: p.gt.filter((g) => members.has(g.class)).map((g) => g.box),
      detections: p.detections.filter((d) => members.has(d.class)),
    }));
    const rule: MatchRule =
      name === 'ball' && options.ballCentrePx !== undefined ? { centrePx: options.ballCentrePx } : iouThreshold;
    return {
      class: name,
      ...detectionQuality(frames, rule, minScore),
      ap: averagePrecision(frames, rule),
      groundTruthBoxes: frames.reduce((s, f) => s + f.gt.length, 0),
      predictedBoxes: frames.reduce((s, f) => s + f.detections.filter((d) => d.score >= minScore).length, 0),
    };
  };
  const rows = [...classes].sort().map((c) => rowFor(c, new Set([c])));
  if (PEOPLE_CLASSES.some((c) => classes.has(c))) rows.push(rowFor('people', new Set(PEOPLE_CLASSES)));
  return {
    iouThreshold,
    ...(options.ballCentrePx !== undefined ? { ballCentrePx: options.ballCentrePx } : {}),
    minScore,
    ignoreRegions,
    frames: pairs.length,
    rows,
  };
}
