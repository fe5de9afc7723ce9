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
const cardSchema = z.union([
  z
    .object({ tracker: thresholdsSchema, renditions: renditionsSchema })
    .transform((c) => ({ thresholds: c.tracker, renditions: c.renditions })),
  z
    .object({ tracker_thresholds: thresholdsSchema, renditions: renditionsSchema })
    .transform((c) => ({ thresholds: c.tracker_thresholds, renditions: c.renditions })),
]);

/**
 * The tracker thresholds of a detector's model card: `tracker: {high, low, ball?}` (or
 * `tracker_thresholds`, as the training's evaluate.py names it) at the top of the `metrics.json`
 * beside the ONNX file (core/models/player-detector/metrics.json); `ball` is the lowest ball score
 * worth tracking. They apply only to detections of
 * that very model, so `detectionsModelSha256` (the detections header's `model.sha256`) must equal the
 * model file's sha256, or that of a rendition the card lists (`renditions`: the int8 rendition CPU
 * workers run, train/quantize.py) made from this model file.
 *
 * @returns null when the card or the model is missing, the card has no valid `tracker`, or the
 *   detections come from another model. Never throws.
 */
export async function modelCardThresholds(
  modelPath: string,
  detectionsModelSha256: string,
): Promise<{ high: number; low: number; ball?: number } | null> {
  try {
    const card = cardSchema.safeParse(JSON.parse(await readFile(join(dirname(modelPath), 'metrics.json'), 'utf8')));
    if (!card.success || card.data.thresholds.low >= card.data.thresholds.high) return null;
    const hash = createHash('sha256');
    for await (const chunk of createReadStream(modelPath)) hash.update(chunk as Buffer);
    const modelSha256 = hash.digest('hex');
    const detections = detectionsModelSha256.toLowerCase();
    const ofThisModel =
      detections === modelSha256 ||
      card.data.renditions.some((r) => r.sha256 === detections && r.source_sha256 === modelSha256);
    return ofThisModel ? card.data.thresholds : null;
  } catch {
    return null;
  }
}
