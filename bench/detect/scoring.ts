/**
 * The two ways the detect stage has scored boxes, for side-by-side benchmarks in one run:
 *
 * - `legacy` (player-detector 2, before 2.1): one 0.1 floor for every class, a person's score is its
 *   best role's score, the tiling first pass takes the median height of people scoring ≥ 0.4;
 * - `card` (from 2.1, what the stage does with the default model): the model card's per-class
 *   floors (people at the tracker's `low`, the ball at `ball`), merged person score
 *   `1 − ∏(1 − p_class)`, first pass at the 25th percentile of people scoring ≥ the card's `high`; with the
 *   card's verifiers (`verifier: 'auto'`: people from 3.3, the ball from 3.4) the thresholds on their fused
 *   scores, else on the detector's own (`verifier.tracker_unverified`).
 */
import {
  cardThresholds,
  type DetectOptions,
  readModelCard,
  scoreFloorsOf,
} from '../../core/src/workers/detect/index.ts';

export type Scoring = 'legacy' | 'card';

/** Detector options of a scoring (merged into the bench's own). `high` = the tracker threshold to report P/R at. */
export async function scoringOptions(
  scoring: Scoring,
  modelPath: string,
  verifier: 'auto' | 'off' = 'auto',
): Promise<{ options: Partial<DetectOptions>; high: number | undefined }> {
  const card = await readModelCard(modelPath);
  if (scoring === 'legacy') {
    // The 2.0 card's threshold (best-role score), as metrics.json keeps it for the old rule.
    return {
      options: { scoreThreshold: 0.1, personScore: 'max', personHeightPercentile: 50, confidentScore: 0.4 },
      high: card ? 0.531 : undefined,
    };
  }
  const tracker = card && cardThresholds(card, verifier);
  return {
    options: tracker
      ? { classScoreFloors: scoreFloorsOf(tracker), confidentScore: tracker.high, verifier }
      : { verifier },
    high: tracker?.high,
  };
}
