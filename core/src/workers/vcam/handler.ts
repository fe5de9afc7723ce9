import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { envBool, envInt, loadConfig, PolyvisionError, venueCalibrationSchema } from '@polyvision/shared';
import { z } from 'zod';
import { readDetectionsFile } from '../detect/detections-format.ts';
import {
  type ArtifactIo,
  findInput,
  LocalArtifactIo,
  outputKey,
  stageIoConfig,
  throttle,
  withWorkDir,
} from '../detect/stage-io.ts';
import type { StageHandler } from '../runtime/stage-handler.ts';
import type { StageHandlerContext } from '../runtime/stage-registry.ts';
import { readCarry, writeCarry } from '../segment/carry.ts';
import { SEGMENT_MIN_CLIP_MS } from '../segment/min-clip.ts';
import { readTracksFile } from '../track/tracks-format.ts';
import { ballFromTracks, readBallTrack } from './ball-positions.ts';
import { planCameraPath } from './camera-path.ts';
import { pitchRegionFromImage } from './grass-region.ts';
import { chooseVcamSizing } from './output-size.ts';
import { cameraPathCarrySchema, type VcamCarry, vcamCarryAcrossGap } from './path-carry.ts';
import { measureCameraPath } from './path-quality.ts';
import { NO_PITCH_REGION, type PitchRegion, pitchRegionFromCalibration, pointInPolygon } from './pitch-region.ts';
import { planTracksOverlay } from './render-overlay.ts';
import { renderVirtualCamera } from './render-vcam.ts';

/** Environment of the vcam stage. */
export const vcamEnvSchema = z.object({
  /** Output size; both unset = follows the source (see chooseVcamSizing). */
  VCAM_OUTPUT_WIDTH: envInt(undefined, 16, 7680).optional(),
  VCAM_OUTPUT_HEIGHT: envInt(undefined, 16, 4320).optional(),
  /** Largest upscale of a crop, e.g. 1.5 = a 1280-px output never shows less than 853 source pixels across. */
  VCAM_MAX_UPSCALE: z
    .string()
    .regex(/^\d+(\.\d+)?$/, { message: 'a number ≥ 1' })
    .transform(Number)
    .pipe(z.number().min(1, { message: 'a number ≥ 1' }))
    .optional()
    .transform((v) => v ?? 1.5),
  /** Lowest detection score counted in the centre of play (detections, when the task has them). */
  VCAM_PEOPLE_MIN_SCORE: z
    .string()
    .regex(/^(0(\.\d+)?|1(\.0+)?)$/, { message: 'a score from 0 to 1' })
    .transform(Number)
    .optional()
    .transform((v) => v ?? 0.3),
  /** Without a venue calibration, find the pitch as the largest grass area of the median frame. */
  VCAM_PITCH_FROM_IMAGE: envBool(true),
  /** Render overlay.mp4 (tracks, ball and crop window on the panorama). */
  VCAM_OVERLAY: envBool(true),
});

/**
 * Builds the vcam stage: reads `tracks`, the `panorama` (or `camera`), and
 * when present the venue calibration (kind `calibration` or a key ending in
 * `venue.json`: the pitch region; without it the pitch is the largest grass
 * area of the median frame, see grass-region.ts) and the ball track (kind `ball-track` or a
 * key ending in `ball-track.json`); plans the camera path; renders `vcam.mp4`
 * (kind `vcam`), `overlay.mp4` (kind `vcam-overlay`) and stores the path
 * with its sizing and quality figures as `camera-path.json` (kind `vcam-path`).
 *
 * A segment of a match job (`task.segment`, issue #18) plans its path from the `vcam-carry` of
 * the previous segment (camera window, velocity, recent targets: no jump at the boundary; the grass
 * pitch outline found on the first segment, reused), renders
 * only its own video under `…/segment-00000k/`, and adds its own `vcam-carry` to the outputs.
 *
 * @throws PolyvisionError `calibration_invalid` for a venue.json that does not validate; the render
 *   errors; `carry_missing` / `carry_invalid` (not retriable).
 */
export function createStageHandler(context: StageHandlerContext, overrides: { io?: ArtifactIo } = {}): StageHandler {
  const env = loadConfig(vcamEnvSchema, context.env);
  if ((env.VCAM_OUTPUT_WIDTH === undefined) !== (env.VCAM_OUTPUT_HEIGHT === undefined)) {
    throw new PolyvisionError(
      'config_invalid',
      'VCAM_OUTPUT_WIDTH and VCAM_OUTPUT_HEIGHT go together: set both, or neither (the size then follows the source)',
    );
  }
  const ioConfig = stageIoConfig(context.env);
  const io = overrides.io ?? new LocalArtifactIo(ioConfig.artifactDir, ioConfig.storageId);
  return {
    stage: 'vcam',
    async run({ task, signal, reportProgress, logger }) {
      const tracksRef = findInput(task, ['tracks']);
      const videoRef = findInput(task, ['panorama', 'camera']);
      const venueRef = task.inputs.find((i) => i.kind === 'calibration' || i.object_key.endsWith('venue.json'));
      const detectionsRef = task.inputs.find((i) => i.kind === 'detections');
      const ballRef = task.inputs.find((i) => i.kind === 'ball-track' || i.object_key.endsWith('ball-track.json'));
      return withWorkDir(async (dir) => {
        const tracks = await readTracksFile(await io.openInput(tracksRef, dir, signal));
        const inputPath = await io.openInput(videoRef, dir, signal);
        const { width: W, height: H } = tracks.detections.source;
        let pitch: PitchRegion = NO_PITCH_REGION;
        if (venueRef) {
          const text = await readFile(await io.openInput(venueRef, dir, signal), 'utf8');
          const parsed = venueCalibrationSchema.safeParse(JSON.parse(text || 'null'));
          if (!parsed.success) {
            throw new PolyvisionError(
              'calibration_invalid',
              `${venueRef.object_key}: ${parsed.error.issues[0]?.path.join('.')} ${parsed.error.issues[0]?.message}`,
            );
          }
          if (parsed.data.panorama.width_px === W && parsed.data.panorama.height_px === H) {
            pitch = pitchRegionFromCalibration(parsed.data) ?? NO_PITCH_REGION;
          } else {
            logger.warn(
              { venue: `${parsed.data.panorama.width_px}x${parsed.data.panorama.height_px}`, video: `${W}x${H}` },
              'vcam: the venue calibration describes another panorama size; no pitch region',
            );
          }
        }
        const carried = await readCarry(task, cameraPathCarrySchema, io, dir, signal);
        const carry = carried && vcamCarryAcrossGap(carried, task.segment?.gap_s ?? 0);
        if (pitch.source === 'none' && env.VCAM_PITCH_FROM_IMAGE && carry?.grassOutline) {
          // A later segment of a match keeps the pitch its first segment found (no decode, no drift).
          const outline = carry.grassOutline;
          pitch = { source: 'grass', outline, contains: (x, y) => pointInPolygon(outline, x, y) };
        } else if (pitch.source === 'none' && env.VCAM_PITCH_FROM_IMAGE) {
          pitch =
            (await pitchRegionFromImage({
              inputPath,
              sourceWidth: W,
              sourceHeight: H,
              frameCount: tracks.detections.source.frameCount,
              signal,
            })) ?? NO_PITCH_REGION;
        }
        const ball = ballRef
          ? await readBallTrack(await io.openInput(ballRef, dir, signal), tracks)
          : ballFromTracks(tracks);
        // The centre of play from confident detections when the task has them (transitively upstream).
        const peopleBoxes = detectionsRef
          ? (await readDetectionsFile(await io.openInput(detectionsRef, dir, signal))).frames.reduce<number[][][]>(
              (perFrame, f) => {
                perFrame[f.frame] = f.detections
                  .filter(
                    (d) => (d.class === 'player' || d.class === 'goalkeeper') && d.score >= env.VCAM_PEOPLE_MIN_SCORE,
                  )
                  .map((d) => [...d.box]);
                return perFrame;
              },
              [],
            )
          : undefined;
        const sizing = chooseVcamSizing({
          sourceWidth: W,
          sourceHeight: H,
          outputWidth: env.VCAM_OUTPUT_WIDTH,
          outputHeight: env.VCAM_OUTPUT_HEIGHT,
          maxUpscale: env.VCAM_MAX_UPSCALE,
        });
        const path = planCameraPath(tracks, {
          carry,
          aspectRatio: sizing.outputWidth / sizing.outputHeight,
          minCropWidthPx: sizing.minCropWidthPx,
          ball,
          pitch,
          ...(peopleBoxes ? { peopleBoxes } : {}),
        });
        const quality = measureCameraPath(path, ball, pitch);
        const videoPath = join(dir, 'vcam.mp4');
        const overlayPath = join(dir, 'overlay.mp4');
        // The overlay comes from the same decode of the panorama as the virtual camera.
        const overlayPlan = env.VCAM_OVERLAY ? planTracksOverlay({ tracks, path, ball, pitch }) : null;
        const summary = await renderVirtualCamera({
          inputPath,
          outputPath: videoPath,
          path,
          outputWidth: sizing.outputWidth,
          outputHeight: sizing.outputHeight,
          ...(task.segment ? { minDurationMs: SEGMENT_MIN_CLIP_MS } : {}),
          ...(overlayPlan ? { overlay: { outputPath: overlayPath, plan: overlayPlan } } : {}),
          signal,
          logger,
          onProgress: throttle((f) => reportProgress(f * 0.97)),
        });
        const overlay = overlayPlan ? { width: overlayPlan.width, height: overlayPlan.height } : null;
        const pathFile = join(dir, 'camera-path.json');
        await writeFile(
          pathFile,
          JSON.stringify({
            format: 'polyvision.camera-path',
            version: 1,
            quality,
            output: sizing,
            ballSource: ballRef ? 'ball-track' : ball.some(Boolean) ? 'tracks' : 'none',
            peopleSource: peopleBoxes ? `detections (score ≥ ${env.VCAM_PEOPLE_MIN_SCORE})` : 'tracks',
            pitch: { source: pitch.source, outline: pitch.outline },
            overlay,
            render: { frames: summary.frames, cropCommands: summary.cropCommands, encoder: summary.encoder },
            ...path,
          }),
        );
        const outputs = [
          await io.writeOutput(
            {
              task,
              kind: 'vcam',
              objectKey: outputKey(task, 'vcam.mp4'),
              localPath: videoPath,
              contentType: 'video/mp4',
            },
            signal,
          ),
          await io.writeOutput(
            {
              task,
              kind: 'vcam-path',
              objectKey: outputKey(task, 'camera-path.json'),
              localPath: pathFile,
              contentType: 'application/json',
            },
            signal,
          ),
        ];
        if (overlay) {
          outputs.push(
            await io.writeOutput(
              {
                task,
                kind: 'vcam-overlay',
                objectKey: outputKey(task, 'overlay.mp4'),
                localPath: overlayPath,
                contentType: 'video/mp4',
              },
              signal,
            ),
          );
        }
        const carryRef = await writeCarry(
          task,
          {
            ...path.carry!,
            grassOutline: pitch.source === 'grass' ? pitch.outline.map(([x, y]) => [x, y] as [number, number]) : null,
          } satisfies VcamCarry,
          io,
          dir,
          signal,
        );
        if (carryRef) outputs.push(carryRef);
        reportProgress(1);
        return {
          outputs,
          stats: {
            frames: summary.frames,
            frames_per_second: Math.round(summary.framesPerSecond * 10) / 10,
            output_height: sizing.outputHeight,
            ...(quality.ballInCropShare !== null ? { ball_in_crop_share: quality.ballInCropShare } : {}),
            rms_jerk: Math.round(quality.rmsJerk * 1000) / 1000,
          },
        };
      }, ioConfig.workDir);
    },
  };
}
