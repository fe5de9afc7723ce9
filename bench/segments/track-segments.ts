import {
  type BallTrackFile,
  mergeSegmentTracks,
  type TrackCarry,
  type TrackOptions,
  type TracksFile,
  trackClip,
} from '../../core/src/workers/track/index.ts';
import type { DetectionsSegment } from './split-detections.ts';

/** A match's segments tracked one after another, as the track stage runs them. */
export interface TrackedSegments {
  /** The match-level tracks (`mergeSegmentTracks`). */
  tracks: TracksFile;
  /** Each segment's ball track, in order (frames numbered from 0 in each). */
  ballTracks: BallTrackFile[];
  /** Wall time of the tracking, ms. */
  ms: number;
}

/**
 * Tracks `segments` in order with the track stage's code (`trackClip`):
 * - `carry`: each segment continues from the previous one's `track-carry` (people and ball);
 * - no carry (every segment its own job, as ingest made them before match jobs): a fresh tracker per
 *   segment, person ids made disjoint per segment (+100 000 · index) so that none is shared by chance.
 */
export function trackSegments(
  segments: readonly DetectionsSegment[],
  options: TrackOptions,
  carry: boolean,
): TrackedSegments {
  const started = performance.now();
  const files: TracksFile[] = [];
  const ballTracks: BallTrackFile[] = [];
  let state: TrackCarry | null = null;
  let firstMatchFrame = 0;
  for (const s of segments) {
    const out = trackClip(s.detections, { ...options, segment: { carry: carry ? state : null } });
    state = out.carry;
    const file = out.tracks;
    if (!carry) for (const t of file.tracks) t.id = t.class === 'ball' ? t.id : t.id + s.index * 100_000;
    file.segment = { index: s.index, startS: s.startS, firstMatchFrame };
    firstMatchFrame += s.detections.frames.length;
    files.push(file);
    ballTracks.push(out.ballTrack);
  }
  return { tracks: mergeSegmentTracks(files), ballTracks, ms: performance.now() - started };
}
