import { mkdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PolyvisionError, type VenueCalibration } from '@polyvision/shared';
import { TORSO_MEAN_RGB } from '../detect/detections-format.ts';
import { type MediaBinaries, probeVideo, readVideoFrames } from '../detect/frames/index.ts';
import type { TracksFile } from '../track/tracks-format.ts';
import { type AnalyticsWarning, teamBalance } from './analytics-warnings.ts';
import { type HeatmapOptions, occupancyGrid, renderHeatmapPng } from './heatmap.ts';
import { type KinematicsOptions, type TrackKinematics, trackKinematics } from './kinematics.ts';
import { imageSpace, type PositionSpace, pitchSpace } from './pitch-space.ts';
import { type Role, roleOf, zoneFrames } from './roles.ts';
import { assignTeams, sampleJerseyColours, storedJerseyColours, type TeamLabel } from './team-colours.ts';

/** Parameters of {@link runAnalyze}. */
export interface RunAnalyzeParams {
  tracks: TracksFile;
  /**
   * The panorama the tracks come from, decoded for team colours when the tracks do not carry the
   * colours the detect stage measured (`tracksCarryColours`); without either, no teams.
   */
  videoPath?: string;
  /** Venue calibration; without it positions stay in image pixels. */
  venue?: VenueCalibration;
  /** Folder to create with `summary.json` and `heatmaps/*.png`; must not exist yet. */
  outputDir: string;
  kinematics?: KinematicsOptions;
  heatmap?: HeatmapOptions;
  /**
   * Frames per second whose jersey colours are sampled — decoded, or taken from the tracks' stored
   * colours (3: a stable median per track; 1 split the demo 8 v 11). @defaultValue 3
   */
  colourSampleFps?: number;
  signal?: AbortSignal;
  onProgress?: (fraction: number) => void;
  binaries?: MediaBinaries;
  /**
   * Filled with what this run measured, for a caller that accumulates over a match's segments
   * (`match-analytics.ts`): colour samples and positions per track, the space and grid cell size.
   */
  collect?: Partial<AnalyzeCollected>;
}

/**
 * Whether the tracks carry the jersey colours the detect stage measured (`TrackFrame.torso`, header
 * `torsoColour`), so that the analyze stage need not decode the video: detections files written since
 * 2026-11-29.
 */
export function tracksCarryColours(tracks: TracksFile): boolean {
  return tracks.detections.torsoColour === TORSO_MEAN_RGB;
}

/** What {@link runAnalyze} hands a caller through `collect`. */
export interface AnalyzeCollected {
  /** Track id → jersey colour samples (RGB 0–255). */
  samples: Map<number, [number, number, number][]>;
  /** Track id → positions in the space's unit (the kinematics' smoothed positions). */
  positions: Map<number, { frame: number; x: number; y: number }[]>;
  /** Track id → on the pitch (null without a calibration). */
  onPitch: Map<number, boolean | null>;
  space: PositionSpace;
  fps: number;
  cellSize: number;
  summary: AnalyticsSummary;
}

/**
 * One person's figures in `summary.json`: distances in metres, speeds in m/s — only with a venue
 * calibration; without one they are null (see the `no_calibration` warning).
 */
export interface PlayerSummary {
  trackId: number;
  /** The detector's class (the most frames'). */
  class: string;
  team: TeamLabel;
  /** From the team, the class and, in pitch metres, where the person stood (`roles.ts`). */
  role: Role;
  /** Whether the track is on the pitch (half its foot points or more); null without a calibration. */
  onPitch: boolean | null;
  frames: number;
  durationSeconds: number;
  distance: number | null;
  maxSpeed: number | null;
  meanSpeed: number | null;
  sprints: number | null;
  sprintDistance: number | null;
}

/** One team in `summary.json`. */
export interface TeamSummary {
  /** Mean jersey colour, RGB 0–255. */
  colour: number[] | null;
  /** Track ids. */
  players: number[];
  /** Median over analysed frames of this team's players seen in the frame (tracks fragment; this does not). */
  playersPerFrame: number;
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
  teams: { A: TeamSummary; B: TeamSummary; balanced: boolean | null };
  players: PlayerSummary[];
  heatmaps: Record<string, string>;
  /** What these figures cannot claim, and why (`analytics-warnings.ts`). */
  warnings: AnalyticsWarning[];
}

const round = (v: number, digits = 2) => Math.round(v * 10 ** digits) / 10 ** digits;

/**
 * The analyze stage: positions in pitch metres through the venue calibration
 * (bottom centre of each box = the player's ground contact), per-track
 * distance, speeds and sprints (only in metres: without a calibration they are
 * null and a `no_calibration` warning says why), teams by jersey colour from the
 * on-pitch tracks of class `player` only (referees and goalkeepers apart by
 * class, colour outliers apart; the two teams' per-frame sizes checked for
 * balance), heatmaps of the on-pitch people (all, team A, team B) as PNG, and
 * a summary JSON with its `warnings`.
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
  // A self-calibrated venue without pitch points knows the panorama, not where the pitch is: pixels.
  const space = (params.venue && pitchSpace(params.venue, width, height)) || imageSpace(width, height);
  const exists = await stat(params.outputDir).then(
    () => true,
    () => false,
  );
  if (exists) throw new PolyvisionError('output_exists', `${params.outputDir} already exists`);

  // Team colours from frames sampled at a low rate: as the detect stage measured them, else decoded.
  const samples = new Map<number, [number, number, number][]>();
  const sampleFps = params.colourSampleFps ?? 3;
  const stored = tracksCarryColours(tracks);
  if (stored) {
    const tick = (frame: number) => Math.floor((frame * sampleFps) / fps);
    storedJerseyColours(people, samples, (frame) => frame === 0 || tick(frame) !== tick(frame - 1));
    params.onProgress?.(0.8);
  } else if (params.videoPath) {
    const info = await probeVideo(params.videoPath, { signal, binaries: params.binaries, minDurationMs: 0 });
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
  const warnings: AnalyticsWarning[] = [];
  const calibrated = space.kind === 'pitch';
  if (!calibrated) {
    warnings.push({
      code: 'no_calibration',
      message: `${params.venue ? 'the venue calibration has no pitch frame (a self-calibrated rig: register it with pitch points, `polyvision edge calibrate --pitch-points`)' : 'no venue calibration'}: positions are in image pixels; distances, speeds and sprints are not measured (a pixel is no fixed distance across the image)`,
    });
    warnings.push({
      code: 'no_pitch_region',
      message:
        'without a calibration the pitch is unknown: people off it (benches, coaches) may count in teams and heatmaps',
    });
  }
  const onPitch = new Map<number, boolean | null>(
    people.map((t) => [t.id, calibrated ? isOnPitch(t.frames, space.fromImage, space.bounds) : null]),
  );
  const playerIds = people.filter((t) => t.class === 'player' && onPitch.get(t.id) !== false).map((t) => t.id);
  const teams = assignTeams(
    samples,
    people.map((t) => t.id),
    { playerIds },
  );
  if (!params.videoPath && !stored) {
    warnings.push({ code: 'no_colours', message: 'no video to sample jersey colours from: no teams' });
  } else if (!teams.colours.A) {
    warnings.push({
      code: 'teams_not_found',
      message: `fewer than two on-pitch players had jersey colour samples (${playerIds.length} player tracks)`,
    });
  }
  const perFrame = (team: 'A' | 'B') => {
    const counts = new Array<number>(tracks.frameCount).fill(0);
    for (const t of people) if (teams.teams.get(t.id) === team) for (const f of t.frames) counts[f.frame]! += 1;
    counts.sort((a, b) => a - b);
    return counts.length > 0 ? counts[Math.floor(counts.length / 2)]! : 0;
  };
  const perFrameA = perFrame('A');
  const perFrameB = perFrame('B');
  const balance = teams.colours.A ? teamBalance(perFrameA, perFrameB) : null;
  if (balance && !balance.balanced) {
    warnings.push({
      code: 'teams_unbalanced',
      message: `teams look unbalanced: ${perFrameA} v ${perFrameB} players per frame (median); the colour split may be wrong`,
    });
  }
  const clustered = playerIds.filter((id) => samples.has(id));
  const outliers = clustered.filter((id) => teams.teams.get(id) === 'other').length;
  if (teams.colours.A && outliers > 0.25 * clustered.length) {
    warnings.push({
      code: 'many_colour_outliers',
      message: `${outliers} of ${clustered.length} on-pitch players fit neither team's colour`,
    });
  }

  const kinematics = new Map<number, TrackKinematics>();
  for (const t of people) {
    signal?.throwIfAborted();
    kinematics.set(t.id, trackKinematics(t, space, fps, params.kinematics));
  }
  const cellSize = params.heatmap?.cellSize ?? (space.unit === 'm' ? 1 : Math.max(width, height) / 100);
  const heatmapFor = (filter: (id: number) => boolean) =>
    renderHeatmapPng(
      occupancyGrid(
        people
          .filter((t) => filter(t.id) && t.class !== 'referee' && onPitch.get(t.id) !== false)
          .flatMap((t) => kinematics.get(t.id)!.positions),
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
    const zones = new Map(
      people.map((t) => [t.id, calibrated ? zoneFrames(kinematics.get(t.id)!.positions, space.bounds) : null]),
    );
    const players: PlayerSummary[] = people.map((t) => {
      const k = kinematics.get(t.id)!;
      const team = teams.teams.get(t.id) ?? 'other';
      return {
        trackId: t.id,
        class: t.class,
        team,
        role: roleOf(team, t.class, zones.get(t.id) ?? null),
        onPitch: onPitch.get(t.id) ?? null,
        frames: t.frames.length,
        durationSeconds: round(k.durationSeconds),
        distance: calibrated ? round(k.distance, 1) : null,
        maxSpeed: calibrated ? round(k.maxSpeed) : null,
        meanSpeed: calibrated ? round(k.meanSpeed) : null,
        sprints: calibrated ? k.sprints : null,
        sprintDistance: calibrated ? round(k.sprintDistance, 1) : null,
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
        A: {
          colour: teams.colours.A ?? null,
          players: players.filter((p) => p.team === 'A').map((p) => p.trackId),
          playersPerFrame: perFrameA,
        },
        B: {
          colour: teams.colours.B ?? null,
          players: players.filter((p) => p.team === 'B').map((p) => p.trackId),
          playersPerFrame: perFrameB,
        },
        balanced: balance ? balance.balanced : null,
      },
      players,
      heatmaps,
      warnings,
    };
    await writeFile(join(work, 'summary.json'), JSON.stringify(summary, null, 2));
    await rename(work, params.outputDir);
    if (params.collect) {
      Object.assign(params.collect, {
        samples,
        positions: new Map([...kinematics].map(([id, k]) => [id, k.positions])),
        onPitch,
        space,
        fps,
        cellSize,
        summary,
      } satisfies AnalyzeCollected);
    }
    params.onProgress?.(1);
    return summary;
  } catch (error) {
    await rm(work, { recursive: true, force: true });
    throw error;
  }
}

/**
 * Whether a track is on the pitch: at least half its foot points map inside the pitch bounds
 * widened by `marginM` (throw-ins, corners, assistant referees along the lines).
 */
export function isOnPitch(
  frames: readonly { box: readonly number[] }[],
  fromImage: (u: number, v: number) => [number, number] | null,
  bounds: readonly [number, number, number, number],
  marginM = 2,
): boolean {
  let inside = 0;
  for (const f of frames) {
    const p = fromImage((f.box[0]! + f.box[2]!) / 2, f.box[3]!);
    if (
      p &&
      p[0] >= bounds[0] - marginM &&
      p[0] <= bounds[2] + marginM &&
      p[1] >= bounds[1] - marginM &&
      p[1] <= bounds[3] + marginM
    )
      inside += 1;
  }
  return frames.length > 0 && inside >= frames.length / 2;
}
