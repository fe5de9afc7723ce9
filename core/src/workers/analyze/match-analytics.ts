import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { teamBalance } from './analytics-warnings.ts';
import { occupancyGrid, renderHeatmapPng } from './heatmap.ts';
import { addZoneFrames, roleOf, zoneFrames } from './roles.ts';
import type { AnalyzeCollected, PlayerSummary } from './run-analyze.ts';
import { assignTeams, type TeamLabel } from './team-colours.ts';

/** Colour samples kept per track in the carry (the newest): enough for a stable median. */
const SAMPLES_PER_TRACK = 24;

const finite = z.number().finite();
const rgb = z.tuple([finite, finite, finite]);

/**
 * What the analyze stage carries from segment k to k+1 of a match (kind `analyze-carry`):
 * per-track totals (frames, time, distance, sprints, top speed), the newest jersey colour samples
 * per track (team clustering over the whole match), the match teams' colours (labels kept stable)
 * and the occupancy grids (seconds per cell) of everyone and of each team.
 */
export const matchAnalyticsCarrySchema = z.object({
  unit: z.enum(['m', 'px']),
  venueId: z.string().nullable(),
  bounds: z.tuple([finite, finite, finite, finite]),
  durationSeconds: finite.nonnegative(),
  /** Segments accumulated so far (segments left out of the match are not counted). */
  segments: z.number().int().positive().optional(),
  /** Analysed frames accumulated so far (absent in carries written before it). */
  analysedFrames: z.number().int().nonnegative().optional(),
  players: z.array(
    z.object({
      trackId: z.number().int().positive(),
      class: z.string(),
      onPitch: z.boolean().nullable(),
      frames: z.number().int().nonnegative(),
      durationSeconds: finite.nonnegative(),
      distance: finite.nullable(),
      maxSpeed: finite.nullable(),
      sprints: z.number().int().nullable(),
      sprintDistance: finite.nullable(),
      /** Positions in a penalty area / along a touchline, for the role (pitch metres only; absent in older carries). */
      zones: z
        .object({
          frames: z.number().int().nonnegative(),
          penaltyArea: z.number().int().nonnegative(),
          touchline: z.number().int().nonnegative(),
        })
        .optional(),
    }),
  ),
  samples: z.array(z.object({ trackId: z.number().int().positive(), rgb: z.array(rgb).max(SAMPLES_PER_TRACK) })),
  teamColours: z.object({ A: rgb.nullable(), B: rgb.nullable() }),
  grid: z.object({
    columns: z.number().int().positive(),
    rows: z.number().int().positive(),
    cellSize: finite.positive(),
    all: z.array(finite),
    A: z.array(finite),
    B: z.array(finite),
  }),
});
export type MatchAnalyticsCarry = z.output<typeof matchAnalyticsCarrySchema>;

/** The match-level `summary.json` (format `polyvision.match-analytics`). */
export interface MatchAnalyticsSummary {
  format: 'polyvision.match-analytics';
  version: 1;
  unit: 'm' | 'px';
  venueId: string | null;
  bounds: [number, number, number, number];
  /** Match time analysed so far, seconds. */
  durationSeconds: number;
  /** Segments accumulated, and whether the last one was the match's final segment. */
  segments: number;
  final: boolean;
  /**
   * Each team's colour, track ids and players per analysed frame (the mean over the match: the
   * team's tracked frames / the analysed frames; a track id count says nothing of team sizes, since
   * one player may have several tracks over a match), and whether those sizes look balanced
   * (`teamBalance`); the sizes are absent when the frames were not counted (an older carry).
   */
  teams: {
    A: { colour: number[] | null; players: number[]; playersPerFrame?: number };
    B: { colour: number[] | null; players: number[]; playersPerFrame?: number };
    balanced?: boolean;
  };
  players: PlayerSummary[];
  heatmaps: Record<string, string>;
}

const round = (v: number, digits = 2) => Math.round(v * 10 ** digits) / 10 ** digits;
const add = (a: number[], b: Float64Array | number[]) => a.map((v, i) => v + (b[i] ?? 0));

/**
 * Adds one segment's analysis (`runAnalyze`'s `collect`) to the match totals: per-track sums
 * (distance, time, sprints; top speed the maximum; mean speed = distance / time; positions in a
 * penalty area and along a touchline, for the role over the whole match), teams re-clustered
 * over the match's colour samples with A/B kept on the side of the carried colours, occupancy grids
 * summed (a segment adds to a team's grid with the labels the match has at that segment).
 *
 * @param carried - the previous segment's carry; null for the first segment.
 */
export function accumulateMatchAnalytics(
  carried: MatchAnalyticsCarry | null,
  segment: AnalyzeCollected,
): { carry: MatchAnalyticsCarry; teams: Map<number, TeamLabel> } {
  const { summary, space } = segment;
  const players = new Map((carried?.players ?? []).map((p) => [p.trackId, { ...p }]));
  const sum = (a: number | null, b: number | null) => (a === null || b === null ? (a ?? b) : a + b);
  for (const p of summary.players) {
    const before = players.get(p.trackId);
    const positions = segment.positions.get(p.trackId);
    const zones = space.kind === 'pitch' && positions ? zoneFrames(positions, space.bounds) : null;
    if (!before) {
      players.set(p.trackId, {
        trackId: p.trackId,
        class: p.class,
        onPitch: p.onPitch,
        frames: p.frames,
        durationSeconds: p.durationSeconds,
        distance: p.distance,
        maxSpeed: p.maxSpeed,
        sprints: p.sprints,
        sprintDistance: p.sprintDistance,
        ...(zones ? { zones } : {}),
      });
      continue;
    }
    const summed = addZoneFrames(before.zones, zones);
    if (summed) before.zones = summed;
    before.class = p.frames > before.frames ? p.class : before.class;
    before.onPitch = before.onPitch === null ? p.onPitch : before.onPitch || p.onPitch === true;
    before.frames += p.frames;
    before.durationSeconds += p.durationSeconds;
    before.distance = sum(before.distance, p.distance);
    before.maxSpeed =
      before.maxSpeed === null || p.maxSpeed === null
        ? (before.maxSpeed ?? p.maxSpeed)
        : Math.max(before.maxSpeed, p.maxSpeed);
    before.sprints = sum(before.sprints, p.sprints);
    before.sprintDistance = sum(before.sprintDistance, p.sprintDistance);
  }
  const samples = new Map<number, [number, number, number][]>(
    (carried?.samples ?? []).map((s) => [s.trackId, s.rgb as [number, number, number][]]),
  );
  for (const [id, list] of segment.samples) {
    samples.set(id, [...(samples.get(id) ?? []), ...list].slice(-SAMPLES_PER_TRACK));
  }
  const playerIds = [...players.values()]
    .filter((p) => p.class === 'player' && p.onPitch !== false)
    .map((p) => p.trackId);
  const assigned = assignTeams(samples, [...players.keys()], { playerIds });
  let teams = assigned.teams;
  let colours = { A: assigned.colours.A ?? null, B: assigned.colours.B ?? null };
  const was = carried?.teamColours;
  if (was?.A && was.B && colours.A && colours.B) {
    const d = (x: number[], y: number[]) => Math.hypot(x[0]! - y[0]!, x[1]! - y[1]!, x[2]! - y[2]!);
    if (d(colours.A, was.B) + d(colours.B, was.A) < d(colours.A, was.A) + d(colours.B, was.B)) {
      const swap: Record<TeamLabel, TeamLabel> = { A: 'B', B: 'A', other: 'other' };
      teams = new Map([...teams].map(([id, t]) => [id, swap[t]]));
      colours = { A: colours.B, B: colours.A };
    }
  }
  const cellSize = carried?.grid.cellSize ?? segment.cellSize;
  const gridOf = (filter: (id: number) => boolean) =>
    occupancyGrid(
      summary.players
        .filter((p) => filter(p.trackId) && p.class !== 'referee' && segment.onPitch.get(p.trackId) !== false)
        .flatMap((p) => segment.positions.get(p.trackId) ?? []),
      space,
      segment.fps,
      cellSize,
    );
  const all = gridOf(() => true);
  const empty = () => new Array<number>(all.columns * all.rows).fill(0);
  const grid = {
    columns: all.columns,
    rows: all.rows,
    cellSize,
    all: add(carried?.grid.all ?? empty(), all.seconds),
    A: add(carried?.grid.A ?? empty(), gridOf((id) => teams.get(id) === 'A').seconds),
    B: add(carried?.grid.B ?? empty(), gridOf((id) => teams.get(id) === 'B').seconds),
  };
  return {
    teams,
    carry: {
      unit: summary.unit,
      venueId: summary.venueId,
      bounds: summary.bounds,
      durationSeconds: round((carried?.durationSeconds ?? 0) + summary.durationSeconds),
      segments: (carried ? (carried.segments ?? 1) : 0) + 1,
      ...(carried && carried.analysedFrames === undefined
        ? {}
        : { analysedFrames: (carried?.analysedFrames ?? 0) + Math.round(summary.durationSeconds * segment.fps) }),
      players: [...players.values()].sort((a, b) => a.trackId - b.trackId),
      samples: [...samples].map(([trackId, list]) => ({ trackId, rgb: list })),
      teamColours: colours,
      grid,
    },
  };
}

/**
 * Writes the match-level analytics into `outputDir` (created): `summary.json`
 * ({@link MatchAnalyticsSummary}) and `heatmaps/all.png`, `heatmaps/team-A.png`, `heatmaps/team-B.png`.
 */
export async function writeMatchAnalytics(
  outputDir: string,
  carry: MatchAnalyticsCarry,
  teams: Map<number, TeamLabel>,
  space: AnalyzeCollected['space'],
  progress: { segments: number; final: boolean },
): Promise<MatchAnalyticsSummary> {
  await mkdir(join(outputDir, 'heatmaps'), { recursive: true });
  const heatmaps: Record<string, string> = {};
  for (const key of ['all', 'A', 'B'] as const) {
    const seconds = carry.grid[key];
    if (key !== 'all' && !seconds.some((v) => v > 0)) continue;
    heatmaps[key] = key === 'all' ? 'heatmaps/all.png' : `heatmaps/team-${key}.png`;
    const png = renderHeatmapPng(
      {
        columns: carry.grid.columns,
        rows: carry.grid.rows,
        cellSize: carry.grid.cellSize,
        seconds: Float64Array.from(seconds),
      },
      space,
      { cellSize: carry.grid.cellSize },
    );
    await writeFile(join(outputDir, heatmaps[key]!), png);
  }
  const players: PlayerSummary[] = carry.players.map((p) => ({
    trackId: p.trackId,
    class: p.class,
    team: teams.get(p.trackId) ?? 'other',
    role: roleOf(teams.get(p.trackId) ?? 'other', p.class, p.zones ?? null),
    onPitch: p.onPitch,
    frames: p.frames,
    durationSeconds: round(p.durationSeconds),
    distance: p.distance === null ? null : round(p.distance, 1),
    maxSpeed: p.maxSpeed === null ? null : round(p.maxSpeed),
    meanSpeed: p.distance === null || p.durationSeconds <= 0 ? null : round(p.distance / p.durationSeconds),
    sprints: p.sprints,
    sprintDistance: p.sprintDistance === null ? null : round(p.sprintDistance, 1),
  }));
  const summary: MatchAnalyticsSummary = {
    format: 'polyvision.match-analytics',
    version: 1,
    unit: carry.unit,
    venueId: carry.venueId,
    bounds: carry.bounds,
    durationSeconds: carry.durationSeconds,
    segments: progress.segments,
    final: progress.final,
    teams: matchTeams(carry, players),
    players,
    heatmaps,
  };
  await writeFile(join(outputDir, 'summary.json'), JSON.stringify(summary, null, 2));
  return summary;
}

/** The match summary's teams: colours, track ids and, when the frames were counted, players per frame and balance. */
export function matchTeams(carry: MatchAnalyticsCarry, players: PlayerSummary[]): MatchAnalyticsSummary['teams'] {
  const team = (label: 'A' | 'B') => {
    const members = players.filter((p) => p.team === label);
    const frames = carry.analysedFrames;
    return {
      colour: carry.teamColours[label],
      players: members.map((p) => p.trackId),
      ...(frames ? { playersPerFrame: round(members.reduce((n, p) => n + p.frames, 0) / frames, 1) } : {}),
    };
  };
  const A = team('A');
  const B = team('B');
  return A.playersPerFrame !== undefined && B.playersPerFrame !== undefined && carry.teamColours.A
    ? { A, B, balanced: teamBalance(A.playersPerFrame, B.playersPerFrame).balanced }
    : { A, B };
}
