import { kmeans } from 'ml-kmeans';
import { measureTorso, type Rgb } from '../detect/appearance.ts';
import type { RawFrame } from '../detect/frames/read-frames.ts';
import type { Track } from '../track/tracks-format.ts';

/** Team of a track: the two colour clusters of outfield players are A and B; referees, goalkeepers and colour outliers are `other`. */
export type TeamLabel = 'A' | 'B' | 'other';

/** The result of {@link assignTeams}. */
export interface TeamAssignment {
  /** Track id → team. Tracks without enough jersey pixels are `other`. */
  teams: Map<number, TeamLabel>;
  /** Mean jersey colour (RGB 0–255) of each team's cluster. */
  colours: Partial<Record<'A' | 'B', [number, number, number]>>;
}

/**
 * Collects jersey colour samples from a decoded frame: for each track seen in `frame`, the mean RGB
 * of the torso (`measureTorso`: 20–50 % of the box height, middle half of its width, grass-green
 * pixels left out).
 *
 * @param frame - a BGR frame, possibly decoded smaller than the source.
 * @param frameIndex - the analysed frame (of the tracks) it shows.
 * @param sourceWidth - the width the track boxes refer to.
 * @param samples - track id → list of mean colours (appended to).
 */
export function sampleJerseyColours(
  frame: RawFrame,
  frameIndex: number,
  sourceWidth: number,
  tracks: readonly Track[],
  samples: Map<number, Rgb[]>,
): void {
  const scale = frame.width / sourceWidth;
  for (const track of jerseyTracks(tracks)) {
    const f = track.frames.find((k) => k.frame === frameIndex && !k.interpolated);
    const colour = f && measureTorso(frame, f.box, scale).meanRgb;
    if (colour) addSample(samples, track.id, colour);
  }
}

/**
 * Collects the jersey colours the detect stage measured in the frames it analysed and the track stage
 * kept with each box (`TrackFrame.torso`, the same `measureTorso` mean): no video to decode.
 *
 * @param samples - track id → list of mean colours (appended to).
 * @param sampled - which analysed frames to take (all by default).
 */
export function storedJerseyColours(
  tracks: readonly Track[],
  samples: Map<number, Rgb[]>,
  sampled: (frame: number) => boolean = () => true,
): void {
  for (const track of jerseyTracks(tracks)) {
    for (const f of track.frames) {
      if (f.torso && !f.interpolated && sampled(f.frame)) addSample(samples, track.id, f.torso);
    }
  }
}

/** Tracks whose shirt says their team: players and goalkeepers (referees are apart by class). */
const jerseyTracks = (tracks: readonly Track[]) =>
  tracks.filter((t) => t.class === 'player' || t.class === 'goalkeeper');

function addSample(samples: Map<number, Rgb[]>, id: number, colour: Rgb): void {
  const list = samples.get(id);
  if (list) list.push(colour);
  else samples.set(id, [colour]);
}

/** Options of {@link assignTeams}. */
export interface TeamAssignmentOptions {
  /**
   * A track farther than this from its team's colour (RGB distance to the cluster's component-wise
   * median) — or than `outlierFactor` × the cluster's median distance, whichever is larger — is not of
   * that team: a goalkeeper the detector called a player, a referee, a mis-detected person. @defaultValue 60
   */
  minOutlierDistance?: number;
  /** @defaultValue 3 */
  outlierFactor?: number;
}

/**
 * Splits player tracks into two teams by jersey colour: each track's median colour sample,
 * clustered by k-means into 2 (`ml-kmeans`, k-means++ seeded for determinism); colour outliers of
 * each cluster (see {@link TeamAssignmentOptions}) are `other`. Team A is the brighter cluster
 * (stable labels across runs). Callers pass only the tracks that can be outfield players (class
 * `player`, on the pitch); referees and goalkeepers are `other` by class, never clustered.
 *
 * A team's colour and its outlier test are taken around the cluster's component-wise **median**,
 * not k-means' mean: a goalkeeper the detector labelled `player` falls into one of the two clusters
 * (the nearer), pulls its mean toward him and widens its spread, and a test around the mean kept him
 * in the team (the synthetic demo counted both goalkeepers in team A: 11.6 v 9.9 players per frame
 * for 10 v 10 outfield players). Around the median the ten outfield shirts stay within ~10–35 and the
 * goalkeepers fall out at ~85–90.
 *
 * @param samples - track id → colour samples (RGB); only ids in `playerIds` are clustered.
 * @param allTrackIds - every id that gets a label (`other` unless clustered).
 */
export function assignTeams(
  samples: Map<number, [number, number, number][]>,
  allTrackIds: readonly number[],
  options: TeamAssignmentOptions & { playerIds?: readonly number[] } = {},
): TeamAssignment {
  const teams = new Map<number, TeamLabel>(allTrackIds.map((id) => [id, 'other']));
  const allowed = options.playerIds ? new Set(options.playerIds) : null;
  const ids = [...samples.keys()]
    .filter((id) => samples.get(id)!.length > 0 && (allowed === null || allowed.has(id)))
    .sort((a, b) => a - b);
  if (ids.length < 2) return { teams, colours: {} };
  const points = ids.map((id) => {
    const list = samples.get(id)!;
    return [0, 1, 2].map((c) => median(list.map((s) => s[c]!)));
  });
  const result = kmeans(points, 2, { initialization: 'kmeans++', seed: 42 });
  const centres = [0, 1].map((c) => {
    const members = points.filter((_, i) => result.clusters[i] === c);
    return [0, 1, 2].map((d) => (members.length > 0 ? median(members.map((p) => p[d]!)) : 0));
  });
  const distanceTo = (i: number) => Math.hypot(...points[i]!.map((v, d) => v - centres[result.clusters[i]!]![d]!));
  const limit = [0, 1].map((c) => {
    const within = ids.flatMap((_, i) => (result.clusters[i] === c ? [distanceTo(i)] : []));
    const typical = within.length > 0 ? median(within) : 0;
    return Math.max(options.minOutlierDistance ?? 60, (options.outlierFactor ?? 3) * typical);
  });
  const brightness = (c: number) => centres[c]!.reduce((a, b) => a + b, 0);
  const [a, b] = brightness(0) >= brightness(1) ? [0, 1] : [1, 0];
  ids.forEach((id, i) => {
    const c = result.clusters[i]!;
    if (distanceTo(i) > limit[c]!) return; // a colour outlier: `other`
    teams.set(id, c === a ? 'A' : 'B');
  });
  const rgb = (c: number) => centres[c]!.map((v) => Math.round(v)) as [number, number, number];
  return { teams, colours: { A: rgb(a), B: rgb(b) } };
}

/** The median of `values` (upper median for an even count); sorts a copy. */
function median(values: readonly number[]): number {
  return [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!;
}
