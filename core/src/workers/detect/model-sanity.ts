/** Box counts of a detect run, for {@link modelLooksWrong}. */
export interface ScoreStats {
  /** Boxes written (after the score threshold and NMS). */
  boxes: number;
  /** Of those, boxes scoring below 0.3. */
  lowScoreBoxes: number;
}

/** Boxes per frame above which a run is suspicious (a football pitch holds ~25 people and a ball). */
export const SUSPICIOUS_BOXES_PER_FRAME = 100;
/** Share of low-score (< 0.3) boxes above which a run is suspicious. */
export const SUSPICIOUS_LOW_SCORE_SHARE = 0.8;

/**
 * A warning when a model looks wrong for the footage: on average more than
 * {@link SUSPICIOUS_BOXES_PER_FRAME} boxes per frame, and more than
 * {@link SUSPICIOUS_LOW_SCORE_SHARE} of them below score 0.3 — the picture of a
 * model that sees noise (issue 15: the synthetic-only detector on real
 * broadcast video, ~270 boxes per frame, 144 of them "ball" on pitch lines).
 * `undefined` when the run looks plausible.
 */
export function modelLooksWrong(stats: ScoreStats, frames: number): string | undefined {
  if (frames === 0 || stats.boxes === 0) return undefined;
  const perFrame = stats.boxes / frames;
  const lowShare = stats.lowScoreBoxes / stats.boxes;
  if (perFrame <= SUSPICIOUS_BOXES_PER_FRAME || lowShare <= SUSPICIOUS_LOW_SCORE_SHARE) return undefined;
  return `the model looks wrong for this footage: ${perFrame.toFixed(0)} boxes per frame, ${(lowShare * 100).toFixed(0)} % of them scoring below 0.3; check the model (--model, DETECT_MODEL_PATH), its layout and class map, or raise the score threshold`;
}
