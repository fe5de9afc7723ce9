import { linearSumAssignment } from '../track/assignment.ts';
import { type EvalSequence, similarityMatrix } from './sequence.ts';

/** HOTA and its parts, averaged over the 19 localisation thresholds α = 0.05…0.95. */
export interface HotaMetrics {
  HOTA: number;
  DetA: number;
  AssA: number;
  DetRe: number;
  DetPr: number;
  AssRe: number;
  AssPr: number;
  LocA: number;
  /** HOTA at α = 0.05 (the lowest threshold), as TrackEval's `HOTA(0)`. */
  HOTA0: number;
  /** Per-α HOTA values, α = 0.05, 0.10, …, 0.95. */
  HOTAByAlpha: number[];
}

const EPS = 2.220446049250313e-16;
/** TrackEval: `np.arange(0.05, 0.99, 0.05)`. */
export const HOTA_ALPHAS = Array.from({ length: 19 }, (_, i) => 0.05 * (i + 1));

/**
 * A faithful port of TrackEval's `HOTA.eval_sequence`
 * (`trackeval/metrics/hota.py`; Luiten et al., "HOTA: A Higher Order Metric
 * for Evaluating Multi-Object Tracking", IJCV 2021):
 * 1. a global alignment score per (gt id, tracker id) from IoU-normalised
 *    co-occurrence over the whole sequence;
 * 2. per frame, a Hungarian match maximising alignment × IoU;
 * 3. per α, matches with IoU ≥ α count as TP; DetA = TP / (TP + FN + FP);
 *    AssA = Σ_TP |TPA| / (|TPA| + |FNA| + |FPA|) / TP; HOTA_α = √(DetA·AssA).
 */
export function hotaMetrics(seq: EvalSequence): HotaMetrics {
  const G = seq.gtIdCount;
  const T = seq.trackerIdCount;
  const A = HOTA_ALPHAS.length;
  const totalGt = seq.frames.reduce((s, f) => s + f.gtIds.length, 0);
  const totalTr = seq.frames.reduce((s, f) => s + f.trackerIds.length, 0);
  const zeros = () => new Array<number>(A).fill(0);
  if (totalTr === 0 || totalGt === 0) {
    return {
      HOTA: 0,
      DetA: 0,
      AssA: 0,
      DetRe: 0,
      DetPr: 0,
      AssRe: 0,
      AssPr: 0,
      LocA: 1,
      HOTA0: 0,
      HOTAByAlpha: zeros(),
    };
  }
  const similarities = seq.frames.map(similarityMatrix);
  const potential = Array.from({ length: G }, () => new Array<number>(T).fill(0));
  const gtCount = new Array<number>(G).fill(0);
  const trCount = new Array<number>(T).fill(0);
  seq.frames.forEach((frame, f) => {
    const sim = similarities[f]!;
    const rowSum = sim.map((row) => row.reduce((a, b) => a + b, 0));
    const colSum = frame.trackerIds.map((_, j) => sim.reduce((a, row) => a + row[j]!, 0));
    for (const [i, row] of sim.entries()) {
      for (const [j, s] of row.entries()) {
        const denom = rowSum[i]! + colSum[j]! - s;
        if (denom > EPS) potential[frame.gtIds[i]!]![frame.trackerIds[j]!]! += s / denom;
      }
    }
    for (const g of frame.gtIds) gtCount[g]! += 1;
    for (const t of frame.trackerIds) trCount[t]! += 1;
  });
  const alignment = potential.map((row, g) => row.map((p, t) => p / (gtCount[g]! + trCount[t]! - p)));

  const TP = zeros();
  const FN = zeros();
  const FP = zeros();
  const locSum = zeros();
  const matchCounts = HOTA_ALPHAS.map(() => Array.from({ length: G }, () => new Array<number>(T).fill(0)));
  seq.frames.forEach((frame, f) => {
    if (frame.gtIds.length === 0) {
      for (let a = 0; a < A; a++) FP[a]! += frame.trackerIds.length;
      return;
    }
    if (frame.trackerIds.length === 0) {
      for (let a = 0; a < A; a++) FN[a]! += frame.gtIds.length;
      return;
    }
    const sim = similarities[f]!;
    const score = sim.map((row, i) => row.map((s, j) => alignment[frame.gtIds[i]!]![frame.trackerIds[j]!]! * s));
    const matches = linearSumAssignment(score, true);
    HOTA_ALPHAS.forEach((alpha, a) => {
      const ok = matches.filter(([i, j]) => sim[i]![j]! >= alpha - EPS);
      TP[a]! += ok.length;
      FN[a]! += frame.gtIds.length - ok.length;
      FP[a]! += frame.trackerIds.length - ok.length;
      for (const [i, j] of ok) {
        locSum[a]! += sim[i]![j]!;
        matchCounts[a]![frame.gtIds[i]!]![frame.trackerIds[j]!]! += 1;
      }
    });
  });

  const per = HOTA_ALPHAS.map((_, a) => {
    const mc = matchCounts[a]!;
    let assA = 0;
    let assRe = 0;
    let assPr = 0;
    for (let g = 0; g < G; g++) {
      for (let t = 0; t < T; t++) {
        const m = mc[g]![t]!;
        if (m === 0) continue;
        assA += (m * m) / Math.max(1, gtCount[g]! + trCount[t]! - m);
        assRe += (m * m) / Math.max(1, gtCount[g]!);
        assPr += (m * m) / Math.max(1, trCount[t]!);
      }
    }
    const tp = TP[a]!;
    const AssA = assA / Math.max(1, tp);
    const DetA = tp / Math.max(1, tp + FN[a]! + FP[a]!);
    return {
      HOTA: Math.sqrt(DetA * AssA),
      DetA,
      AssA,
      AssRe: assRe / Math.max(1, tp),
      AssPr: assPr / Math.max(1, tp),
      DetRe: tp / Math.max(1, tp + FN[a]!),
      DetPr: tp / Math.max(1, tp + FP[a]!),
      LocA: Math.max(1e-10, locSum[a]!) / Math.max(1e-10, tp),
    };
  });
  const mean = (key: keyof (typeof per)[number]) => per.reduce((s, p) => s + p[key], 0) / A;
  return {
    HOTA: mean('HOTA'),
    DetA: mean('DetA'),
    AssA: mean('AssA'),
    DetRe: mean('DetRe'),
    DetPr: mean('DetPr'),
    AssRe: mean('AssRe'),
    AssPr: mean('AssPr'),
    LocA: mean('LocA'),
    HOTA0: per[0]!.HOTA,
    HOTAByAlpha: per.map((p) => p.HOTA),
  };
}
