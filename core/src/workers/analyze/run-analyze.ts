import { mkdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { VenueCalibration } from '@polyvision/shared';
import { PolyvisionError } from '@polyvision/shared';
import { type MediaBinaries, probeVideo, readVideoFrames } from '../detect/frames/index.ts';
import type { TracksFile } from '../track/tracks-format.ts';
import { type HeatmapOptions, occupancyGrid, renderHeatmapPng } from './heatmap.ts';
import { type KinematicsOptions, type TrackKinematics, trackKinematics } from './kinematics.ts';
import { imageSpace, pitchSpace } from './pitch-space.ts';
import { assignTeams, sampleJerseyColours, type TeamLabel } from './team-colours.ts';

/** Parameters of {@link runAnalyze}. */
export interface RunAnalyzeParams {
  tracks: TracksFile;
  /** The panorama the tracks come from; needed for team colours (skipped without it). */
  videoPath?: string;
  /** Venue calibration; without it positions stay in image pixels. */
  venue?: VenueCalibration;
  /** Folder to create with `summary.json` and `heatmaps/*.png`; must not exist yet. */
  outputDir: string;
  kinematics?: KinematicsOptions;
  heatmap?: HeatmapOptions;
  /** Frames per second decoded to sample jersey colours. @defaultValue 1 */
  colourSampleFps?: number;
  signal?: AbortSignal;
  onProgress?: (fraction: number) => void;
  binaries?: MediaBinaries;
}

/** One person's figures in `summary.json` (distances in `unit`, speeds in `unit`/s). */
export interface PlayerSummary {
  trackId: number;
  class: string;
  team: TeamLabel;
  frames: number;
  durationSeconds: number;
  distance: number;
  maxSpeed: number;
  meanSpeed: number;
  sprints: number;
  sprintDistance: number;
}

/** `summary.json`. */
export interface AnalyticsSummary {
  format: 'polyvision.analytics';
  version: 1;
  /** 'm' with a venue calibration, else 'px'. */
  unit: 'm' | 'px';
  venueId: string | null;
  bounds: [number, number, number, number];
  durationSeconds: number;
  teams: { A: { colour: number[] | null; players: number[] }; B: { colour: number[] | null; players: number[] } };
  players: PlayerSummary[];
  heatmaps: Record<string, string>;
}

const round = (v: number, digits = 2) => Math.round(v * 10 ** digits) / 10 ** digits;

/**
 * The analyze stage: positions in pitch metres through the venue calibration
 * (bottom centre of each box = the player's ground contact), per-track
 * distance, speeds and sprints, team assignment by jersey colour, heatmaps
 * (all players, team A, team B) as PNG, and a summary JSON.
 *
 * @throws PolyvisionError (not retriable): `no_tracks` (no person to
 *   analyse), `calibration_invalid`, `output_exists`; the video errors of
 *   `readVideoFrames` when the panorama cannot be read.
 */
export async function runAnalyze(params: RunAnalyzeParams): Promise<AnalyticsSummary> {
  const { tracks, signal } = params;
  const { width, height } = tracks.detections.source;
  const fps = tracks.detections.analysisFps;
  const people = tracks.tracks.filter((t) => t.class !== 'ball');
  if (people.length === 0) {
    throw new PolyvisionError(
      'no_tracks',
      `no player, goalkeeper or referee track among ${tracks.tracks.length} tracks`,
    );
  }
  const space = params.venue ? pitchSpace(params.venue, width, height) : imageSpace(width, height);
  const exists = await stat(params.outputDir).then(
    () => true,
    () => false,
  );
  if (exists) throw new PolyvisionError('output_exists', `${params.outputDir} already exists`);

  // Team colours from frames sampled at a low rate.
  const samples = new Map<number, [number, number, number][]>();
  if (params.videoPath) {
    const info = await probeVideo(params.videoPath, { signal, binaries: params.binaries, minDurationMs: 0 });
    const sampleFps = params.colourSampleFps ?? 1;
    const expected = Math.max(1, Math.floor((info.durationMs / 1000) * sampleFps));
    for await (const frame of readVideoFrames(params.videoPath, {
      info,
      fps: sampleFps,
      signal,
      binaries: params.binaries,
    })) {
      sampleJerseyColours(frame, Math.round((frame.timeMs / 1000) * fps), width, people, samples);
      params.onProgress?.(Math.min(0.8, (0.8 * (frame.index + 1)) / expected));
    }
  }
  const teams = assignTeams(
    samples,
    people.map((t) => t.id),
  );

  const kinematics = new Map<number, TrackKinematics>();
  for (const t of people) {
    signal?.throwIfAborted();
    kinematics.set(t.id, trackKinematics(t, space, fps, params.kinematics));
  }
  const cellSize = params.heatmap?.cellSize ?? (space.unit === 'm' ? 1 : Math.max(width, height) / 100);
  const heatmapFor = (filter: (id: number) => boolean) =>
    renderHeatmapPng(
      occupancyGrid(
        people.filter((t) => filter(t.id) && t.class !== 'referee').flatMap((t) => kinematics.get(t.id)!.positions),
        space,
        fps,
        cellSize,
      ),
      space,
      { ...params.heatmap, cellSize },
    );

  const work = `${params.outputDir}.${process.pid}.${Date.now()}.part`;
  try {
    await mkdir(join(work, 'heatmaps'), { recursive: true });
    const heatmaps: Record<string, string> = { all: 'heatmaps/all.png' };
    await writeFile(
      join(work, heatmaps.all!),
      heatmapFor(() => true),
    );
    for (const team of ['A', 'B'] as const) {
      if (![...teams.teams.values()].includes(team)) continue;
      heatmaps[team] = `heatmaps/team-${team}.png`;
      await writeFile(
        join(work, heatmaps[team]!),
        heatmapFor((id) => teams.teams.get(id) === team),
      );
    }
    const players: PlayerSummary[] = people.map((t) => {
      const k = kinematics.get(t.id)!;
      return {
        trackId: t.id,
        class: t.class,
        team: teams.teams.get(t.id) ?? 'other',
        frames: t.frames.length,
        durationSeconds: round(k.durationSeconds),
        distance: round(k.distance, 1),
        maxSpeed: round(k.maxSpeed),
        meanSpeed: round(k.meanSpeed),
        sprints: k.sprints,
        sprintDistance: round(k.sprintDistance, 1),
      };
    });
    const summary: AnalyticsSummary = {
      format: 'polyvision.analytics',
      version: 1,
      unit: space.unit,
      venueId: params.venue?.venue_id ?? null,
      bounds: space.bounds,
      durationSeconds: round(tracks.frameCount / fps),
      teams: {
        A: { colour: teams.colours.A ?? null, players: players.filter((p) => p.team === 'A').map((p) => p.trackId) },
        B: { colour: teams.colours.B ?? null, players: players.filter((p) => p.team === 'B').map((p) => p.trackId) },
      },
      players,
      heatmaps,
    };
    await writeFile(join(work, 'summary.json'), JSON.stringify(summary, null, 2));
    await rename(work, params.outputDir);
    params.onProgress?.(1);
    return summary;
  } catch (error) {
    await rm(work, { recursive: true, force: true });
    throw error;
  }
}
