import { kmeans } from 'ml-kmeans';
import type { RawFrame } from '../detect/frames/read-frames.ts';
import type { Track } from '../track/tracks-format.ts';

/** Team of a track: the two largest colour clusters are teams A and B; anything else is `other` (referees, keepers). */
export type TeamLabel = 'A' | 'B' | 'other';

/** The result of {@link assignTeams}. */
export interface TeamAssignment {
  /** Track id → team. Tracks without enough jersey pixels are `other`. */
  teams: Map<number, TeamLabel>;
  /** Mean jersey colour (RGB 0–255) of each team's cluster. */
  colours: Partial<Record<'A' | 'B', [number, number, number]>>;
}

/**
 * Collects jersey colour samples: for each track seen in `frame`, the mean
 * RGB of the torso (20–50 % of the box height, middle half of its width),
 * leaving out grass-green pixels.
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
  samples: Map<number, [number, number, number][]>,
): void {
  const { width, height, data } = frame;
  const sx = width / sourceWidth;
  for (const track of tracks) {
    if (track.class !== 'player' && track.class !== 'goalkeeper') continue;
    const f = track.frames.find((k) => k.frame === frameIndex && !k.interpolated);
    if (!f) continue;
    const [x1, y1, x2, y2] = f.box.map((v) => v * sx) as [number, number, number, number];
    const bw = x2 - x1;
    const bh = y2 - y1;
    const left = Math.max(0, Math.floor(x1 + bw * 0.25));
    const right = Math.min(width - 1, Math.ceil(x2 - bw * 0.25));
    const top = Math.max(0, Math.floor(y1 + bh * 0.2));
    const bottom = Math.min(height - 1, Math.ceil(y1 + bh * 0.5));
    let r = 0;
    let g = 0;
    let b = 0;
    let n = 0;
    for (let y = top; y <= bottom; y++) {
      for (let x = left; x <= right; x++) {
        const o = (y * width + x) * 3;
        const B = data[o]!;
        const G = data[o + 1]!;
        const R = data[o + 2]!;
        if (G > R + 15 && G > B + 15) continue; // grass
        r += R;
        g += G;
        b += B;
        n += 1;
      }
    }
    if (n < 4) continue;
    let list = samples.get(track.id);
    if (!list) {
      list = [];
      samples.set(track.id, list);
    }
    list.push([r / n, g / n, b / n]);
  }
}

/**
 * Splits tracks into teams by jersey colour: each track's median colour
 * sample, clustered by k-means (`ml-kmeans`, k-means++ seeded for
 * determinism) into 3 clusters (two teams and the rest: referees, keepers)
 * when there are at least 6 tracks and the three centroids are at least
 * `minClusterDistance` apart in RGB, else into 2. The two clusters holding the most tracks are teams
 * A and B, A being the one whose colour is brighter (stable labels across runs).
 */
export function assignTeams(
  samples: Map<number, [number, number, number][]>,
  allTrackIds: readonly number[],
  minClusterDistance = 60,
): TeamAssignment {
  const teams = new Map<number, TeamLabel>(allTrackIds.map((id) => [id, 'other']));
  const ids = [...samples.keys()].filter((id) => samples.get(id)!.length > 0).sort((a, b) => a - b);
  if (ids.length < 2) return { teams, colours: {} };
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const points = ids.map((id) => {
    const list = samples.get(id)!;
    return [0, 1, 2].map((c) => median(list.map((s) => s[c]!)));
  });
  // Three clusters (two teams + the rest) only when the third is a colour of its own.
  let result = kmeans(points, 2, { initialization: 'kmeans++', seed: 42 });
  if (ids.length >= 6) {
    const three = kmeans(points, 3, { initialization: 'kmeans++', seed: 42 });
    const c = three.centroids;
    const distance = (i: number, j: number) => Math.hypot(...c[i]!.map((v, d) => v - c[j]![d]!));
    if (Math.min(distance(0, 1), distance(0, 2), distance(1, 2)) >= minClusterDistance) result = three;
  }
  const k = result.centroids.length;
  const sizes = Array.from({ length: k }, (_, c) => result.clusters.filter((x) => x === c).length);
  const order = sizes.map((size, c) => ({ size, c })).sort((a, b) => b.size - a.size);
  const [first, second] = [order[0]!.c, order[1]!.c];
  const brightness = (c: number) => result.centroids[c]!.reduce((a, b) => a + b, 0);
  const [a, b] = brightness(first) >= brightness(second) ? [first, second] : [second, first];
  ids.forEach((id, i) => {
    const c = result.clusters[i];
    teams.set(id, c === a ? 'A' : c === b ? 'B' : 'other');
  });
  const rgb = (c: number) => result.centroids[c]!.map((v) => Math.round(v)) as [number, number, number];
  return { teams, colours: { A: rgb(a), B: rgb(b) } };
}
