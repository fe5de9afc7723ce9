import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { envEnum, loadConfig, PolyvisionError } from '@polyvision/shared';
import { z } from 'zod';
import type { StageHandler } from '../runtime/stage-handler.ts';
import type { StageHandlerContext } from '../runtime/stage-registry.ts';
import { DETECTION_CLASSES, type DetectionClass } from './detect-options.ts';
import { Detector } from './detector.ts';
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
  DETECT_MODEL_VERSION: z.string().min(1).max(128).default('player-detector-2'),
  DETECT_MODEL_LAYOUT: envEnum(['auto', 'yolov8', 'yolox'] as const, 'auto'),
  DETECT_CLASS_MAP: classMap('0:player,1:goalkeeper,2:referee,3:ball'),
  DETECT_ANALYSIS_FPS: optionalNumber(0.1, 240),
  DETECT_SCORE_THRESHOLD: optionalNumber(0, 1),
  DETECT_BATCH_SIZE: optionalNumber(1, 256),
  DETECT_TILE_COLUMNS: z
    .string()
    .regex(/^(auto|\d+)$/, { message: 'auto or a whole number' })
    .default('auto'),
  DETECT_EXECUTION_PROVIDER: envEnum(['auto', 'cpu', 'cuda'] as const, 'auto'),
});

/**
 * Builds the detect stage: opens the detector once (model from
 * `DETECT_MODEL_URL`+`DETECT_MODEL_SHA256` or `DETECT_MODEL_PATH`, default the
 * repository's player detector), then per task reads the panorama (input
 * kind `panorama`, else `camera`), writes `detections.jsonl` (kind `detections`).
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
  const model =
    env.DETECT_MODEL_URL && env.DETECT_MODEL_SHA256
      ? { url: env.DETECT_MODEL_URL, sha256: env.DETECT_MODEL_SHA256, cacheDir: env.DETECT_MODEL_CACHE_DIR }
      : { path: env.DETECT_MODEL_PATH ?? DEFAULT_MODEL_PATH };
  const detector = await Detector.open({
    model,
    modelVersion: env.DETECT_MODEL_VERSION,
    layout: env.DETECT_MODEL_LAYOUT,
    classMap: env.DETECT_CLASS_MAP,
    executionProvider: env.DETECT_EXECUTION_PROVIDER,
    tiling: { columns: env.DETECT_TILE_COLUMNS === 'auto' ? 'auto' : Number(env.DETECT_TILE_COLUMNS) },
    ...(env.DETECT_SCORE_THRESHOLD !== undefined ? { scoreThreshold: env.DETECT_SCORE_THRESHOLD } : {}),
    ...(env.DETECT_BATCH_SIZE !== undefined ? { batchSize: env.DETECT_BATCH_SIZE } : {}),
  });
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
        return {
          outputs: [ref],
          stats: {
            frames: summary.frames,
            detections: summary.detections,
            frames_per_second: Math.round(summary.framesPerSecond * 10) / 10,
          },
        };
      }, ioConfig.workDir);
    },
    close: () => detector.close(),
  };
}
