import type { TeamLabel } from './team-colours.ts';

/**
 * A person's role in the match: an outfield player of a team, a goalkeeper, the referee, an
 * assistant referee, or `unknown` (a shirt of neither team that nothing else places).
 */
export type Role = 'outfield' | 'goalkeeper' | 'referee' | 'assistant_referee' | 'unknown';

/** Positions (metres) counted where the roles part: in a penalty area, along a touchline. */
export interface ZoneFrames {
  /** Positions counted. */
  frames: number;
  /** Inside a penalty area, widened by {@link ZONE_MARGIN_M}. */
  penaltyArea: number;
  /** Within {@link TOUCHLINE_BAND_M} of a touchline, either side. */
  touchline: number;
}

/** The penalty area: 16.5 m from the goal line, 40.32 m wide (IFAB Laws of the Game, Law 1). */
const PENALTY_DEPTH_M = 16.5;
const PENALTY_HALF_WIDTH_M = 20.16;
/**
 * Slack around the penalty area: a goalkeeper steps up to the edge of his area and a little beyond
 * while his team attacks (tsukuba's right goalkeeper stood 17–18 m out for most of the clip).
 */
export const ZONE_MARGIN_M = 3;
/** An assistant referee runs along the touchline, on it or just outside. */
export const TOUCHLINE_BAND_M = 2.5;
/** Share of a person's positions in a zone that makes the zone their role's. */
export const ROLE_SHARE = 0.6;

/**
 * Counts `positions` (pitch metres, the venue frame: origin the centre spot) inside either penalty
 * area and along either touchline of the pitch `bounds` (`[−L/2, −W/2, L/2, W/2]`).
 */
export function zoneFrames(
  positions: readonly { x: number; y: number }[],
  bounds: readonly [number, number, number, number],
): ZoneFrames {
  const halfL = bounds[2];
  const halfW = bounds[3];
  let penaltyArea = 0;
  let touchline = 0;
  for (const { x, y } of positions) {
    if (Math.abs(x) >= halfL - PENALTY_DEPTH_M - ZONE_MARGIN_M && Math.abs(y) <= PENALTY_HALF_WIDTH_M + ZONE_MARGIN_M) {
      penaltyArea++;
    }
    if (Math.abs(y) >= halfW - TOUCHLINE_BAND_M) touchline++;
  }
  return { frames: positions.length, penaltyArea, touchline };
}

/** Adds two zone counts (a match's segments); null when neither was counted. */
export function addZoneFrames(a: ZoneFrames | null | undefined, b: ZoneFrames | null | undefined): ZoneFrames | null {
  if (!a || !b) return a ?? b ?? null;
  return {
    frames: a.frames + b.frames,
    penaltyArea: a.penaltyArea + b.penaltyArea,
    touchline: a.touchline + b.touchline,
  };
}

/**
 * The role of a tracked person from their team, the detector's class and, in pitch metres, where
 * they were. A team's shirt is an outfield player. A shirt of neither team (`other`) that spent at
 * least {@link ROLE_SHARE} of its positions in a penalty area is a goalkeeper, along a touchline an
 * assistant referee; otherwise the detector's class says goalkeeper or referee, else `unknown`.
 * Where goes first: on real frames the detector's goalkeeper and referee classes are unreliable
 * (real validation AP50 0.07 and 0.27), where a person stands over a match is not.
 *
 * @param zones - null without a pitch frame (image pixels): then the class alone.
 */
export function roleOf(team: TeamLabel, detectorClass: string, zones: ZoneFrames | null): Role {
  if (team === 'A' || team === 'B') return 'outfield';
  if (zones && zones.frames > 0) {
    if (zones.penaltyArea >= ROLE_SHARE * zones.frames) return 'goalkeeper';
    if (zones.touchline >= ROLE_SHARE * zones.frames) return 'assistant_referee';
  }
  if (detectorClass === 'goalkeeper') return 'goalkeeper';
  if (detectorClass === 'referee') return 'referee';
  return 'unknown';
}
