import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PolyvisionError, type VenueCalibration, venueCalibrationSchema } from '@polyvision/shared';
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
import { runAnalyze } from './run-analyze.ts';

/**
 * Builds the analyze stage: reads `tracks`, the `panorama` (or `camera`) for
 * jersey colours and, when present, the venue calibration (kind
 * `calibration`, or any input whose key ends in `venue.json`); writes
 * `summary.json` (kind `analytics`) and heatmaps (kind `heatmap`). Without a
 * calibration, figures are in image pixels.
 *
 * @throws PolyvisionError `calibration_invalid` (not retriable) for a venue.json that does not validate.
 */
export function createStageHandler(context: StageHandlerContext, overrides: { io?: ArtifactIo } = {}): StageHandler {
  const ioConfig = stageIoConfig(context.env);
  const io = overrides.io ?? new LocalArtifactIo(ioConfig.artifactDir, ioConfig.storageId);
  return {
    stage: 'analyze',
    async run({ task, signal, reportProgress }) {
      const tracksRef = findInput(task, ['tracks']);
      const videoRef = findInput(task, ['panorama', 'camera']);
      const venueRef = task.inputs.find((i) => i.kind === 'calibration' || i.object_key.endsWith('venue.json'));
      return withWorkDir(async (dir) => {
        const tracks = await readTracksFile(await io.openInput(tracksRef, dir, signal));
        let venue: VenueCalibration | undefined;
        if (venueRef) {
          const parsed = venueCalibrationSchema.safeParse(
            JSON.parse(await readFile(await io.openInput(venueRef, dir, signal), 'utf8').catch(() => 'null')),
          );
          if (!parsed.success) {
            throw new PolyvisionError(
              'calibration_invalid',
              `${venueRef.object_key}: ${parsed.error.issues[0]?.path.join('.')} ${parsed.error.issues[0]?.message}`,
            );
          }
          venue = parsed.data;
        }
        const outputDir = join(dir, 'analytics');
        const summary = await runAnalyze({
          tracks,
          videoPath: await io.openInput(videoRef, dir, signal),
          venue,
          outputDir,
          signal,
          onProgress: throttle((f) => reportProgress(f * 0.95)),
        });
        const outputs = [
          await io.writeOutput(
            {
              task,
              kind: 'analytics',
              objectKey: outputKey(task, 'summary.json'),
              localPath: join(outputDir, 'summary.json'),
              contentType: 'application/json',
            },
            signal,
          ),
        ];
        for (const file of (await readdir(join(outputDir, 'heatmaps'))).sort()) {
          outputs.push(
            await io.writeOutput(
              {
                task,
                kind: 'heatmap',
                objectKey: outputKey(task, 'heatmaps', file),
                localPath: join(outputDir, 'heatmaps', file),
                contentType: 'image/png',
              },
              signal,
            ),
          );
        }
        reportProgress(1);
        return { outputs, stats: { players: summary.players.length } };
      }, ioConfig.workDir);
    },
  };
}
