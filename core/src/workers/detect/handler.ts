import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { envEnum, loadConfig, PolyvisionError } from '@polyvision/shared';
import { z } from 'zod';
import type { StageHandler } from '../runtime/stage-handler.ts';
import type { StageHandlerContext } from '../runtime/stage-registry.ts';
import { SEGMENT_MIN_CLIP_MS } from '../segment/min-clip.ts';
import { DEFAULT_ANALYSIS_FPS, DETECTION_CLASSES, type DetectionClass, type DetectOptions } from './detect-options.ts';
import { Detector } from './detector.ts';
import { cardThresholds, readModelCard, scoreFloorsOf } from './model/model-card.ts';
import { runDetect } from './run-detect.ts';
import {
  type ArtifactIo,
  findInput,
  LocalArtifactIo,
  outputKey,
  stageIoConfig,
  throttle,
  withWorkDir,
} from './stage-io.ts';
import { parseTilingSetting } from './tiling.ts';

/**
 * The default model's training scale for tiling: the height (px of its 1280×720 input) from which
 * it sees people well — the 10th percentile of person boxes in its training rigs (20 px; median 28,
 * 90th percentile 46; measured on the demo rig's ground truth, core/README.md § detect).
 */
export const DEFAULT_MODEL_PERSON_HEIGHT_PX = 20;

/** The tiling options of the DETECT_TILING / DETECT_TILE_COLUMNS / DETECT_*PERSON_HEIGHT_PX variables. */
export function tilingFromEnv(env: {
  DETECT_TILING?: string;
  DETECT_TILE_COLUMNS?: string;
  DETECT_PERSON_HEIGHT_PX?: number;
  DETECT_MODEL_PERSON_HEIGHT_PX?: number;
}): NonNullable<DetectOptions['tiling']> {
  const legacy = env.DETECT_TILE_COLUMNS;
  const setting = env.DETECT_TILING ?? (legacy && legacy !== 'auto' ? `${legacy}x1` : 'auto');
  const parsed = parseTilingSetting(setting);
  return {
    ...parsed,
    ...(env.DETECT_PERSON_HEIGHT_PX !== undefined && parsed.mode === 'auto'
      ? { personHeightPx: env.DETECT_PERSON_HEIGHT_PX }
      : {}),
    ...(env.DETECT_MODEL_PERSON_HEIGHT_PX !== undefined
      ? { modelPersonHeightPx: env.DETECT_MODEL_PERSON_HEIGHT_PX }
      : {}),
  };
}

/** The repository's default model (trained on real and synthetic football frames; core/models/player-detector/MODEL_CARD.md). */
export const DEFAULT_MODEL_PATH = fileURLToPath(
  new URL('../../../models/player-detector/player-detector.onnx', import.meta.url),
);

const classMap = (defaultValue: string) =>
  z
    .string()
    .regex(/^\d+:[a-z]+(,\d+:[a-z]+)*$/, { message: 'pairs like 0:player,32:ball' })
    .default(defaultValue)
    .transform((text, ctx) => {
      const map: Record<number, DetectionClass> = {};
      for (const pair of text.split(',')) {
        const [id, name] = pair.split(':') as [string, string];
        if (!(DETECTION_CLASSES as readonly string[]).includes(name)) {
          ctx.addIssue({ code: 'custom', message: `class ${name} is not one of ${DETECTION_CLASSES.join(', ')}` });
          return z.NEVER;
        }
        map[Number(id)] = name as DetectionClass;
      }
      return map;
    });

const optionalNumber = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+(\.\d+)?$/, { message: `a number in [${min}, ${max}]` })
    .transform(Number)
    .pipe(z.number().min(min).max(max))
    .optional();

/** Environment of the detect stage (documented in core/README.md, "Workers"). */
export const detectEnvSchema = z.object({
  DETECT_MODEL_PATH: z.string().optional(),
  DETECT_MODEL_URL: z.url().optional(),
  DETECT_MODEL_SHA256: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, { message: '64 hex digits' })
    .optional(),
  DETECT_MODEL_CACHE_DIR: z.string().default('.cache/models'),
  DETECT_MODEL_VERSION: z.string().min(1).max(128).default('player-detector-3.4'),
  DETECT_MODEL_LAYOUT: envEnum(['auto', 'yolov8', 'yolox'] as const, 'auto'),
  DETECT_CLASS_MAP: classMap('0:player,1:goalkeeper,2:referee,3:ball'),
  /** Capped at the source rate: 240 analyses every frame. */
  DETECT_ANALYSIS_FPS: optionalNumber(0.1, 240).default(DEFAULT_ANALYSIS_FPS),
  DETECT_SCORE_THRESHOLD: optionalNumber(0, 1),
  /** NMS: intersection over the smaller box above which a box inside a better one is dropped; 1: off. */
  DETECT_NMS_CONTAINMENT: optionalNumber(0.01, 1),
  DETECT_BATCH_SIZE: optionalNumber(1, 256),
  DETECT_TILING: z
    .string()
    .regex(/^(auto|off|\d+x\d+|\d+(\.\d+)?px)$/i, {
      message: 'auto, off, a grid like 2x1, or a person height like 60px',
    })
    .optional(),
  /** Older form of DETECT_TILING: `auto` or a column count (one row). */
  DETECT_TILE_COLUMNS: z
    .string()
    .regex(/^(auto|\d+)$/, { message: 'auto or a whole number' })
    .optional(),
  DETECT_PERSON_HEIGHT_PX: optionalNumber(2, 4000),
  DETECT_MODEL_PERSON_HEIGHT_PX: optionalNumber(2, 4000),
  DETECT_EXECUTION_PROVIDER: envEnum(['auto', 'cpu', 'cuda'] as const, 'auto'),
  /** fp32, int8 (the model card's rendition), or auto: int8 on the CPU (`DetectOptions.precision`). */
  DETECT_PRECISION: envEnum(['auto', 'fp32', 'int8'] as const, 'auto'),
  /** `flip`: every tile inferred mirrored too, the passes fused (`DetectOptions.testTimeAugmentation`). */
  DETECT_TTA: envEnum(['none', 'flip'] as const, 'none'),
  /** `off`: person and ball boxes keep the detector's own scores (`DetectOptions.verifier`). */
  DETECT_VERIFIER: envEnum(['auto', 'off'] as const, 'auto'),
  /** onnxruntime's intra-op threads busy-wait between operators (`DetectOptions.threadSpinning`). */
  DETECT_ORT_SPINNING: envEnum(['on', 'off'] as const, 'off'),
  /** Each row of scale-chosen tiles inferred as one strip (`DetectOptions.tileStrips`). */
  DETECT_TILE_STRIPS: envEnum(['on', 'off'] as const, 'on'),
  /** Measure the camera's motion between analysed frames for the tracker (`RunDetectParams.cameraMotion`). */
  DETECT_CAMERA_MOTION: envEnum(['on', 'off'] as const, 'on'),
});

/**
 * The detector options of the stage's variables (`detectEnvSchema`): the model (URL+sha256 or a
 * path, default the repository's), layout, class map, provider, tiling (the default model's 20 px
 * training scale), batch size; a local model with a model card (`metrics.json` beside it,
 * `model/model-card.ts`) gets the card's per-class score floors and confident-person score, unless
 * `DETECT_SCORE_THRESHOLD` sets one threshold for every class.
 */
export async function detectOptionsFromEnv(env: z.infer<typeof detectEnvSchema>): Promise<DetectOptions> {
  const model =
    env.DETECT_MODEL_URL && env.DETECT_MODEL_SHA256
      ? { url: env.DETECT_MODEL_URL, sha256: env.DETECT_MODEL_SHA256, cacheDir: env.DETECT_MODEL_CACHE_DIR }
      : { path: env.DETECT_MODEL_PATH ?? DEFAULT_MODEL_PATH };
  const tiling = tilingFromEnv(env);
  const isDefaultModel =
    !env.DETECT_MODEL_URL && resolve(env.DETECT_MODEL_PATH ?? DEFAULT_MODEL_PATH) === DEFAULT_MODEL_PATH;
  if (tiling.modelPersonHeightPx === undefined && isDefaultModel) {
    tiling.modelPersonHeightPx = DEFAULT_MODEL_PERSON_HEIGHT_PX;
  }
  // People at the tracker's low, the ball at its ball score (nothing the tracker uses is dropped).
  const card =
    'path' in model && model.path && env.DETECT_SCORE_THRESHOLD === undefined ? await readModelCard(model.path) : null;
  const thresholds = card && cardThresholds(card, env.DETECT_VERIFIER);
  return {
    model,
    modelVersion: env.DETECT_MODEL_VERSION,
    layout: env.DETECT_MODEL_LAYOUT,
    classMap: env.DETECT_CLASS_MAP,
    executionProvider: env.DETECT_EXECUTION_PROVIDER,
    precision: env.DETECT_PRECISION,
    testTimeAugmentation: env.DETECT_TTA,
    verifier: env.DETECT_VERIFIER,
    threadSpinning: env.DETECT_ORT_SPINNING === 'on',
    tileStrips: env.DETECT_TILE_STRIPS === 'on',
    tiling,
    ...(env.DETECT_SCORE_THRESHOLD !== undefined ? { scoreThreshold: env.DETECT_SCORE_THRESHOLD } : {}),
    ...(thresholds ? { classScoreFloors: scoreFloorsOf(thresholds), confidentScore: thresholds.high } : {}),
    ...(env.DETECT_BATCH_SIZE !== undefined ? { batchSize: env.DETECT_BATCH_SIZE } : {}),
    ...(env.DETECT_NMS_CONTAINMENT !== undefined ? { nmsContainmentThreshold: env.DETECT_NMS_CONTAINMENT } : {}),
  };
}

/**
 * Builds the detect stage (variables: `detectEnvSchema`, documented in core/README.md;
 * tiling: `DETECT_TILING` auto|off|CxR|NNpx, `DETECT_PERSON_HEIGHT_PX`,
 * `DETECT_MODEL_PERSON_HEIGHT_PX`, task `params.person_height_px`): opens the detector once (model from
 * `DETECT_MODEL_URL`+`DETECT_MODEL_SHA256` or `DETECT_MODEL_PATH`, default the
 * repository's player detector), then per task reads the panorama (input
 * kind `panorama`, else `camera`), writes `detections.jsonl` (kind `detections`).
 * Options: {@link detectOptionsFromEnv} (model card floors for a local model with a card).
 *
 * A task whose `model_version` is neither `default` nor this worker's
 * `DETECT_MODEL_VERSION` fails with `model_version_unavailable` (not
 * retriable here): the version is part of the idempotency key, so running
 * another model under its name would poison the cache.
 *
 * @throws ConfigError for bad variables; the `Detector.open` errors.
 */
export async function createStageHandler(
  context: StageHandlerContext,
  overrides: { io?: ArtifactIo } = {},
): Promise<StageHandler> {
  const env = loadConfig(detectEnvSchema, context.env);
  const ioConfig = stageIoConfig(context.env);
  const io = overrides.io ?? new LocalArtifactIo(ioConfig.artifactDir, ioConfig.storageId);
  const detector = await Detector.open(await detectOptionsFromEnv(env));
  return {
    stage: 'detect',
    async run({ task, signal, reportProgress }) {
      if (task.model_version !== 'default' && task.model_version !== detector.info.modelVersion) {
        throw new PolyvisionError(
          'model_version_unavailable',
          `task asks for detect model ${task.model_version}; this worker runs ${detector.info.modelVersion}`,
        );
      }
      const source = findInput(task, ['panorama', 'camera']);
      const analysisFps =
        typeof task.params.analysis_fps === 'number' ? task.params.analysis_fps : env.DETECT_ANALYSIS_FPS;
      return withWorkDir(async (dir) => {
        const inputPath = await io.openInput(source, dir, signal);
        const outputPath = join(dir, 'detections.jsonl');
        const summary = await runDetect({
          inputPath,
          outputPath,
          detector,
          analysisFps,
          cameraMotion: env.DETECT_CAMERA_MOTION === 'on',
          ...(task.segment ? { minDurationMs: SEGMENT_MIN_CLIP_MS } : {}),
          ...(typeof task.params.person_height_px === 'number' ? { personHeightPx: task.params.person_height_px } : {}),
          signal,
          onProgress: throttle((f) => reportProgress(f * 0.98)),
        });
        const ref = await io.writeOutput(
          {
            task,
            kind: 'detections',
            objectKey: outputKey(task, 'detections.jsonl'),
            localPath: outputPath,
            contentType: 'application/x-ndjson',
          },
          signal,
        );
        reportProgress(1);
        // Only a height this run measured (its first pass), not one it was given.
        const tiling = summary.header.tiling;
        const personHeightPx = tiling?.source === 'estimated' ? tiling.personHeightPx : undefined;
        return {
          outputs: [ref],
          stats: {
            frames: summary.frames,
            detections: summary.detections,
            frames_per_second: Math.round(summary.framesPerSecond * 10) / 10,
            tiles: summary.header.model.tiles,
            warnings: summary.warnings.length,
            // The person height this run measured: the orchestrator hands it to the match's later
            // segments, which then skip the first pass and keep one tile plan (match-dispatch.ts).
            ...(personHeightPx !== undefined ? { person_height_px: Math.round(personHeightPx * 10) / 10 } : {}),
          },
        };
      }, ioConfig.workDir);
    },
    close: () => detector.close(),
  };
}
