import { dirname, join } from 'node:path';
import type { Logger } from '@polyvision/shared';
import { PolyvisionError, silentLogger } from '@polyvision/shared';
import { type ModelCard, readModelCard } from './model-card.ts';
import { type ResolvedModel, sha256OfFile } from './resolve-model.ts';

/** Numeric precision of the model file a session runs. */
export type ModelPrecision = 'fp32' | 'int8';

/**
 * Which precision the detector runs: `fp32` the model file itself; `int8` its int8 rendition (an error
 * when it has none); `auto` the int8 rendition where the session runs on the CPU and the model card
 * lists a valid one, else the model itself (CUDA always runs the float model).
 */
export type PrecisionPreference = ModelPrecision | 'auto';

/** A model file to open and what it is. */
export interface PrecisionModel {
  path: string;
  sha256: string;
  precision: ModelPrecision;
}

/**
 * Finds the int8 rendition of a resolved model for `preference` (train/quantize.py writes it and
 * records it in the model card, `renditions` in metrics.json beside the model). A rendition counts
 * only when it was made from this very model (`source_sha256` = the model's sha256) and its file has
 * the card's sha256; otherwise `auto` logs why and keeps the float model. `options.card`: the model's
 * card when the caller has read it already (`readModelCard`; null: it has none), else it is read here.
 *
 * @returns null for `fp32`, or for `auto` when there is no valid rendition.
 * @throws PolyvisionError `detect_options_invalid` (not retriable) when `int8` is demanded and the
 *   model has no valid int8 rendition (the message says which check failed).
 */
export async function int8Rendition(
  model: ResolvedModel,
  preference: PrecisionPreference,
  options: { logger?: Logger; card?: ModelCard | null } = {},
): Promise<PrecisionModel | null> {
  if (preference === 'fp32') return null;
  const logger = options.logger ?? silentLogger;
  const refuse = (why: string): null => {
    if (preference === 'int8') {
      throw new PolyvisionError('detect_options_invalid', `precision int8 asked for, but ${why}`);
    }
    logger.warn({ modelPath: model.path, reason: why }, 'int8 rendition not used; running the float model');
    return null;
  };
  const card = options.card === undefined ? await readModelCard(model.path) : options.card;
  const rendition = card?.renditions.find((r) => r.precision === 'int8');
  if (!rendition) {
    // A model without a card (a user's model): nothing to warn about under `auto`.
    if (preference === 'auto') return null;
    return refuse(`the model card beside ${model.path} lists no int8 rendition (train/quantize.py writes one)`);
  }
  if (rendition.sourceSha256 !== model.sha256) {
    return refuse(
      `the card's int8 rendition ${rendition.file} was made from another model (stale: re-run quantize.py)`,
    );
  }
  const path = join(dirname(model.path), rendition.file);
  const sha256 = await sha256OfFile(path).catch(() => null);
  if (sha256 === null) return refuse(`the card's int8 rendition ${path} cannot be read`);
  if (sha256 !== rendition.sha256) return refuse(`${path} does not have the sha256 its model card gives`);
  return { path, sha256, precision: 'int8' };
}
