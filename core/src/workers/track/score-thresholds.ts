import type { DetectionsFile } from '../detect/detections-format.ts';

/** ByteTrack's score thresholds for one clip, and where they came from. */
export interface ScoreThresholds {
  /** Boxes at or above: first association (and new tracks). */
  high: number;
  /** Boxes above this and below `high`: second association; below: ignored. */
  low: number;
  /**
   * `options` (given explicitly), `model-card` (the detector's card, `tracker: {high, low}`),
   * `calibration` (this clip's score distribution, {@link calibrateScoreThresholds}) or
   * `default` (ByteTrack's 0.5 / 0.1: too few scores to calibrate).
   */
  source: 'options' | 'model-card' | 'calibration' | 'default';
  /** Scores the calibration looked at (0 unless `calibration`). */
  samples: number;
}

/** Options of {@link calibrateScoreThresholds}. */
export interface CalibrationOptions {
  /** Fewer person scores than this: ByteTrack's defaults are kept. @defaultValue 50 */
  minSamples?: number;
  /** `low` is this quantile of all scores (the weakest boxes are ignored). @defaultValue 0.1 */
  lowQuantile?: number;
  /** Bounds of `high`. @defaultValue [0.1, 0.6] */
  highRange?: [number, number];
}

/** The q-quantile (0..1) of ascending values, linear between neighbours (NumPy's default). */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) throw new Error('quantile of no values');
  const position = (sorted.length - 1) * Math.min(1, Math.max(0, q));
  const i = Math.floor(position);
  const f = position - i;
  return sorted[i]! + (sorted[Math.min(i + 1, sorted.length - 1)]! - sorted[i]!) * f;
}

/**
 * The cut between the two modes of values in [0, 1] (detector scores are bimodal: a heap of
 * background boxes near the detector's floor and a mode of real objects). Otsu's method (Otsu, "A
 * threshold selection method from gray-level histograms", IEEE SMC 1979) on a 100-bin histogram
 * gives the two class means; as Otsu's cut drifts into the smaller class when the classes are
 * unequal (the valley-emphasis remark of Ng, Pattern Recognition Letters 2006), the cut is then
 * the median bin of the valley between the two means: the bins (3-bin smoothed) holding at most
 * twice the least count there.
 */
export function otsuThreshold(values: readonly number[], bins = 100): number {
  const histogram = new Array<number>(bins).fill(0);
  for (const v of values) histogram[Math.min(bins - 1, Math.max(0, Math.floor(v * bins + 1e-9)))]! += 1;
  const total = values.length;
  let sumAll = 0;
  for (let i = 0; i < bins; i++) sumAll += (i + 0.5) * histogram[i]!;
  let weightBelow = 0;
  let sumBelow = 0;
  let best = -1;
  let means: [number, number] = [0, bins - 1];
  for (let i = 0; i < bins - 1; i++) {
    weightBelow += histogram[i]!;
    sumBelow += (i + 0.5) * histogram[i]!;
    const weightAbove = total - weightBelow;
    if (weightBelow === 0 || weightAbove === 0) continue;
    const meanBelow = sumBelow / weightBelow;
    const meanAbove = (sumAll - sumBelow) / weightAbove;
    const between = weightBelow * weightAbove * (meanBelow - meanAbove) ** 2;
    if (between > best) {
      best = between;
      means = [meanBelow, meanAbove];
    }
  }
  const from = Math.ceil(means[0]);
  const to = Math.max(from, Math.floor(means[1]));
  const smooth = (i: number) => (histogram[i - 1] ?? 0) + histogram[i]! + (histogram[i + 1] ?? 0);
  let least = Number.POSITIVE_INFINITY;
  for (let i = from; i <= to; i++) least = Math.min(least, smooth(i));
  // The valley: bins between the means holding at most twice the least count; its middle (a
  // flat valley is cut in its centre, not at an edge where one class's tail begins).
  const valley: number[] = [];
  for (let i = from; i <= to; i++) if (smooth(i) <= 2 * least) valley.push(i);
  return (valley[Math.floor((valley.length - 1) / 2)]! + 0.5) / bins;
}

/**
 * ByteTrack thresholds from a clip's own person scores (players, goalkeepers, referees; the ball
 * has its own tracker): `high` is Otsu's cut, which separates the heap of background boxes near the
 * detector's floor from the confident mode of real people, clamped to `highRange` — so real people
 * start and keep tracks in the first association whatever the detector's score scale (real footage
 * scores 0.1–0.4 where ByteTrack's 0.5 assumes MOT17 detectors); `low` is the `lowQuantile` of all
 * scores, at most 0.8 · `high` (the weakest boxes are ignored, the rest serve the second association).
 *
 * @returns `source: 'default'` (0.5 / 0.1) with fewer than `minSamples` scores.
 */
export function calibrateScoreThresholds(scores: readonly number[], options: CalibrationOptions = {}): ScoreThresholds {
  const sorted = [...scores].sort((a, b) => a - b);
  if (sorted.length < (options.minSamples ?? 50)) {
    return { high: 0.5, low: 0.1, source: 'default', samples: 0 };
  }
  const [minHigh, maxHigh] = options.highRange ?? [0.1, 0.6];
  const high = Math.min(maxHigh, Math.max(minHigh, otsuThreshold(sorted)));
  const low = Math.min(high * 0.8, quantile(sorted, options.lowQuantile ?? 0.1));
  return { high: round3(high), low: round3(low), source: 'calibration', samples: sorted.length };
}

/** The person scores of a detections file (every class but the ball). */
export function personScores(detections: DetectionsFile): number[] {
  return detections.frames.flatMap((f) => f.detections.filter((d) => d.class !== 'ball').map((d) => d.score));
}

const round3 = (v: number) => Math.round(v * 1000) / 1000;
