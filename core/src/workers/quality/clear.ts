import { linearSumAssignment } from '../track/assignment.ts';
import { type EvalSequence, similarityMatrix } from './sequence.ts';

/** CLEAR MOT metrics (Bernardin & Stiefelhagen, 2008) as TrackEval computes them. */
export interface ClearMetrics {
  MOTA: number;
  MOTP: number;
  TP: number;
  FN: number;
  FP: number;
  IDSW: number;
  /** Mostly tracked / partly tracked / mostly lost ground-truth ids (≥ 80 %, 20–80 %, < 20 % of their frames). */
  MT: number;
  PT: number;
  ML: number;
  Frag: number;
}

const EPS = 2.220446049250313e-16;

/**
 * A faithful port of TrackEval's `CLEAR.eval_sequence`
 * (github.com/JonathonLuiten/TrackEval, `trackeval/metrics/clear.py`):
 * per frame, a Hungarian match that first keeps last frame's pairs
 * (+1000) and then maximises IoU, pairs below IoU 0.5 not allowed;
 * an ID switch is a gt matched to a tracker id other than the last one it was matched to.
 * MOTA = (TP − FP − IDSW) / max(1, TP + FN).
 */
export function clearMetrics(seq: EvalSequence, threshold = 0.5): ClearMetrics {
  let TP = 0;
  let FN = 0;
  let FP = 0;
  let IDSW = 0;
  let motpSum = 0;
  const gtIdCount = new Array<number>(seq.gtIdCount).fill(0);
  const gtMatchedCount = new Array<number>(seq.gtIdCount).fill(0);
  const gtFragCount = new Array<number>(seq.gtIdCount).fill(0);
  const prevTrackerId = new Array<number>(seq.gtIdCount).fill(Number.NaN);
  let prevTimestepTrackerId = new Array<number>(seq.gtIdCount).fill(Number.NaN);
  for (const frame of seq.frames) {
    if (frame.gtIds.length === 0) {
      FP += frame.trackerIds.length;
      continue;
    }
    if (frame.trackerIds.length === 0) {
      FN += frame.gtIds.length;
      for (const g of frame.gtIds) gtIdCount[g]! += 1;
      continue;
    }
    const similarity = similarityMatrix(frame);
    const score = similarity.map((row, i) =>
      row.map((s, j) => {
        if (s < threshold - EPS) return 0;
        return (frame.trackerIds[j] === prevTimestepTrackerId[frame.gtIds[i]!] ? 1000 : 0) + s;
      }),
    );
    const matches = linearSumAssignment(score, true).filter(([i, j]) => score[i]![j]! > EPS);
    for (const g of frame.gtIds) gtIdCount[g]! += 1;
    const nextTimestep = new Array<number>(seq.gtIdCount).fill(Number.NaN);
    for (const [i, j] of matches) {
      const g = frame.gtIds[i]!;
      const t = frame.trackerIds[j]!;
      if (!Number.isNaN(prevTrackerId[g]!) && prevTrackerId[g] !== t) IDSW += 1;
      gtMatchedCount[g]! += 1;
      prevTrackerId[g] = t;
      nextTimestep[g] = t;
      motpSum += similarity[i]![j]!;
    }
    for (let g = 0; g < seq.gtIdCount; g++) {
      if (Number.isNaN(prevTimestepTrackerId[g]!) && !Number.isNaN(nextTimestep[g]!)) gtFragCount[g]! += 1;
    }
    prevTimestepTrackerId = nextTimestep;
    TP += matches.length;
    FN += frame.gtIds.length - matches.length;
    FP += frame.trackerIds.length - matches.length;
  }
  let MT = 0;
  let PT = 0;
  let ML = 0;
  let Frag = 0;
  for (let g = 0; g < seq.gtIdCount; g++) {
    if (gtIdCount[g]! === 0) continue;
    const ratio = gtMatchedCount[g]! / gtIdCount[g]!;
    if (ratio > 0.8) MT += 1;
    else if (ratio >= 0.2) PT += 1;
    else ML += 1;
    if (gtFragCount[g]! > 0) Frag += gtFragCount[g]! - 1;
  }
  return {
    MOTA: (TP - FP - IDSW) / Math.max(1, TP + FN),
    MOTP: motpSum / Math.max(1, TP),
    TP,
    FN,
    FP,
    IDSW,
    MT,
    PT,
    ML,
    Frag,
  };
}
