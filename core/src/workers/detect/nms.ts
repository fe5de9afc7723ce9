import { type BoxXyxy, intersectionOverSmaller, iou } from './geometry.ts';

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
 * Classes that name one kind of object can suppress each other: `groupOf`
 * maps a class id to its NMS group (default: the class itself). The detector
 * puts player, goalkeeper and referee in one group, so a person whose role the
 * model is unsure of (neighbouring anchors voting for different roles) is one
 * box, not one box per role.
 *
 * Containment: a box that lies mostly inside a kept box of its group, or holds one mostly inside
 * it (intersection over the smaller area above `maxContainment`), is dropped too, whatever the IoU:
 * a detector's second box on one person (the legs, or the body without the head) has IoU 0.3–0.5
 * with the whole-person box and survives IoU suppression, then becomes a second track on one
 * player. `1` turns it off.
 *
 * @param iouThreshold - in [0, 1]; higher keeps more overlapping boxes.
 * @param maxDetections - cap on the result (after suppression).
 * @param groupOf - NMS group of a class id.
 * @param maxContainment - in (0, 1]; intersection over the smaller box's area above which a box is dropped.
 */
export function classWiseNms(
  candidates: readonly Candidate[],
  iouThreshold: number,
  maxDetections = 1000,
  groupOf: (classId: number) => number | string = (classId) => classId,
  maxContainment = 1,
): Candidate[] {
  const sorted = [...candidates].sort((a, b) => b.score - a.score);
  const keptByClass = new Map<number | string, Candidate[]>();
  const kept: Candidate[] = [];
  for (const candidate of sorted) {
    const group = groupOf(candidate.classId);
    let same = keptByClass.get(group);
    if (!same) {
      same = [];
      keptByClass.set(group, same);
    }
    if (
      same.some(
        (k) =>
          iou(k.box, candidate.box) > iouThreshold || intersectionOverSmaller(k.box, candidate.box) > maxContainment,
      )
    )
      continue;
    same.push(candidate);
    kept.push(candidate);
    if (kept.length >= maxDetections) break;
  }
  return kept;
}
