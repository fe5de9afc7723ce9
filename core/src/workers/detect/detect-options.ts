import { PolyvisionError } from '@polyvision/shared';
import { z } from 'zod';
import type { ModelLayout } from './decode/layout.ts';
import type { InputSpec } from './letterbox.ts';
import type { ExecutionProvider } from './model/open-session.ts';
import type { PrecisionPreference } from './model/precision.ts';
import type { ModelSource } from './model/resolve-model.ts';
import type { TilingOptions } from './tiling.ts';

/** What a detection means on the pitch. */
export const DETECTION_CLASSES = ['player', 'ball', 'referee', 'goalkeeper'] as const;
export type DetectionClass = (typeof DETECTION_CLASSES)[number];

/** Options of the detector. */
export interface DetectOptions {
  /** The ONNX model: `{path}` or `{url, sha256, cacheDir}`. */
  model: ModelSource;
  /** Version label; part of the stage's idempotency key. */
  modelVersion: string;
  /** Output layout. @defaultValue 'auto' (recognised from the output shape) */
  layout?: ModelLayout | 'auto';
  /** YOLOX exports with the grid already decoded. @defaultValue false */
  yoloxDecoded?: boolean;
  /** Input size for models whose input is dynamic. @defaultValue 640 */
  inputSize?: number;
  /** Tensor conventions; defaults follow the layout (YOLOX: BGR 0–255 top-left; YOLOv8: RGB 0–1 centred). */
  input?: Partial<Pick<InputSpec, 'channelOrder' | 'valueScale' | 'padValue' | 'placement'>>;
  /** Model class index → meaning; classes not listed are ignored. @defaultValue `{0: 'player', 32: 'ball'}` (COCO) */
  classMap?: Record<number, DetectionClass>;
  /**
   * Minimum score kept for classes without a floor in `classScoreFloors` (low, since the tracker's
   * second association uses weak boxes). @defaultValue 0.1
   */
  scoreThreshold?: number;
  /**
   * Per-class minimum scores, e.g. from the model card (`model/model-card.ts`: people at the tracker's
   * `low`, the ball at its `ball` score). A person's score is the merged score of the person classes
   * (`decode/cell-score.ts`). Classes not listed use `scoreThreshold`. @defaultValue `{}`
   */
  classScoreFloors?: Partial<Record<DetectionClass, number>>;
  /**
   * How a cell's person score is made from the person classes' probabilities: `noisy-or`
   * `1 − ∏(1 − p_class)` (`decode/cell-score.ts`), or `max` (the best role alone, as before
   * player-detector 2.1; for baselines). @defaultValue 'noisy-or'
   */
  personScore?: 'noisy-or' | 'max';
  /**
   * Percentile of confident person heights the tiling first pass takes as the people's height
   * (low, so near people do not pull it up; 50 = the median, the rule before). @defaultValue 25
   */
  personHeightPercentile?: number;
  /**
   * Score from which a person box counts as confident for the tiling first pass (its height estimate),
   * e.g. the model card's tracker `high`. @defaultValue 0.4
   */
  confidentScore?: number;
  /** IoU above which class-wise NMS drops a box. @defaultValue 0.45 */
  nmsIouThreshold?: number;
  /**
   * Intersection over the smaller box above which NMS drops a box inside (or around) a better one of
   * its group (`classWiseNms`): a second box on one person. `1`: off. @defaultValue 0.8
   */
  nmsContainmentThreshold?: number;
  /** @defaultValue 300 */
  maxDetectionsPerFrame?: number;
  /**
   * For a model whose input height and width are symbolic (YOLOv8 layout): infer each tile at its own
   * letterboxed size rounded up to 32 px instead of the nominal input (`DetectPlan.inputWidth`).
   * `false`: always the nominal size (the baseline of bench/detect/fitted-input.ts). @defaultValue true
   */
  fitInputToTiles?: boolean;
  /**
   * With a fitted input (`fitInputToTiles`) and tiles chosen by object scale: infer each row of tiles
   * as one strip across the frame, at the tiles' scale — the same magnification, without the
   * columns' overlap inferred twice or a person cut at a tile seam. Needs the model to run wider
   * than its nominal input (probed when the session opens). `false`: tiles as planned (the
   * baseline of bench/detect/tile-strips.ts). @defaultValue true
   */
  tileStrips?: boolean;
  /**
   * Tiling by object scale (`tiling.ts`). @defaultValue `{mode: 'auto', overlapFraction: 0.15, maxTiles: 16, maxUpscale: 2}`.
   * The older `{columns: 'auto'}` means `mode: 'auto'`, `{columns: n}` `mode: 'grid'`.
   */
  tiling?: Partial<Omit<TilingOptions, 'columns'>> & { columns?: number | 'auto' };
  /** Images per inference for models with a dynamic batch axis (fixed-batch models use theirs). @defaultValue 4 */
  batchSize?: number;
  /** @defaultValue 'auto' (CUDA where it loads, else CPU) */
  executionProvider?: ExecutionProvider | 'auto';
  /**
   * Numeric precision (`model/precision.ts`): `auto` runs the model card's int8 rendition on the CPU
   * (static quantization of the backbone, train/quantize.py: the detect stage ×0.55–0.58 CPU, the same
   * people on real and synthetic frames — bench/README.md) and the float model on CUDA; `fp32` always the
   * float model; `int8` the rendition everywhere (an error when the model has none). The version label
   * (`modelVersion`) stays: the detections header's `model.precision` and `model.sha256` say which file
   * ran. @defaultValue 'auto'
   */
  precision?: PrecisionPreference;
  /**
   * Test-time augmentation (`flip-fusion.ts`): `flip` infers every tile a second time mirrored and fuses the two
   * passes by weighted boxes fusion — on the real validation frames people recall at precision 0.95 0.79 → 0.86,
   * AP50 0.924 → 0.940 (bench/README.md § flip TTA) — for twice the inference: meant for GPU workers.
   * @defaultValue 'none'
   */
  testTimeAugmentation?: 'none' | 'flip';
  /**
   * The verifiers (`verify/verifier.ts`): `auto` rescores and moves every person and ball box with the
   * model card's person and ball verifiers when the card has them (player-detector 3.3: real people recall
   * at precision 0.95 0.79 → 0.94; 3.4: the ball's); `off` writes the detector's own scores and boxes.
   * @defaultValue 'auto'
   */
  verifier?: 'auto' | 'off';
  /** onnxruntime intra-op threads; onnxruntime's default when absent. */
  intraOpNumThreads?: number;
  /**
   * Whether onnxruntime's intra-op threads spin (busy-wait) for work between operators instead of
   * sleeping (`session.intra_op.allow_spinning`, onnxruntime_session_options_config_keys.h;
   * onnxruntime's own default is to spin). Spinning buys latency with CPU that a shared host's other
   * processes need: off, detect on a 4 s segment alone takes ×0.79–0.90 the CPU (less on a busy host),
   * and two detect processes on 2 cores are both done in ×0.77–0.79 the time (bench/README.md). @defaultValue false
   */
  threadSpinning?: boolean;
}

/** {@link DetectOptions} with every default filled in. */
export type CompiledDetectOptions = Required<Omit<DetectOptions, 'input' | 'intraOpNumThreads' | 'tiling'>> & {
  input: DetectOptions['input'];
  intraOpNumThreads: number | undefined;
  tiling: TilingOptions;
};

export const DETECT_DEFAULTS = Object.freeze({
  layout: 'auto',
  yoloxDecoded: false,
  inputSize: 640,
  classMap: Object.freeze({ 0: 'player', 32: 'ball' }) as Record<number, DetectionClass>,
  scoreThreshold: 0.1,
  classScoreFloors: Object.freeze({}) as Partial<Record<DetectionClass, number>>,
  confidentScore: 0.4,
  personScore: 'noisy-or',
  personHeightPercentile: 25,
  nmsIouThreshold: 0.45,
  nmsContainmentThreshold: 0.8,
  fitInputToTiles: true,
  tileStrips: true,
  maxDetectionsPerFrame: 300,
  tiling: Object.freeze({
    mode: 'auto',
    columns: 1,
    rows: 1,
    overlapFraction: 0.15,
    maxTiles: 16,
    maxUpscale: 2,
  }) as TilingOptions,
  batchSize: 4,
  executionProvider: 'auto',
  precision: 'auto',
  testTimeAugmentation: 'none',
  verifier: 'auto',
  threadSpinning: false,
} as const);

const schema = z.object({
  model: z.union([
    z.object({ path: z.string().min(1), sha256: z.string().optional() }),
    z.object({
      url: z.url(),
      sha256: z.string().regex(/^[0-9a-fA-F]{64}$/),
      cacheDir: z.string().min(1),
      timeoutMs: z.number().int().positive().optional(),
    }),
  ]),
  modelVersion: z.string().min(1),
  layout: z.enum(['auto', 'yolov8', 'yolox']),
  yoloxDecoded: z.boolean(),
  inputSize: z.number().int().min(32).max(8192),
  input: z
    .object({
      channelOrder: z.enum(['bgr', 'rgb']).optional(),
      valueScale: z.number().positive().optional(),
      padValue: z.number().min(0).max(255).optional(),
      placement: z.enum(['top-left', 'center']).optional(),
    })
    .optional(),
  classMap: z
    .record(z.string().regex(/^\d+$/), z.enum(['player', 'ball', 'referee', 'goalkeeper']))
    .refine((m) => Object.keys(m).length > 0, 'at least one class'),
  scoreThreshold: z.number().min(0).max(1),
  classScoreFloors: z.partialRecord(z.enum(DETECTION_CLASSES), z.number().min(0).max(1)),
  confidentScore: z.number().min(0).max(1),
  personScore: z.enum(['noisy-or', 'max']),
  personHeightPercentile: z.number().min(1).max(99),
  nmsIouThreshold: z.number().min(0).max(1),
  nmsContainmentThreshold: z.number().gt(0).max(1),
  fitInputToTiles: z.boolean(),
  tileStrips: z.boolean(),
  maxDetectionsPerFrame: z.number().int().positive(),
  tiling: z.object({
    mode: z.enum(['auto', 'off', 'grid']),
    columns: z.number().int().min(1).max(64),
    rows: z.number().int().min(1).max(64),
    overlapFraction: z.number().min(0).lt(0.5),
    personHeightPx: z.number().min(2).max(4000).optional(),
    modelPersonHeightPx: z.number().min(2).max(4000).optional(),
    maxTiles: z.number().int().min(1).max(256),
    maxUpscale: z.number().min(0.1).max(8),
  }),
  batchSize: z.number().int().min(1).max(256),
  executionProvider: z.enum(['auto', 'cpu', 'cuda']),
  precision: z.enum(['auto', 'fp32', 'int8']),
  testTimeAugmentation: z.enum(['none', 'flip']),
  verifier: z.enum(['auto', 'off']),
  intraOpNumThreads: z.number().int().positive().optional(),
  threadSpinning: z.boolean(),
});

/**
 * Fills defaults and validates detector options.
 *
 * @throws PolyvisionError `detect_options_invalid` (not retriable) naming the bad field.
 */
export function compileDetectOptions(options: DetectOptions): CompiledDetectOptions {
  const merged = {
    ...DETECT_DEFAULTS,
    ...options,
    tiling: compileTiling(options.tiling),
    classMap: options.classMap ?? DETECT_DEFAULTS.classMap,
    classScoreFloors: options.classScoreFloors ?? DETECT_DEFAULTS.classScoreFloors,
    confidentScore: options.confidentScore ?? DETECT_DEFAULTS.confidentScore,
    personScore: options.personScore ?? DETECT_DEFAULTS.personScore,
    personHeightPercentile: options.personHeightPercentile ?? DETECT_DEFAULTS.personHeightPercentile,
  };
  const result = schema.safeParse(merged);
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new PolyvisionError(
      'detect_options_invalid',
      `detect option ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`,
    );
  }
  const parsed = result.data;
  return {
    ...parsed,
    classMap: Object.fromEntries(Object.entries(parsed.classMap).map(([k, v]) => [Number(k), v])),
    input: parsed.input,
    intraOpNumThreads: parsed.intraOpNumThreads,
  } as CompiledDetectOptions;
}

/** Merges tiling options over the defaults, mapping the older `columns: 'auto' | n` form to a mode. */
function compileTiling(tiling: DetectOptions['tiling']): unknown {
  const { columns, ...rest } = tiling ?? {};
  const mode = rest.mode ?? (typeof columns === 'number' ? 'grid' : 'auto');
  return {
    ...DETECT_DEFAULTS.tiling,
    ...rest,
    mode,
    ...(typeof columns === 'number' ? { columns } : {}),
  };
}

/**
 * Frames per second the stage analyses when neither `DETECT_ANALYSIS_FPS` nor the task says (capped
 * at the source rate): the lowest rate at which tracks hold, and the demo's. On the synthetic demo
 * clip with the default detector and the track stage as shipped, people HOTA 27 at 3 fps, 43 at 5,
 * 77.5 at 10, 77.9 at 12.5 and 77.6 at every source frame (25 fps: 2.5× detect's cost for nothing;
 * bench/README.md § track, `bench/workers/track-quality.ts`).
 */
export const DEFAULT_ANALYSIS_FPS = 10;
