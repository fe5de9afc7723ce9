import { iou } from '../../core/src/workers/detect/index.ts';
import { linearSumAssignment, type TracksFile } from '../../core/src/workers/track/index.ts';

/** Id switches caused at segment boundaries, against ground truth. */
export interface BoundarySwitches {
  /** Ground-truth people matched to a predicted track on both sides of a boundary. */
  crossings: number;
  /** …of which the predicted id differs across the boundary. */
  switches: number;
}

type Boxes = Map<number, [number, number, number, number]>;

/** Predicted id per ground-truth id in one analysed frame (Hungarian on IoU ≥ `minIou`). */
function matchFrame(truth: Boxes, predicted: Boxes, minIou: number): Map<number, number> {
  const t = [...truth];
  const p = [...predicted];
  const out = new Map<number, number>();
  if (t.length === 0 || p.length === 0) return out;
  const cost = t.map(([, a]) => p.map(([, b]) => 1 - iou(a, b)));
  for (const [i, j] of linearSumAssignment(cost)) {
    if (1 - cost[i]![j]! >= minIou) out.set(t[i]![0], p[j]![0]);
  }
  return out;
}

function boxesByFrame(file: TracksFile, frameOf: (frame: number, tMs: number) => number): Map<number, Boxes> {
  const out = new Map<number, Boxes>();
  for (const track of file.tracks) {
    if (track.class === 'ball') continue;
    for (const f of track.frames) {
      if (f.interpolated) continue;
      const k = frameOf(f.frame, f.tMs);
      let boxes = out.get(k);
      if (!boxes) {
        boxes = new Map();
        out.set(k, boxes);
      }
      boxes.set(track.id, f.box);
    }
  }
  return out;
}

/**
 * Counts id switches across each boundary: for every ground-truth person, its predicted id in the
 * last analysed frame before the boundary where it is matched (within `windowFrames`) and in the
 * first one after; a crossing whose ids differ is a switch.
 *
 * @param predicted - match-level tracks (analysed frames 0…n−1 of the whole clip, `mergeSegmentTracks`).
 * @param truth - ground truth at the source rate.
 * @param boundaries - first analysed frame of every segment after the first.
 * @param sourceFrameOf - source frame of an analysed frame's time, ms.
 */
export function boundarySwitches(
  predicted: TracksFile,
  truth: TracksFile,
  boundaries: readonly number[],
  analysedTimesMs: readonly number[],
  sourceFps: number,
  { windowFrames = 5, minIou = 0.5 } = {},
): BoundarySwitches {
  const pred = boxesByFrame(predicted, (frame) => frame);
  const gt = boxesByFrame(truth, (frame) => frame);
  const matched = (k: number) =>
    matchFrame(
      gt.get(Math.round((analysedTimesMs[k]! * sourceFps) / 1000)) ?? new Map(),
      pred.get(k) ?? new Map(),
      minIou,
    );
  let crossings = 0;
  let switches = 0;
  for (const b of boundaries) {
    const before = new Map<number, number>();
    for (let k = b - 1; k >= Math.max(0, b - windowFrames); k--) {
      for (const [g, p] of matched(k)) if (!before.has(g)) before.set(g, p);
    }
    const after = new Map<number, number>();
    for (let k = b; k < Math.min(analysedTimesMs.length, b + windowFrames); k++) {
      for (const [g, p] of matched(k)) if (!after.has(g)) after.set(g, p);
    }
    for (const [g, p] of before) {
      const q = after.get(g);
      if (q === undefined) continue;
      crossings += 1;
      if (q !== p) switches += 1;
    }
  }
  return { crossings, switches };
}
