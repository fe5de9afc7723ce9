import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_ANALYSIS_FPS } from '@polyvision/core';
import { ValidationError } from '@polyvision/shared';
import type { SampleOptions } from './sample.ts';

/** Everything `pnpm demo` was asked to do, validated. */
export interface DemoOptions {
  /** The user's camera videos; empty = the synthetic sample. */
  cameras: string[];
  /** venue.json for the user's cameras (several cameras need one). */
  calibration: string | null;
  /** pitch-points.json registering the stitched panorama to the pitch (metres). */
  pitchPoints: string | null;
  sample: SampleOptions;
  /** `out/` — the match folder goes below it. */
  outRoot: string;
  matchId: string | null;
  /** Stage variables (DETECT_*, …) for the workers. */
  stageEnv: Record<string, string | undefined>;
  /** Quota of each storage element, bytes. */
  storageCapacityBytes: number;
  /** Length of the panorama segments the edge uploads (ingest's `INGEST_SEGMENT_DURATION_S`), whole seconds. */
  segmentS: number;
  /** Longest the job may take, ms. */
  timeoutMs: number;
  /** Plain log lines instead of the redrawn view. */
  plain: boolean;
  /** Keep every service running after the job (ops page) until interrupted. */
  keep: boolean;
}

/** The repository's default detector (core/models/player-detector), used without --model. */
export function defaultModelPath(repoRoot: string): string {
  return resolve(repoRoot, 'core', 'models', 'player-detector', 'player-detector.onnx');
}

/** Analysis rate of the demo's detector, frames per second: the workers' default (`DEFAULT_ANALYSIS_FPS`). */
export const DEMO_ANALYSIS_FPS = DEFAULT_ANALYSIS_FPS;

export const DEMO_HELP = `Usage: pnpm demo [options]

Runs the main job end to end in one process: an edge node stitches a
3-camera match and uploads it through 2 ingest replicas to 5 storage elements
in 3 datacenters (one nearly full: the first placement meets a 507 and moves),
2 orchestrator replicas share the 12 command partitions, and the workers
detect, track, frame a virtual camera, analyse and encode. Outputs go to
out/<match_id>/ with report.html (open it from disk).

Embedded by default (in-memory Redis and bus, PGlite); REDIS_URL, DATABASE_URL
and KAFKA_BROKERS switch to real services (pnpm polyvision services up).

Options:
  --cameras <a.mp4,b.mp4>   your own camera videos (one video = one-camera rig)
  --calibration <venue.json> venue calibration of those cameras (2 cameras without one
                            are calibrated from the footage; needed for 3+)
  --pitch-points <p.json>   pitch markings read off the cameras' frames: the panorama
                            is registered to the pitch, the analytics are in metres
  --model <m.onnx>          detector model (DETECT_MODEL_PATH) [core/models/player-detector]
  --model-layout <l>        auto | yolov8 | yolox                 [auto]
  --class-map <map>         detector classes, e.g. 0:player      (DETECT_CLASS_MAP)
  --score-threshold <x>     lowest detection score kept, 0–1, every class (DETECT_SCORE_THRESHOLD)
                            [the model card's floors for people and the ball; else 0.1]
  --tiling <t>              auto | off | a grid like 2x1 | an expected person height
                            like 60px (source pixels)             (DETECT_TILING) [auto]
  --precision <p>           auto | fp32 | int8: the model's int8 rendition runs on the CPU
                            under auto                            (DETECT_PRECISION) [auto]
  --tta <none|flip>         flip: every tile inferred mirrored too and the two passes
                            fused (more people found; twice the inference) (DETECT_TTA) [none]
  --verifier <auto|off>     auto: the model card's person and ball verifiers rescore
                            every person and ball box; off: the detector's own scores
                            (DETECT_VERIFIER) [auto]
  --camera-motion <on|off>  measure the camera's motion between analysed frames and
                            move the tracks with it (a panning camera)
                            (DETECT_CAMERA_MOTION, TRACK_CAMERA_MOTION) [on]
  --analysis-fps <n>        frames per second the detector analyses [${DEMO_ANALYSIS_FPS}]
  --vcam-size <WxH>         virtual-camera video size             [follows the panorama, ≤ 1080p]
  --duration <s>            synthetic sample length, seconds      [20]
  --segment-s <s>           the edge's panorama segment length, whole seconds:
                            the match job gets duration / segment-s segments [5]
  --size <WxH>              synthetic camera size                 [1280x720]
  --fps <n>                 synthetic frame rate                  [25]
  --out <dir>               output root                           [out]
  --match-id <id>           match id                              [match-<date>-<random>]
  --timeout <s>             give up after this many seconds       [1800]
  --plain                   log lines instead of the live view
  --keep                    keep the services (and the ops page) up after the job, until Ctrl-C
  -h, --help

Detector flags become the workers' DETECT_* variables (core/README.md, detect);
DETECT_* variables set in your shell reach the workers too, flags win.
Cameras in another container than MP4 (.avi, .mkv, .mov, …) are converted to
H.264 MP4 first.

Exit status: 0 done, 1 the job failed, 2 bad options or input.
`;

/**
 * Parses `pnpm demo` arguments.
 * @throws ValidationError `demo_usage` naming the bad option and what was expected.
 */
export function parseDemoArgs(
  argv: string[],
  cwd: string,
  repoRoot: string,
  env: Record<string, string | undefined> = process.env,
): DemoOptions | 'help' {
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({
      args: argv,
      options: {
        cameras: { type: 'string' },
        calibration: { type: 'string' },
        'pitch-points': { type: 'string' },
        model: { type: 'string' },
        'model-layout': { type: 'string' },
        'class-map': { type: 'string' },
        'score-threshold': { type: 'string' },
        tiling: { type: 'string' },
        precision: { type: 'string' },
        tta: { type: 'string' },
        verifier: { type: 'string' },
        'camera-motion': { type: 'string' },
        'analysis-fps': { type: 'string' },
        'vcam-size': { type: 'string' },
        duration: { type: 'string' },
        'segment-s': { type: 'string' },
        size: { type: 'string' },
        fps: { type: 'string' },
        out: { type: 'string' },
        'match-id': { type: 'string' },
        timeout: { type: 'string' },
        plain: { type: 'boolean' },
        keep: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }).values;
  } catch (error) {
    throw new ValidationError('demo_usage', (error as Error).message);
  }
  if (values.help) return 'help';
  const text = (name: string) => (typeof values[name] === 'string' ? (values[name] as string) : undefined);
  const number = (name: string, fallback: number, check: (n: number) => boolean, expected: string) => {
    const raw = text(name);
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isFinite(n) || !check(n))
      throw new ValidationError('demo_usage', `--${name} ${raw}: expected ${expected}`);
    return n;
  };
  const cameras = (text('cameras') ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((p) => resolve(cwd, p));
  for (const path of cameras) {
    if (!existsSync(path)) throw new ValidationError('demo_usage', `--cameras: ${path} does not exist`);
  }
  const calibration = text('calibration') ? resolve(cwd, text('calibration') as string) : null;
  if (calibration && !existsSync(calibration))
    throw new ValidationError('demo_usage', `--calibration: ${calibration} does not exist`);
  if (calibration && cameras.length === 0) throw new ValidationError('demo_usage', '--calibration needs --cameras');
  if (cameras.length > 2 && !calibration) {
    throw new ValidationError(
      'demo_usage',
      `${cameras.length} cameras need --calibration venue.json to be stitched (self-calibration takes 2)`,
    );
  }
  const pitchPoints = text('pitch-points') ? resolve(cwd, text('pitch-points') as string) : null;
  if (pitchPoints && !existsSync(pitchPoints))
    throw new ValidationError('demo_usage', `--pitch-points: ${pitchPoints} does not exist`);
  if (pitchPoints && cameras.length < 2 && !calibration) {
    throw new ValidationError(
      'demo_usage',
      '--pitch-points needs a stitched rig: two cameras, or --calibration venue.json',
    );
  }
  const model = text('model') ? resolve(cwd, text('model') as string) : undefined;
  if (model && !existsSync(model)) throw new ValidationError('demo_usage', `--model: ${model} does not exist`);
  const layout = text('model-layout');
  if (layout && !['auto', 'yolov8', 'yolox'].includes(layout)) {
    throw new ValidationError('demo_usage', `--model-layout ${layout}: expected auto, yolov8 or yolox`);
  }
  const size = text('size') ?? '1280x720';
  const sizeMatch = /^(\d+)x(\d+)$/.exec(size);
  if (!sizeMatch) throw new ValidationError('demo_usage', `--size ${size}: expected WIDTHxHEIGHT, e.g. 1280x720`);
  const vcamSize = text('vcam-size');
  const vcamMatch = vcamSize === undefined ? null : /^(\d*[02468])x(\d*[02468])$/.exec(vcamSize);
  if (vcamSize !== undefined && !vcamMatch)
    throw new ValidationError('demo_usage', `--vcam-size ${vcamSize}: expected even WIDTHxHEIGHT, e.g. 1280x720`);
  const analysisFps = number(
    'analysis-fps',
    DEMO_ANALYSIS_FPS,
    (n) => n >= 0.1 && n <= 240,
    'a number from 0.1 to 240',
  );
  const matchId = text('match-id') ?? null;
  if (matchId !== null && !/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(matchId)) {
    throw new ValidationError('demo_usage', `--match-id ${matchId}: expected letters, digits, ".", "_", "-"`);
  }
  if (!model && !existsSync(defaultModelPath(repoRoot))) {
    throw new ValidationError(
      'demo_model_missing',
      `the default detector ${defaultModelPath(repoRoot)} is not in this checkout; pass --model <m.onnx> --model-layout yolox (e.g. ../shared/models/yolox_nano.onnx)`,
    );
  }
  const tiling = text('tiling');
  if (tiling !== undefined && !/^(auto|off|\d+x\d+|\d+(\.\d+)?px)$/i.test(tiling)) {
    throw new ValidationError(
      'demo_usage',
      `--tiling ${tiling}: expected auto, off, a grid like 2x1, or a person height like 60px`,
    );
  }
  const precision = text('precision');
  if (precision !== undefined && !['auto', 'fp32', 'int8'].includes(precision)) {
    throw new ValidationError('demo_usage', `--precision ${precision}: expected auto, fp32 or int8`);
  }
  const tta = text('tta');
  if (tta !== undefined && !['none', 'flip'].includes(tta)) {
    throw new ValidationError('demo_usage', `--tta ${tta}: expected none or flip`);
  }
  const verifier = text('verifier');
  if (verifier !== undefined && !['auto', 'off'].includes(verifier)) {
    throw new ValidationError('demo_usage', `--verifier ${verifier}: expected auto or off`);
  }
  const cameraMotion = text('camera-motion');
  if (cameraMotion !== undefined && !['on', 'off'].includes(cameraMotion)) {
    throw new ValidationError('demo_usage', `--camera-motion ${cameraMotion}: expected on or off`);
  }
  const scoreThreshold =
    text('score-threshold') === undefined
      ? undefined
      : number('score-threshold', 0, (n) => n >= 0 && n <= 1, 'a number from 0 to 1');
  // A user's own model: COCO-style by default (class 0 = person).
  const classMap = text('class-map') ?? (model ? '0:player,32:ball' : undefined);
  return {
    cameras,
    calibration,
    pitchPoints,
    sample: {
      cacheDir: resolve(repoRoot, '.cache', 'demo'),
      durationS: number('duration', 20, (n) => n > 0 && n <= 600, 'seconds from 0 to 600'),
      widthPx: Number(sizeMatch[1]),
      heightPx: Number(sizeMatch[2]),
      fps: number('fps', 25, (n) => Number.isInteger(n) && n >= 1 && n <= 60, 'a whole number from 1 to 60'),
      seed: 7,
    },
    outRoot: resolve(cwd, text('out') ?? 'out'),
    matchId,
    stageEnv: {
      // DETECT_* of the user's shell reach the workers; the flags below win.
      ...Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith('DETECT_'))),
      DETECT_ANALYSIS_FPS: String(analysisFps),
      ...(vcamMatch ? { VCAM_OUTPUT_WIDTH: vcamMatch[1], VCAM_OUTPUT_HEIGHT: vcamMatch[2] } : {}),
      DETECT_MODEL_CACHE_DIR: resolve(repoRoot, '.cache', 'models'),
      ...(model ? { DETECT_MODEL_PATH: model, DETECT_MODEL_VERSION: `user-${model.split('/').at(-1)}` } : {}),
      ...(layout ? { DETECT_MODEL_LAYOUT: layout } : {}),
      ...(classMap ? { DETECT_CLASS_MAP: classMap } : {}),
      ...(text('analysis-fps') === undefined && env.DETECT_ANALYSIS_FPS
        ? { DETECT_ANALYSIS_FPS: env.DETECT_ANALYSIS_FPS }
        : {}),
      ...(tiling ? { DETECT_TILING: tiling } : {}),
      ...(precision ? { DETECT_PRECISION: precision } : {}),
      ...(tta ? { DETECT_TTA: tta } : {}),
      ...(verifier ? { DETECT_VERIFIER: verifier } : {}),
      ...(cameraMotion ? { DETECT_CAMERA_MOTION: cameraMotion, TRACK_CAMERA_MOTION: cameraMotion } : {}),
      ...(scoreThreshold !== undefined ? { DETECT_SCORE_THRESHOLD: String(scoreThreshold) } : {}),
    },
    segmentS: number('segment-s', 5, (n) => Number.isInteger(n) && n >= 1 && n <= 60, 'a whole number from 1 to 60'),
    storageCapacityBytes: 8 * 1024 ** 3,
    timeoutMs: number('timeout', 1800, (n) => n > 0, 'a positive number of seconds') * 1000,
    plain: values.plain === true,
    keep: values.keep === true,
  };
}
