import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { PolyvisionError } from '@polyvision/shared';
import { encodeHistogram, measureTorso } from './appearance.ts';
import { CameraMotionEstimator } from './camera-motion.ts';
import type { Detection, DetectionsHeader } from './detections-format.ts';
import {
  CAMERA_MOTION_METHOD,
  DETECTIONS_FORMAT,
  formatFrameLine,
  roundBoxPx,
  TORSO_APPEARANCE,
  TORSO_MEAN_RGB,
} from './detections-format.ts';
import type { Detector, PreparedBatch } from './detector.ts';
import { type MediaBinaries, probeVideo, type RawFrame, readFramesAt, readVideoFrames } from './frames/index.ts';
import { modelLooksWrong, type ScoreStats } from './model-sanity.ts';

/** Parameters of {@link runDetect}. */
export interface RunDetectParams {
  /** The video (panorama or one camera). */
  inputPath: string;
  /** Where the detections JSON Lines go; written to a temporary name and renamed when complete. */
  outputPath: string;
  detector: Detector;
  /** Frames per second to analyse; the source rate when absent. */
  analysisFps?: number;
  /** Expected person height in source px (venue/rig hint) for `'auto'` tiling; overrides the detector's option. */
  personHeightPx?: number;
  /** Frames decoded for the `'auto'` tiling first pass when no person height is known. @defaultValue 4 */
  firstPassFrames?: number;
  /** Clips shorter than this are refused (`clip_too_short`). @defaultValue 1000 */
  minDurationMs?: number;
  /**
   * Measure the camera's motion between analysed frames (`camera-motion.ts`), written with each frame
   * for the tracker's camera-motion compensation; a fixed rig costs one measured pair in 25 once
   * it has stood still for 10 frames. @defaultValue true
   */
  cameraMotion?: boolean;
  /** Whether a clip with no detection at all fails with `no_detections`. @defaultValue true */
  failOnZeroDetections?: boolean;
  signal?: AbortSignal;
  /** Called after every analysed frame with the share done, in [0, 1]. */
  onProgress?: (fraction: number) => void;
  binaries?: MediaBinaries;
}

/** What a detect run did. */
export interface DetectSummary {
  outputPath: string;
  frames: number;
  detections: number;
  detectionsByClass: Record<string, number>;
  elapsedMs: number;
  /** Analysed frames per second of wall time (decode + preprocessing + inference + NMS + writing). */
  framesPerSecond: number;
  header: DetectionsHeader;
  /** Also in `header.warnings`: a model that looks wrong for the footage, a failed scale estimate. */
  warnings: string[];
}

/**
 * Detects players, ball and referees in every analysed frame of a video and
 * writes the detections file (format: `detections-format.ts`), each person box with its torso
 * colours measured in the frame the detector saw (`appearance`: the track stage's appearance
 * features without a second decode of the video).
 *
 * Pipelined: while one batch runs in onnxruntime, the next is decoded (ffmpeg,
 * another process) and letterboxed; at most one inference is in flight.
 *
 * @throws PolyvisionError (not retriable): `input_not_video`, `clip_too_short`,
 *   `video_corrupt`, `video_truncated`, `no_detections`; `inference_failed`
 *   (retriable). On abort, the abort reason. No partial output file remains
 *   after a failure, and no ffmpeg child outlives the call.
 */
export async function runDetect(params: RunDetectParams): Promise<DetectSummary> {
  const { detector, signal } = params;
  const started = performance.now();
  const info = await probeVideo(params.inputPath, {
    signal,
    binaries: params.binaries,
    minDurationMs: params.minDurationMs ?? 1000,
  });
  const fps = Math.min(params.analysisFps ?? info.fps, info.fps);
  const warnings: string[] = [];
  let personHeightPx = params.personHeightPx;
  let estimated = false;
  if (
    detector.options.tiling.mode === 'auto' &&
    personHeightPx === undefined &&
    !detector.options.tiling.personHeightPx
  ) {
    // First pass: a few frames spread over the clip, at the model's native scale.
    const count = params.firstPassFrames ?? 4;
    const times = Array.from({ length: count }, (_, i) => ((i + 0.5) / count) * info.durationMs);
    // A file that fails here (corrupt, truncated) fails with its own reason in the main pass below.
    const sample = await readFramesAt(params.inputPath, info, times, { signal, binaries: params.binaries }).catch(
      (error: unknown) => {
        signal?.throwIfAborted();
        if (error instanceof PolyvisionError && error.code === 'video_corrupt') return [];
        throw error;
      },
    );
    signal?.throwIfAborted();
    const estimate = await detector.estimatePersonHeight(sample);
    signal?.throwIfAborted();
    personHeightPx = estimate.personHeightPx;
    estimated = personHeightPx !== undefined;
    if (!estimated) {
      warnings.push(
        `tiling: the first pass found ${estimate.people} confident people in ${estimate.frames} frames, too few to estimate their height; the whole frame is analysed as one tile (set DETECT_TILING=<height>px or a grid like 2x1)`,
      );
    }
  }
  const plan = detector.plan(info.width, info.height, personHeightPx, estimated);
  // Mean torso colours only from frames decoded at the source size (a single tile at scale < 1 is
  // decoded smaller, blending a shirt of a few pixels with the grass); without them the analyze stage
  // decodes the panorama at its size, as before.
  const meanColours = plan.decodeWidth === info.width;
  const expectedFrames = Math.max(1, Math.floor((info.durationMs / 1000) * fps));
  const header: DetectionsHeader = {
    format: DETECTIONS_FORMAT,
    version: 1,
    source: {
      width: info.width,
      height: info.height,
      fps: info.fps,
      frameCount: info.frameCount,
      durationMs: info.durationMs,
    },
    analysisFps: fps,
    model: {
      version: detector.info.modelVersion,
      sha256: detector.info.sha256,
      layout: detector.info.layout,
      inputWidth: detector.info.inputWidth,
      inputHeight: detector.info.inputHeight,
      executionProvider: detector.info.executionProvider,
      precision: detector.info.precision,
      tiles: plan.tiles.length,
      ...(detector.options.testTimeAugmentation === 'flip' ? { testTimeAugmentation: 'flip' as const } : {}),
      ...(detector.info.verifier ? { verifier: detector.info.verifier } : {}),
      ...(detector.info.ballVerifier ? { ballVerifier: detector.info.ballVerifier } : {}),
    },
    tiling: {
      mode: detector.options.tiling.mode,
      columns: plan.grid.columns,
      rows: plan.grid.rows,
      scale: Math.round(plan.grid.scale * 1000) / 1000,
      source: plan.gridSource,
      ...(plan.personHeightPx !== undefined ? { personHeightPx: Math.round(plan.personHeightPx * 10) / 10 } : {}),
      modelPersonHeightPx: detector.info.modelPersonHeightPx,
    },
    classes: [...new Set(Object.values(detector.options.classMap))],
    appearance: TORSO_APPEARANCE,
    ...(meanColours ? { torsoColour: TORSO_MEAN_RGB } : {}),
  };
  const motion = (params.cameraMotion ?? true) ? await CameraMotionEstimator.create() : null;
  const temporary = `${params.outputPath}.${process.pid}.${Date.now()}.part`;
  const body = `${temporary}.frames`;
  const scores: ScoreStats = { boxes: 0, lowScoreBoxes: 0 };
  const out = createWriteStream(body);
  let writeError: Error | undefined;
  out.on('error', (error) => {
    writeError ??= error;
  });
  const write = async (text: string) => {
    if (writeError)
      throw new PolyvisionError('output_write_failed', `cannot write ${temporary}: ${writeError.message}`, {
        retriable: true,
        cause: writeError,
      });
    if (!out.write(text)) await once(out, 'drain', { signal });
  };
  let frames = 0;
  let detections = 0;
  const byClass: Record<string, number> = {};
  const framesPerBatch = detector.framesPerBatch(plan);
  try {
    let inflight: { batches: PreparedBatch[]; frames: RawFrame[]; result: Promise<Detection[][]> } | undefined;
    const flush = async () => {
      if (!inflight) return;
      const perFrame = await inflight.result;
      for (const [i, frame] of inflight.frames.entries()) {
        const list = withAppearance(perFrame[i] ?? [], frame, info.width, meanColours);
        const people = list.filter((d) => d.class !== 'ball').map((d) => d.box);
        const cameraMotion = motion?.next(frame, info.width, people) ?? undefined;
        detections += list.length;
        for (const d of list) {
          byClass[d.class] = (byClass[d.class] ?? 0) + 1;
          scores.boxes += 1;
          if (d.score < 0.3) scores.lowScoreBoxes += 1;
        }
        await write(
          formatFrameLine({
            frame: frame.index,
            sourceFrame: frame.sourceIndex,
            tMs: frame.timeMs,
            ...(cameraMotion ? { cameraMotion } : {}),
            detections: list,
          }),
        );
        frames += 1;
      }
      params.onProgress?.(Math.min(1, frames / expectedFrames));
      inflight = undefined;
    };
    let pending: RawFrame[] = [];
    const submit = async () => {
      const batches = detector.prepare(pending, plan);
      await flush();
      signal?.throwIfAborted();
      inflight = { batches, frames: pending, result: detector.infer(batches) };
      // Keep an unobserved rejection from crashing the process while we decode on.
      inflight.result.catch(() => {});
      pending = [];
    };
    for await (const frame of readVideoFrames(params.inputPath, {
      info,
      fps: params.analysisFps,
      width: plan.decodeWidth,
      height: plan.decodeHeight,
      signal,
      binaries: params.binaries,
    })) {
      pending.push(frame);
      if (pending.length >= framesPerBatch) await submit();
    }
    if (pending.length > 0) await submit();
    await flush();
    if (detections === 0 && (params.failOnZeroDetections ?? true)) {
      throw new PolyvisionError(
        'no_detections',
        `no ${header.classes.join('/')} detected in ${frames} frames of ${params.inputPath}: wrong model, class map or footage`,
        { details: { frames } },
      );
    }
    out.end();
    await once(out, 'finish');
    const wrong = modelLooksWrong(scores, frames);
    if (wrong) warnings.push(wrong);
    if (warnings.length > 0) header.warnings = warnings;
    if (motion) {
      header.cameraMotion = { method: CAMERA_MOTION_METHOD, workingWidthPx: motion.workingWidthPx, ...motion.counts };
    }
    // The header goes first but knows the warnings only now: header + frames into the final name.
    const final = createWriteStream(temporary);
    final.write(`${JSON.stringify(header)}\n`);
    await pipeline(createReadStream(body), final);
    await rename(temporary, params.outputPath);
  } catch (error) {
    out.destroy();
    await rm(temporary, { force: true });
    throw error;
  } finally {
    motion?.close();
    await rm(body, { force: true });
  }
  const elapsedMs = performance.now() - started;
  return {
    outputPath: params.outputPath,
    frames,
    detections,
    detectionsByClass: byClass,
    elapsedMs,
    framesPerSecond: frames / (elapsedMs / 1000),
    header,
    warnings,
  };
}

/**
 * The person boxes of a frame with their torso colours (`measureTorso`) measured in the decoded frame
 * the detector saw (`frame` may be scaled from the source: boxes, in source pixels, are scaled by its
 * width over `sourceWidthPx`): the histogram always, the mean colour when `meanColours`. Measured on
 * the box as the file writes it (`roundBoxPx`), so a reader measuring the written box again gets the
 * same pixels (a tenth of a pixel moves a small torso's edge by a whole column).
 */
function withAppearance(list: Detection[], frame: RawFrame, sourceWidthPx: number, meanColours: boolean): Detection[] {
  const scale = frame.width / sourceWidthPx;
  return list.map((d) => {
    if (d.class === 'ball') return d;
    const { histogram, meanRgb } = measureTorso(frame, roundBoxPx(d.box), scale);
    return {
      ...d,
      ...(histogram ? { appearance: encodeHistogram(histogram) } : {}),
      ...(meanRgb && meanColours ? { torso: meanRgb } : {}),
    };
  });
}
