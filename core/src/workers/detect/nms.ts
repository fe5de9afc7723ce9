import { type BoxXyxy, iou } from './geometry.ts';

/** A scored box of one model class. */
export interface Candidate {
  box: BoxXyxy;
  score: number;
  classId: number;
}

/**
 * Class-wise greedy non-maximum suppression: within each class, keeps the
 * highest-scoring box and drops every other box whose IoU with a kept one
 * exceeds `iouThreshold` (the standard YOLO post-processing, e.g.
 * torchvision `batched_nms`). Returns the kept candidates, best first.
 *
 * @param iouThreshold - in [0, 1]; higher keeps more overlapping boxes.
 * @param maxDetections - cap on the result (after suppression).
 */
export function classWiseNms(
  candidates: readonly Candidate[],
  iouThreshold: number,
  maxDetections = 1000,
): Candidate[] {
  const sorted = [...candidates].sort((a, b) => b.score - a.score);
  const keptByClass = new Map<number, Candidate[]>();
  const kept: Candidate[] = [];
  for (const candidate of sorted) {
    let same = keptByClass.get(candidate.classId);
    if (!same) {
      same = [];
      keptByClass.set(candidate.classId, same);
    }
    if (same.some((k) => iou(k.box, candidate.box) > iouThreshold)) continue;
    same.push(candidate);
    kept.push(candidate);
    if (kept.length >= maxDetections) break;
  }
  return kept;
}
