import { linearSumAssignment } from '../track/assignment.ts';
import { type EvalSequence, similarityMatrix } from './sequence.ts';

/** Identity metrics (Ristani et al., "Performance Measures and a Data Set for Multi-Target, Multi-Camera Tracking", 2016). */
export interface IdentityMetrics {
  IDF1: number;
  IDP: number;
  IDR: number;
  IDTP: number;
  IDFN: number;
  IDFP: number;
}

/**
 * A faithful port of TrackEval's `Identity.eval_sequence`
 * (`trackeval/metrics/identity.py`): one global bipartite matching of gt ids
 * to tracker ids (each may stay unmatched) minimising IDFN + IDFP, where a
 * pair's overlap counts the frames with IoU ≥ 0.5.
 * IDF1 = IDTP / (IDTP + ½·IDFP + ½·IDFN).
 */
export function identityMetrics(seq: EvalSequence, threshold = 0.5): IdentityMetrics {
  const G = seq.gtIdCount;
  const T = seq.trackerIdCount;
  const potential = Array.from({ length: G }, () => new Array<number>(T).fill(0));
  const gtCount = new Array<number>(G).fill(0);
  const trCount = new Array<number>(T).fill(0);
  for (const frame of seq.frames) {
    const similarity = similarityMatrix(frame);
    for (const [i, row] of similarity.entries()) {
      for (const [j, s] of row.entries()) {
        if (s >= threshold) potential[frame.gtIds[i]!]![frame.trackerIds[j]!]! += 1;
      }
    }
    for (const g of frame.gtIds) gtCount[g]! += 1;
    for (const t of frame.trackerIds) trCount[t]! += 1;
  }
  const totalGt = gtCount.reduce((a, b) => a + b, 0);
  const totalTr = trCount.reduce((a, b) => a + b, 0);
  if (T === 0) return { IDF1: 0, IDP: 0, IDR: 0, IDTP: 0, IDFN: totalGt, IDFP: 0 };
  if (G === 0) return { IDF1: 0, IDP: 0, IDR: 0, IDTP: 0, IDFN: 0, IDFP: totalTr };
  const n = G + T;
  const fp = Array.from({ length: n }, () => new Array<number>(n).fill(0));
  const fn = Array.from({ length: n }, () => new Array<number>(n).fill(0));
  for (let i = G; i < n; i++) for (let j = 0; j < T; j++) fp[i]![j] = 1e10;
  for (let i = 0; i < G; i++) for (let j = T; j < n; j++) fn[i]![j] = 1e10;
  for (let g = 0; g < G; g++) {
    for (let j = 0; j < T; j++) fn[g]![j] = gtCount[g]!;
    fn[g]![T + g] = gtCount[g]!;
  }
  for (let t = 0; t < T; t++) {
    for (let i = 0; i < G; i++) fp[i]![t] = trCount[t]!;
    fp[t + G]![t] = trCount[t]!;
  }
  for (let g = 0; g < G; g++) {
    for (let t = 0; t < T; t++) {
      fn[g]![t]! -= potential[g]![t]!;
      fp[g]![t]! -= potential[g]![t]!;
    }
  }
  const cost = fn.map((row, i) => row.map((v, j) => v + fp[i]![j]!));
  let IDFN = 0;
  let IDFP = 0;
  for (const [i, j] of linearSumAssignment(cost)) {
    IDFN += fn[i]![j]!;
    IDFP += fp[i]![j]!;
  }
  const IDTP = totalGt - IDFN;
  return {
    IDF1: IDTP / Math.max(1, IDTP + 0.5 * IDFP + 0.5 * IDFN),
    IDP: IDTP / Math.max(1, IDTP + IDFP),
    IDR: IDTP / Math.max(1, IDTP + IDFN),
    IDTP,
    IDFN,
    IDFP,
  };
}
