import type { BoxXyxy } from '../detect/geometry.ts';
import { iou } from '../detect/geometry.ts';
import { linearSumAssignment } from '../track/assignment.ts';

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
 * IoU ≥ `iouThreshold` (PASCAL VOC's 0.5 by default). Detections below
 * `minScore` are ignored.
 *
 * @param frames - per frame, the ground-truth boxes and the detections.
 */
export function detectionQuality(
  frames: readonly { gt: readonly BoxXyxy[]; detections: readonly { box: BoxXyxy; score: number }[] }[],
  iouThreshold = 0.5,
  minScore = 0,
): DetectionQuality {
  let tp = 0;
  let fp = 0;
  let fn = 0;
  for (const frame of frames) {
    const detections = frame.detections.filter((d) => d.score >= minScore);
    const sim = frame.gt.map((g) => detections.map((d) => iou(g, d.box)));
    const masked = sim.map((row) => row.map((s) => (s >= iouThreshold ? s : 0)));
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
