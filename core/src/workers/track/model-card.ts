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
const cardSchema = z.union([
  z.object({ tracker: thresholdsSchema }).transform((c) => c.tracker),
  z.object({ tracker_thresholds: thresholdsSchema }).transform((c) => c.tracker_thresholds),
]);

/**
 * The tracker thresholds of a detector's model card: `tracker: {high, low, ball?}` (or
 * `tracker_thresholds`, as the training's evaluate.py names it) at the top of the `metrics.json`
 * beside the ONNX file (core/models/player-detector/metrics.json); `ball` is the lowest ball score
 * worth tracking. They apply only to detections of
 * that very model, so the model file's sha256 must equal `detectionsModelSha256` (the detections
 * header's `model.sha256`).
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
    if (!card.success || card.data.low >= card.data.high) return null;
    const hash = createHash('sha256');
    for await (const chunk of createReadStream(modelPath)) hash.update(chunk as Buffer);
    return hash.digest('hex') === detectionsModelSha256.toLowerCase() ? card.data : null;
  } catch {
    return null;
  }
}
