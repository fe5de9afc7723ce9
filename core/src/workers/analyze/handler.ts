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
import { readCarry, writeCarry } from '../segment/carry.ts';
import { matchOutputKey } from '../segment/segment-output-key.ts';
import { readTracksFile } from '../track/tracks-format.ts';
import { accumulateMatchAnalytics, matchAnalyticsCarrySchema, writeMatchAnalytics } from './match-analytics.ts';
import { type AnalyzeCollected, runAnalyze, tracksCarryColours } from './run-analyze.ts';

/**
 * Builds the analyze stage: reads `tracks`, the jersey colours the detect stage measured and the
 * track stage kept with each box (files since 2026-11-29) — else the `panorama` (or `camera`),
 * decoded for them — and, when present, the venue calibration (kind
 * `calibration`, or any input whose key ends in `venue.json`); writes
 * `summary.json` (kind `analytics`) and heatmaps (kind `heatmap`). Without a
 * calibration, figures are in image pixels.
 *
 * A segment of a match job (`task.segment`, issue #18) also adds its figures to the match's
 * accumulators carried from the previous segment (`analyze-carry`: per-track totals, colour
 * samples, occupancy grids) and writes the match-level analytics so far under
 * `…/analyze/<version>/match/` (`summary.json` kind `match-analytics` with `final` true after the
 * match's last segment, heatmaps kind `match-heatmap`); a segment without people adds nothing.
 *
 * @throws PolyvisionError `calibration_invalid` (not retriable) for a venue.json that does not
 *   validate; `carry_missing` / `carry_invalid` (not retriable).
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
        const carried = await readCarry(task, matchAnalyticsCarrySchema.nullable(), io, dir, signal);
        const collect: Partial<AnalyzeCollected> = {};
        const hasPeople = tracks.tracks.some((t) => t.class !== 'ball');
        // A segment without people (a break) adds nothing to the match; a whole clip without any fails (`no_tracks`).
        const summary =
          task.segment && !hasPeople
            ? null
            : await runAnalyze({
                tracks,
                // Tracks with the detect stage's colours need no video: it is not even fetched.
                ...(tracksCarryColours(tracks) ? {} : { videoPath: await io.openInput(videoRef, dir, signal) }),
                venue,
                outputDir,
                collect,
                signal,
                onProgress: throttle((f) => reportProgress(f * 0.9)),
              });
        const outputs = [];
        if (summary) {
          outputs.push(
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
          );
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
        }
        let matchPlayers: number | undefined;
        if (task.segment) {
          let carry = carried ?? null;
          if (summary) {
            const accumulated = accumulateMatchAnalytics(carry, collect as AnalyzeCollected);
            carry = accumulated.carry;
            const matchDir = join(dir, 'match-analytics');
            const match = await writeMatchAnalytics(matchDir, carry, accumulated.teams, collect.space!, {
              segments: carry.segments ?? task.segment.index + 1,
              final: task.segment.final,
            });
            matchPlayers = match.players.length;
            outputs.push(
              await io.writeOutput(
                {
                  task,
                  kind: 'match-analytics',
                  objectKey: matchOutputKey(task, 'summary.json'),
                  localPath: join(matchDir, 'summary.json'),
                  contentType: 'application/json',
                },
                signal,
              ),
            );
            for (const file of Object.values(match.heatmaps)) {
              outputs.push(
                await io.writeOutput(
                  {
                    task,
                    kind: 'match-heatmap',
                    objectKey: matchOutputKey(task, ...file.split('/')),
                    localPath: join(matchDir, file),
                    contentType: 'image/png',
                  },
                  signal,
                ),
              );
            }
          }
          const carryRef = await writeCarry(task, carry, io, dir, signal);
          if (carryRef) outputs.push(carryRef);
        }
        reportProgress(1);
        return {
          outputs,
          stats: {
            players: summary?.players.length ?? 0,
            ...(matchPlayers !== undefined ? { match_players: matchPlayers } : {}),
          },
        };
      }, ioConfig.workDir);
    },
  };
}
