import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { envInt, loadConfig } from '@polyvision/shared';
import { z } from 'zod';
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
import { readTracksFile } from '../track/tracks-format.ts';
import { planCameraPath } from './camera-path.ts';
import { measureCameraPath } from './path-quality.ts';
import { renderVirtualCamera } from './render-vcam.ts';

/** Environment of the vcam stage. */
export const vcamEnvSchema = z.object({
  VCAM_OUTPUT_WIDTH: envInt(1920, 16, 7680),
  VCAM_OUTPUT_HEIGHT: envInt(1080, 16, 4320),
});

/**
 * Builds the vcam stage: reads `tracks` and the `panorama` (or `camera`),
 * plans the camera path, renders `vcam.mp4` (kind `vcam`) and stores the path
 * with its quality figures as `camera-path.json` (kind `vcam-path`).
 */
export function createStageHandler(context: StageHandlerContext, overrides: { io?: ArtifactIo } = {}): StageHandler {
  const env = loadConfig(vcamEnvSchema, context.env);
  const ioConfig = stageIoConfig(context.env);
  const io = overrides.io ?? new LocalArtifactIo(ioConfig.artifactDir, ioConfig.storageId);
  return {
    stage: 'vcam',
    async run({ task, signal, reportProgress, logger }) {
      const tracksRef = findInput(task, ['tracks']);
      const videoRef = findInput(task, ['panorama', 'camera']);
      return withWorkDir(async (dir) => {
        const tracks = await readTracksFile(await io.openInput(tracksRef, dir, signal));
        const inputPath = await io.openInput(videoRef, dir, signal);
        const path = planCameraPath(tracks);
        const quality = measureCameraPath(path, tracks);
        const videoPath = join(dir, 'vcam.mp4');
        const summary = await renderVirtualCamera({
          inputPath,
          outputPath: videoPath,
          path,
          outputWidth: env.VCAM_OUTPUT_WIDTH,
          outputHeight: env.VCAM_OUTPUT_HEIGHT,
          signal,
          logger,
          onProgress: throttle((f) => reportProgress(f * 0.97)),
        });
        const pathFile = join(dir, 'camera-path.json');
        await writeFile(pathFile, JSON.stringify({ format: 'polyvision.camera-path', version: 1, quality, ...path }));
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
        reportProgress(1);
        return {
          outputs,
          stats: {
            frames: summary.frames,
            frames_per_second: Math.round(summary.framesPerSecond * 10) / 10,
            ...(quality.ballInCropShare !== null ? { ball_in_crop_share: quality.ballInCropShare } : {}),
            rms_jerk: quality.rmsJerk,
          },
        };
      }, ioConfig.workDir);
    },
  };
}
