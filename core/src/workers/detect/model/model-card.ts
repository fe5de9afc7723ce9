import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import type { DetectionClass } from '../detect-options.ts';
import type { VerifierWindowSpec } from '../verify/window.ts';

/** Score thresholds a model card gives the tracker, on the scores the detect stage writes. */
export interface TrackerThresholds {
  /** ByteTrack's first association and new tracks: people scoring ≥ high. */
  high: number;
  /** ByteTrack's second association: people scoring in [low, high). */
  low: number;
  /** Lowest ball score worth a ball-track candidate. */
  ball?: number;
}

/** What the detect stage takes from a model card. */
export interface ModelCard {
  tracker: TrackerThresholds;
  /**
   * How the card's person thresholds were computed: `noisy-or` = on the merged person score
   * `1 − ∏(1 − p_class)` the detect stage writes (`decode/cell-score.ts`); `max` = on the best
   * role's score (cards before player-detector 2.1).
   */
  personScore: 'noisy-or' | 'max';
  /** Per-class minimum scores for the detector ({@link scoreFloorsOf}). */
  scoreFloors: Partial<Record<DetectionClass, number>>;
  /**
   * The model's nominal input (`input: [1, 3, H, W]`): the size the tiling plans for when the ONNX input's
   * height and width are symbolic.
   */
  input?: { width: number; height: number };
  /** Other precisions of the same weights in the card's folder (`renditions`, train/quantize.py). */
  renditions: ModelRendition[];
  /**
   * The person verifier that rescores this model's person boxes (`verifier`, train/verifier.py); when
   * present, `tracker` holds the thresholds on the verified score the stage writes.
   */
  verifier?: ModelVerifier & { unverified: TrackerThresholds };
  /**
   * The ball verifier that rescores this model's ball boxes (`ball_verifier`, train/verifier.py
   * `--target ball`); when present, `tracker.ball` is on the verified ball score.
   */
  ballVerifier?: ModelVerifier;
}

/** A verifier beside the model (`verify/verifier.ts`): the person's or the ball's. */
export interface ModelVerifier {
  /** File name beside the card (`person-verifier.onnx`, `ball-verifier.onnx`). */
  file: string;
  /** sha256 of the verifier's file. */
  sha256: string;
  /** sha256 of the float detector whose candidates it was trained on: another model's card is stale. */
  detectorSha256: string;
  /** Fused score = detector^(1 − weight) · verifier^weight. */
  weight: number;
  window: VerifierWindowSpec;
  /**
   * The detector score from which candidates are verified (the verifier's cost is per window): for people
   * the highest that keeps the verified recall at precision 0.9 and 0.95 of verifying every candidate on
   * the real validation matches (train/evaluate.py `candidate_floor`), for the ball its training's floor.
   */
  candidateFloor: number;
  /**
   * The tracker's thresholds on the detector's own scores, for detections written without the verifiers
   * (the person verifier's entry; people and ball).
   */
  unverified?: TrackerThresholds;
}

/** A rendition of the model the card describes: the same weights at another precision, in the same folder. */
export interface ModelRendition {
  /** File name beside the card (`player-detector-int8.onnx`). */
  file: string;
  precision: 'int8';
  /** sha256 of the rendition's file: detections carrying it are this model's. */
  sha256: string;
  /** sha256 of the float model it was made from: a rendition of other weights is stale. */
  sourceSha256: string;
}

const trackerSchema = z
  .object({
    high: z.number().min(0).max(1),
    low: z.number().min(0).max(1),
    ball: z.number().min(0).max(1).optional(),
    person_score: z.enum(['noisy-or', 'max']).optional(),
  })
  .refine((t) => t.low <= t.high, 'low must not exceed high');
const thresholdsSchema = z.object({
  high: z.number().min(0).max(1),
  low: z.number().min(0).max(1),
  ball: z.number().min(0).max(1).optional(),
});
const sha256Schema = z.string().regex(/^[0-9a-f]{64}$/);
const verifierSchema = z.object({
  file: z.string().regex(/^[\w.-]+\.onnx$/),
  sha256: sha256Schema,
  detector_sha256: sha256Schema,
  weight: z.number().gt(0).lt(1),
  window: z.object({
    width: z.number().int().min(4).max(512),
    height: z.number().int().min(4).max(512),
    context: z.number().positive().max(10),
    // Cards before the ball verifier (player-detector 3.3) have no floor: 1 px, as their training.
    min_extent: z.number().positive().max(512).default(1),
  }),
  candidate_floor: z.number().min(0).max(1),
});
const cardSchema = z.object({
  tracker: trackerSchema,
  // A malformed `input` is ignored (the thresholds still apply).
  input: z
    .tuple([z.number(), z.literal(3), z.number().int().min(32), z.number().int().min(32)])
    .optional()
    .catch(undefined),
  // Malformed renditions are ignored (the float model still runs).
  renditions: z
    .array(
      z.object({
        file: z.string().regex(/^[\w.-]+\.onnx$/),
        precision: z.literal('int8'),
        sha256: sha256Schema,
        source_sha256: sha256Schema,
      }),
    )
    .catch([])
    .default([]),
  // A malformed verifier is ignored (the detector's own scores and the card's unverified thresholds apply).
  verifier: verifierSchema.extend({ tracker_unverified: thresholdsSchema }).optional().catch(undefined),
  ball_verifier: verifierSchema.optional().catch(undefined),
});

/**
 * Per-class score floors from a card's tracker thresholds: people (player, goalkeeper, referee) at
 * `low` — the tracker drops anything below it, so nothing it uses is lost — and the ball at `ball`
 * when the card has one (else the detector's global threshold applies to the ball).
 */
export function scoreFloorsOf(tracker: TrackerThresholds): Partial<Record<DetectionClass, number>> {
  return {
    player: tracker.low,
    goalkeeper: tracker.low,
    referee: tracker.low,
    ...(tracker.ball !== undefined ? { ball: tracker.ball } : {}),
  };
}

/**
 * The card's tracker thresholds for the scores the detect stage writes: on the verified scores (`tracker`)
 * when its verifiers run (`verifier: 'auto'`), else on the detector's own (`verifier.unverified`, people
 * and ball; `tracker` for a card without a verifier).
 */
export function cardThresholds(card: ModelCard, verifier: 'auto' | 'off'): TrackerThresholds {
  return verifier === 'off' ? (card.verifier?.unverified ?? card.tracker) : card.tracker;
}

/**
 * Reads the model card of a local model: `tracker: {high, low, ball?, person_score?}`, `input`,
 * `renditions`, `verifier` (train/verifier.py: file, sha256, detector_sha256, weight, window,
 * candidate_floor, tracker_unverified) and `ball_verifier` (the same but tracker_unverified) in the
 * `metrics.json` beside the ONNX file (core/models/player-detector/metrics.json, written by the
 * training's `evaluate.py`; thresholds derived on held-out real matches, MODEL_CARD.md).
 *
 * @returns null when there is no `metrics.json` beside the model or it has no valid `tracker`
 *   (a user's model: the detector keeps its global threshold). Never throws.
 */
export async function readModelCard(modelPath: string): Promise<ModelCard | null> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(join(dirname(modelPath), 'metrics.json'), 'utf8'));
  } catch {
    return null;
  }
  const parsed = cardSchema.safeParse(json);
  if (!parsed.success) return null;
  const { person_score, ...tracker } = parsed.data.tracker;
  const input = parsed.data.input;
  const v = parsed.data.verifier;
  const ball = parsed.data.ball_verifier;
  return {
    tracker,
    ...(v ? { verifier: { ...modelVerifier(v), unverified: v.tracker_unverified } } : {}),
    ...(ball ? { ballVerifier: modelVerifier(ball) } : {}),
    personScore: person_score ?? 'max',
    scoreFloors: scoreFloorsOf(tracker),
    ...(input ? { input: { width: input[3], height: input[2] } } : {}),
    renditions: parsed.data.renditions.map(({ source_sha256, ...r }) => ({ ...r, sourceSha256: source_sha256 })),
  };
}

function modelVerifier(v: z.infer<typeof verifierSchema>): ModelVerifier {
  return {
    file: v.file,
    sha256: v.sha256,
    detectorSha256: v.detector_sha256,
    weight: v.weight,
    window: {
      widthPx: v.window.width,
      heightPx: v.window.height,
      context: v.window.context,
      minExtentPx: v.window.min_extent,
    },
    candidateFloor: v.candidate_floor,
  };
}
