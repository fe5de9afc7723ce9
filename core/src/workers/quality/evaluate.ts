import type { TracksFile } from '../track/tracks-format.ts';
import { type ClearMetrics, clearMetrics } from './clear.ts';
import { type HotaMetrics, hotaMetrics } from './hota.ts';
import { type IdentityMetrics, identityMetrics } from './identity.ts';
import { buildSequence, type EvalSequence, type IdBox } from './sequence.ts';

/** HOTA, CLEAR (MOTA) and Identity (IDF1) metrics of one sequence. */
export type TrackingMetrics = HotaMetrics & ClearMetrics & IdentityMetrics;

/** All three TrackEval metric families on one sequence. */
export function evaluateTracking(seq: EvalSequence): TrackingMetrics {
  return { ...hotaMetrics(seq), ...clearMetrics(seq), ...identityMetrics(seq) };
}

/**
 * The boxes of a tracks file as `IdBox`es (analysed frame numbers from
 * `frameOffset`, e.g. 1 to compare with 1-based MOTChallenge ground truth).
 *
 * @param classes - only tracks of these classes. @defaultValue every class
 */
export function tracksToIdBoxes(tracks: TracksFile, frameOffset = 0, classes?: readonly string[]): IdBox[] {
  return tracks.tracks
    .filter((t) => !classes || classes.includes(t.class))
    .flatMap((t) => t.frames.map((f) => ({ frame: f.frame + frameOffset, id: t.id, box: f.box })));
}

export { buildSequence };
