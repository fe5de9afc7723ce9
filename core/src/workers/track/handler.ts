import { join } from 'node:path';
import { envInt, loadConfig } from '@polyvision/shared';
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
import { trackDetections, writeTracksFile } from './run-track.ts';

/** Environment of the track stage. */
export const trackEnvSchema = z.object({
  /** Frames (at 30 fps; scaled to the analysis rate) a lost track waits to be found again. */
  TRACK_LOST_BUFFER_FRAMES: envInt(30, 1, 10_000),
  /** Gaps filled by interpolation, in analysed frames. */
  TRACK_INTERPOLATE_GAP_FRAMES: envInt(20, 0, 1_000),
});

/**
 * Builds the track stage: reads `detections` (kind), runs ByteTrack per
 * class, writes `tracks.json` (kind `tracks`). Fails with `no_tracks` (not
 * retriable) when no track lasts long enough.
 */
export function createStageHandler(context: StageHandlerContext, overrides: { io?: ArtifactIo } = {}): StageHandler {
  const env = loadConfig(trackEnvSchema, context.env);
  const ioConfig = stageIoConfig(context.env);
  const io = overrides.io ?? new LocalArtifactIo(ioConfig.artifactDir, ioConfig.storageId);
  return {
    stage: 'track',
    async run({ task, signal, reportProgress }) {
      const input = findInput(task, ['detections']);
      return withWorkDir(async (dir) => {
        const detections = await readDetectionsFile(await io.openInput(input, dir, signal));
        const tracks = trackDetections(
          detections,
          {
            lostTrackBufferAt30Fps: env.TRACK_LOST_BUFFER_FRAMES,
            interpolateGapFrames: env.TRACK_INTERPOLATE_GAP_FRAMES,
          },
          signal,
          throttle((f) => reportProgress(f * 0.95)),
        );
        const path = join(dir, 'tracks.json');
        await writeTracksFile(path, tracks);
        const ref = await io.writeOutput(
          {
            task,
            kind: 'tracks',
            objectKey: outputKey(task, 'tracks.json'),
            localPath: path,
            contentType: 'application/json',
          },
          signal,
        );
        reportProgress(1);
        return { outputs: [ref], stats: { tracks: tracks.tracks.length, frames: tracks.frameCount } };
      }, ioConfig.workDir);
    },
  };
}
