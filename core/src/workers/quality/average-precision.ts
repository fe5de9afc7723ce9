import type { BoxXyxy } from '../detect/geometry.ts';
import { type MatchRule, matchSimilarity } from './detection-quality.ts';

/** Ground truth and scored detections of one frame, one class. */
export interface ApFrame {
  gt: readonly BoxXyxy[];
  detections: readonly { box: BoxXyxy; score: number }[];
}

/**
 * Average precision at one IoU threshold (AP50 at 0.5; or on centre distance, `{ centrePx }`: {@link matchSimilarity}), PASCAL VOC 2010+
 * "all-point" interpolation (Everingham et al., "The PASCAL Visual Object
 * Classes Challenge", IJCV 2010; as in `voc_ap(use_07_metric=False)`):
 * detections of all frames sorted by score (descending); each is a true
 * positive when its best-matching still-unmatched ground truth of the same frame
 * matches under `rule` (that ground truth is then matched), else a false
 * positive; AP = Σ (rₙ − rₙ₋₁) · max_{k ≥ n} pₖ over the precision–recall curve.
 * 0 when there is no ground truth.
 */
export function averagePrecision(frames: readonly ApFrame[], rule: MatchRule = 0.5): number {
  const totalGt = frames.reduce((s, f) => s + f.gt.length, 0);
  if (totalGt === 0) return 0;
  const all = frames.flatMap((f, frame) => f.detections.map((d) => ({ frame, ...d })));
  all.sort((a, b) => b.score - a.score);
  const matched = frames.map((f) => new Array<boolean>(f.gt.length).fill(false));
  const precision: number[] = [];
  const recall: number[] = [];
  let tp = 0;
  let fp = 0;
  for (const d of all) {
    const gt = frames[d.frame]!.gt;
    let best = -1;
    let bestSimilarity = 0;
    for (const [i, g] of gt.entries()) {
      if (matched[d.frame]![i]) continue;
      const o = matchSimilarity(g, d.box, rule);
      if (o > bestSimilarity) {
        bestSimilarity = o;
        best = i;
      }
    }
    if (best >= 0) {
      matched[d.frame]![best] = true;
      tp += 1;
    } else fp += 1;
    precision.push(tp / (tp + fp));
    recall.push(tp / totalGt);
  }
  // Precision envelope, then the area under the step curve.
  for (let i = precision.length - 2; i >= 0; i--) precision[i] = Math.max(precision[i]!, precision[i + 1]!);
  let ap = 0;
  let previousRecall = 0;
  for (const [i, r] of recall.entries()) {
    ap += (r - previousRecall) * precision[i]!;
    previousRecall = r;
  }
  return ap;
}
