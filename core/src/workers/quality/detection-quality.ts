import type { BoxXyxy } from '../detect/geometry.ts';
import { iou } from '../detect/geometry.ts';
import { linearSumAssignment } from '../track/assignment.ts';

/**
 * When a detection matches a ground-truth box: IoU ≥ a threshold (a number: PASCAL VOC's 0.5), or box centres
 * at most `centrePx` source pixels apart (`{ centrePx }`: for a ball of a few pixels, whose box size says
 * little, as train/evaluate.py's `ball_centre_within_4px`).
 */
export type MatchRule = number | { centrePx: number };

/**
 * How well detection `box` matches truth `g` under `rule`: IoU where it reaches the threshold, or
 * `1 − distance / (centrePx + 1)` where the centres are within `centrePx` (nearer is better); 0 when it does
 * not match. Higher is a better match.
 */
export function matchSimilarity(g: BoxXyxy, box: BoxXyxy, rule: MatchRule): number {
  if (typeof rule === 'number') {
    const o = iou(g, box);
    return o >= rule ? o : 0;
  }
  const d = Math.hypot((g[0] + g[2] - box[0] - box[2]) / 2, (g[1] + g[3] - box[1] - box[3]) / 2);
  return d <= rule.centrePx ? 1 - d / (rule.centrePx + 1) : 0;
}

/** Detection precision and recall at one IoU threshold. */
export interface DetectionQuality {
  precision: number;
  recall: number;
  truePositives: number;
  falsePositives: number;
  falseNegatives: number;
}

/**
 * Precision and recall of detections against ground truth, frame by frame:
 * an optimal one-to-one matching (Hungarian on IoU) where a pair counts when
 * IoU ≥ `rule` (PASCAL VOC's 0.5 by default), or on centre distance where `rule` is
 * `{ centrePx }` ({@link matchSimilarity}). Detections below `minScore` are ignored.
 *
 * @param frames - per frame, the ground-truth boxes and the detections.
 */
export function detectionQuality(
  frames: readonly { gt: readonly BoxXyxy[]; detections: readonly { box: BoxXyxy; score: number }[] }[],
  rule: MatchRule = 0.5,
  minScore = 0,
): DetectionQuality {
  let tp = 0;
  let fp = 0;
  let fn = 0;
  for (const frame of frames) {
    const detections = frame.detections.filter((d) => d.score >= minScore);
    const masked = frame.gt.map((g) => detections.map((d) => matchSimilarity(g, d.box, rule)));
    const matched = linearSumAssignment(masked, true).filter(([i, j]) => masked[i]![j]! > 0).length;
    tp += matched;
    fp += detections.length - matched;
    fn += frame.gt.length - matched;
  }
  return {
    precision: tp / Math.max(1, tp + fp),
    recall: tp / Math.max(1, tp + fn),
    truePositives: tp,
    falsePositives: fp,
    falseNegatives: fn,
  };
}
