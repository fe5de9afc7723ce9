/**
 * Test-time augmentation by horizontal flip (`DetectOptions.testTimeAugmentation: 'flip'`): each tile is also
 * inferred mirrored, and the two passes' detections of a frame are fused by weighted boxes fusion (Solovyev,
 * Wang & Gabruseva, "Weighted boxes fusion: ensembling boxes from different object detection models", Image and
 * Vision Computing 107, 2021): a box of one pass matched to one of the other (IoU above `matchIou`, same kind:
 * person or ball, greedily in the first pass's order) becomes their score-weighted mean box with the mean of
 * their scores; a person only one pass found keeps its box at half its score. Agreement between the passes is
 * confidence: on the real validation frames this raises people's recall at precision 0.95 from 0.79 to 0.86
 * (bench/README.md § flip TTA, `node bench/detect/variants.ts`), for a second inference per tile. The ball is
 * a few pixels, often seen by one pass only: its boxes keep the larger score (a union), matched or not.
 */
import type { Detection } from './detections-format.ts';
import { iou } from './geometry.ts';

/** In-place horizontal mirror of one CHW float image of `width × height` at `offset`. */
export function mirrorChw(data: Float32Array, offset: number, width: number, height: number): void {
  for (let c = 0; c < 3; c++) {
    for (let y = 0; y < height; y++) {
      const row = offset + (c * height + y) * width;
      for (let a = row, b = row + width - 1; a < b; a++, b--) {
        const t = data[a] as number;
        data[a] = data[b] as number;
        data[b] = t;
      }
    }
  }
}

const kindOf = (d: Detection) => (d.class === 'ball' ? 'ball' : 'person');

/** A box only one pass found: a person at half its score (the other pass's 0 averaged in), the ball as it is. */
const alone = (d: Detection): Detection => (kindOf(d) === 'ball' ? d : { ...d, score: d.score / 2 });

/**
 * Fuses a frame's detections from the recorded pass and the mirrored pass (boxes already mirrored back),
 * see the file's comment. The class of a fused person is the higher-scoring pass's; sorted by score.
 * @param matchIou - IoU above which two boxes are one object. @defaultValue 0.55
 */
export function fuseFlipPasses(
  recorded: readonly Detection[],
  mirrored: readonly Detection[],
  matchIou = 0.55,
): Detection[] {
  const used = new Set<number>();
  const fused: Detection[] = [];
  for (const d of recorded) {
    let match = -1;
    let best = matchIou;
    mirrored.forEach((e, j) => {
      const overlap = used.has(j) || kindOf(e) !== kindOf(d) ? 0 : iou(d.box, e.box);
      if (overlap > best) {
        best = overlap;
        match = j;
      }
    });
    const e = mirrored[match];
    if (!e) {
      fused.push(alone(d));
      continue;
    }
    used.add(match);
    const weight = d.score + e.score;
    const mean = (k: 0 | 1 | 2 | 3) => (d.box[k] * d.score + e.box[k] * e.score) / weight;
    fused.push({
      class: d.score >= e.score ? d.class : e.class,
      score: kindOf(d) === 'ball' ? Math.max(d.score, e.score) : weight / 2,
      box: [mean(0), mean(1), mean(2), mean(3)],
    });
  }
  mirrored.forEach((e, j) => {
    if (!used.has(j)) fused.push(alone(e));
  });
  return fused.sort((a, b) => b.score - a.score);
}
