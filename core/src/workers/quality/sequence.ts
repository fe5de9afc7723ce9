import { PolyvisionError } from '@polyvision/shared';
import type { BoxXyxy } from '../detect/geometry.ts';
import { iou } from '../detect/geometry.ts';

/** One timestep of a ground-truth/tracker pair: ids are dense indices (0..n−1) over the sequence. */
export interface SequenceFrame {
  gtIds: number[];
  gtBoxes: BoxXyxy[];
  trackerIds: number[];
  trackerBoxes: BoxXyxy[];
}

/** A sequence ready for the metrics (TrackEval's `data` after `get_preprocessed_seq_data`). */
export interface EvalSequence {
  frames: SequenceFrame[];
  gtIdCount: number;
  trackerIdCount: number;
}

/** A box with an object id at a frame (1-based MOTChallenge frames or 0-based analysed frames, consistently). */
export interface IdBox {
  frame: number;
  id: number;
  box: BoxXyxy;
}

/**
 * Parses MOTChallenge text (`frame,id,bb_left,bb_top,bb_width,bb_height,conf,…`,
 * one box per line; Milan et al., "MOT16: A Benchmark for Multi-Object
 * Tracking", 2016). Ground-truth rows with `conf` 0 (not to be evaluated) are skipped.
 *
 * @throws PolyvisionError `mot_text_invalid` naming the line.
 */
export function parseMotChallenge(text: string, isGroundTruth = false): IdBox[] {
  const out: IdBox[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    if (line.trim() === '') return;
    const v = line.split(',').map(Number);
    if (v.length < 6 || v.slice(0, 6).some((x) => !Number.isFinite(x))) {
      throw new PolyvisionError('mot_text_invalid', `line ${i + 1}: expected frame,id,left,top,width,height,…`);
    }
    if (isGroundTruth && v.length >= 7 && v[6] === 0) return;
    const [frame, id, left, top, width, height] = v as [number, number, number, number, number, number];
    out.push({ frame, id, box: [left, top, left + width, top + height] });
  });
  return out;
}

/**
 * Builds the per-frame sequence of ground truth and tracker output over
 * frames `firstFrame..lastFrame`, relabelling ids to dense indices as TrackEval does.
 */
export function buildSequence(
  gt: readonly IdBox[],
  tracker: readonly IdBox[],
  firstFrame: number,
  lastFrame: number,
): EvalSequence {
  const dense = (boxes: readonly IdBox[]) => {
    const map = new Map<number, number>();
    for (const b of boxes) if (!map.has(b.id)) map.set(b.id, map.size);
    return map;
  };
  const gtMap = dense(gt);
  const trMap = dense(tracker);
  const frames: SequenceFrame[] = [];
  for (let f = firstFrame; f <= lastFrame; f++)
    frames.push({ gtIds: [], gtBoxes: [], trackerIds: [], trackerBoxes: [] });
  for (const b of gt) {
    const frame = frames[b.frame - firstFrame];
    if (!frame) continue;
    frame.gtIds.push(gtMap.get(b.id)!);
    frame.gtBoxes.push(b.box);
  }
  for (const b of tracker) {
    const frame = frames[b.frame - firstFrame];
    if (!frame) continue;
    frame.trackerIds.push(trMap.get(b.id)!);
    frame.trackerBoxes.push(b.box);
  }
  return { frames, gtIdCount: gtMap.size, trackerIdCount: trMap.size };
}

/** IoU similarity matrix, gt rows × tracker columns (TrackEval `_calculate_box_ious`). */
export function similarityMatrix(frame: SequenceFrame): number[][] {
  return frame.gtBoxes.map((g) => frame.trackerBoxes.map((t) => iou(g, t)));
}
