import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { z } from 'zod';

const thresholdsSchema = z.object({
  high: z.number().min(0).max(1),
  low: z.number().min(0).max(1),
  ball: z.number().min(0).max(1).optional(),
});
// The card's other renditions of the same weights (detect/model/model-card.ts); malformed ones are ignored.
const renditionsSchema = z
  .array(z.object({ sha256: z.string(), source_sha256: z.string() }))
  .catch([])
  .default([]);
// The card's person verifier (detect/verify): `tracker` is on its fused score; `tracker_unverified` on the
// detector's own. A malformed entry is ignored.
const verifierSchema = z
  .object({ sha256: z.string(), tracker_unverified: thresholdsSchema })
  .optional()
  .catch(undefined);
// The card's ball verifier: `tracker.ball` is on its fused score; the person verifier's
// `tracker_unverified.ball` on the detector's own.
const ballVerifierSchema = z.object({ sha256: z.string() }).optional().catch(undefined);
const cardSchema = z.union([
  z
    .object({
      tracker: thresholdsSchema,
      renditions: renditionsSchema,
      verifier: verifierSchema,
      ball_verifier: ballVerifierSchema,
    })
    .transform((c) => ({ ...c, thresholds: c.tracker })),
  z
    .object({
      tracker_thresholds: thresholdsSchema,
      renditions: renditionsSchema,
      verifier: verifierSchema,
      ball_verifier: ballVerifierSchema,
    })
    .transform((c) => ({ ...c, thresholds: c.tracker_thresholds })),
]);

/** What a detections header says of the model that wrote it (`model.sha256`, `model.verifier`, `model.ballVerifier`). */
export interface DetectionsModel {
  sha256: string;
  verifier?: { sha256: string };
  ballVerifier?: { sha256: string };
}

/**
 * The tracker thresholds of a detector's model card: `tracker: {high, low, ball?}` (or
 * `tracker_thresholds`, as the training's evaluate.py names it) at the top of the `metrics.json`
 * beside the ONNX file (core/models/player-detector/metrics.json); `ball` is the lowest ball score
 * worth tracking. They apply only to detections of
 * that very model, so `detectionsModelSha256` (the detections header's `model.sha256`) must equal the
 * model file's sha256, or that of a rendition the card lists (`renditions`: the int8 rendition CPU
 * workers run, train/quantize.py) made from this model file. When the card has a person verifier
 * (`verifier`, train/verifier.py), detections it rescored (`detectionsModel.verifier.sha256` is the card's)
 * get `tracker`'s people thresholds, others (`DETECT_VERIFIER=off`, older files) the card's
 * `verifier.tracker_unverified`; likewise the ball's with the card's `ball_verifier` (player-detector 3.4).
 *
 * @returns null when the card or the model is missing, the card has no valid `tracker`, or the
 *   detections come from another model. Never throws.
 */
export async function modelCardThresholds(
  modelPath: string,
  detectionsModel: DetectionsModel,
): Promise<{ high: number; low: number; ball?: number } | null> {
  try {
    const card = cardSchema.safeParse(JSON.parse(await readFile(join(dirname(modelPath), 'metrics.json'), 'utf8')));
    if (!card.success || card.data.thresholds.low >= card.data.thresholds.high) return null;
    const hash = createHash('sha256');
    for await (const chunk of createReadStream(modelPath)) hash.update(chunk as Buffer);
    const modelSha256 = hash.digest('hex');
    const detections = detectionsModel.sha256.toLowerCase();
    const ofThisModel =
      detections === modelSha256 ||
      card.data.renditions.some((r) => r.sha256 === detections && r.source_sha256 === modelSha256);
    if (!ofThisModel) return null;
    const { verifier, ball_verifier: ballVerifier, thresholds } = card.data;
    // Scores a card's verifier fused get `tracker`; the detector's own scores `tracker_unverified`.
    const unverified = verifier?.tracker_unverified;
    const peopleVerified = !verifier || detectionsModel.verifier?.sha256.toLowerCase() === verifier.sha256;
    const ballVerified = !ballVerifier || detectionsModel.ballVerifier?.sha256.toLowerCase() === ballVerifier.sha256;
    const people = peopleVerified || !unverified ? thresholds : unverified;
    if (people.low >= people.high) return null;
    const ball = ballVerified || !unverified ? thresholds.ball : unverified.ball;
    return { high: people.high, low: people.low, ...(ball !== undefined ? { ball } : {}) };
  } catch {
    return null;
  }
}
