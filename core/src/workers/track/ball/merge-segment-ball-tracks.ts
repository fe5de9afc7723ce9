import { PolyvisionError } from '@polyvision/shared';
import type { BallTrackFile } from './ball-track-format.ts';

type Summary = BallTrackFile['summary'];

/**
 * The match-level ball track from its segments' `ball-track.json` (issue #15 item 3 on a match job,
 * issue #18): one file on the match clock — frames renumbered `firstMatchFrame + frame`, times
 * `startS + t` (seconds) — whose summary counts every segment's own frames and candidates (the
 * counts summed; `coverage` and `keptCandidatesPerFrame` over the summed frames). Source size,
 * analysis rate and options are the first segment's; a segment's frames keep their own `t`, so a
 * rate that changed inside the match still reads right by time. Without `segment`: the result is
 * the match, not one of its segments.
 *
 * @param segments - the segments' ball tracks, any order; each must carry `segment` (the track
 *   stage writes it from 2026-11-29, session 16).
 * @throws PolyvisionError `ball_track_invalid` (not retriable) for an empty list, a file without
 *   `segment`, or two files of the same segment index.
 */
export function mergeSegmentBallTracks(segments: readonly BallTrackFile[]): BallTrackFile {
  if (segments.length === 0) throw new PolyvisionError('ball_track_invalid', 'no segment ball tracks to merge');
  const ordered = [...segments].sort((a, b) => (a.segment?.index ?? -1) - (b.segment?.index ?? -1));
  const frames: BallTrackFile['frames'] = [];
  let previous = -1;
  for (const file of ordered) {
    const seg = file.segment;
    if (!seg) {
      throw new PolyvisionError('ball_track_invalid', 'a ball track without `segment` is not a match segment');
    }
    if (seg.index === previous) throw new PolyvisionError('ball_track_invalid', `segment ${seg.index} given twice`);
    previous = seg.index;
    for (const f of file.frames) {
      frames.push({
        ...f,
        frame: seg.firstMatchFrame + f.frame,
        t: Math.round((seg.startS + f.t) * 1e6) / 1e6,
      });
    }
  }
  const { segment: _segment, ...first } = ordered[0]!;
  return { ...first, frames, summary: sumSummaries(ordered.map((s) => s.summary)) };
}

/** Counts summed; the two per-frame shares recomputed over the summed frames (4 decimals, as the tracker). */
function sumSummaries(parts: readonly Summary[]): Summary {
  const sum = (pick: (s: Summary) => number | undefined) => parts.reduce((n, s) => n + (pick(s) ?? 0), 0);
  const frames = sum((s) => s.frames);
  const lost = sum((s) => s.lost);
  const kept = sum((s) => s.keptCandidatesPerFrame * s.frames);
  const share = (n: number) => (frames > 0 ? Math.round((n / frames) * 1e4) / 1e4 : 0);
  return {
    frames,
    detected: sum((s) => s.detected),
    interpolated: sum((s) => s.interpolated),
    predicted: sum((s) => s.predicted),
    lost,
    coverage: share(frames - lost),
    candidates: sum((s) => s.candidates),
    keptCandidatesPerFrame: share(kept),
    rejected: {
      lowScore: sum((s) => s.rejected.lowScore),
      offPitch: sum((s) => s.rejected.offPitch),
      static: sum((s) => s.rejected.static),
      beyondTopK: sum((s) => s.rejected.beyondTopK),
    },
    tracklets: sum((s) => s.tracklets),
    followingPlayer: sum((s) => s.followingPlayer),
    stillTracklets: sum((s) => s.stillTracklets),
    chosenTracklets: sum((s) => s.chosenTracklets),
  };
}
