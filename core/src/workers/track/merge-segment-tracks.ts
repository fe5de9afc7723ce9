import { PolyvisionError } from '@polyvision/shared';
import type { Track, TracksFile } from './tracks-format.ts';

/**
 * The match-level view of a match's per-segment tracks files (issue #18): one tracks file on the
 * match clock — frames renumbered `firstMatchFrame + frame`, times `startS · 1000 + tMs` — in
 * which a track is the union of the segment tracks with its id (ids are carried across segments
 * by the track stage, so an id is one person for the whole match). A track's class is the one
 * with the most frames. Header and tracker options are the first segment's.
 *
 * @param segments - the segments' tracks files, any order; each must carry `segment`.
 * @throws PolyvisionError `tracks_invalid` (not retriable) for an empty list, a file without
 *   `segment`, or two files of the same segment index.
 */
export function mergeSegmentTracks(segments: readonly TracksFile[]): TracksFile {
  if (segments.length === 0) throw new PolyvisionError('tracks_invalid', 'no segment tracks to merge');
  const ordered = [...segments].sort((a, b) => (a.segment?.index ?? -1) - (b.segment?.index ?? -1));
  const byId = new Map<number, { track: Track; classFrames: Map<Track['class'], number> }>();
  let frameCount = 0;
  let previous = -1;
  for (const file of ordered) {
    const seg = file.segment;
    if (!seg) throw new PolyvisionError('tracks_invalid', 'a tracks file without `segment` is not a match segment');
    if (seg.index === previous) throw new PolyvisionError('tracks_invalid', `segment ${seg.index} given twice`);
    previous = seg.index;
    frameCount = Math.max(frameCount, seg.firstMatchFrame + file.frameCount);
    for (const t of file.tracks) {
      let entry = byId.get(t.id);
      if (!entry) {
        entry = { track: { id: t.id, class: t.class, frames: [] }, classFrames: new Map() };
        byId.set(t.id, entry);
      }
      entry.classFrames.set(t.class, (entry.classFrames.get(t.class) ?? 0) + t.frames.length);
      for (const f of t.frames) {
        entry.track.frames.push({
          ...f,
          frame: seg.firstMatchFrame + f.frame,
          tMs: Math.round((seg.startS * 1000 + f.tMs) * 1000) / 1000,
        });
      }
    }
  }
  const tracks = [...byId.values()]
    .map(({ track, classFrames }) => ({
      ...track,
      class: [...classFrames].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0]![0],
    }))
    .sort((a, b) => a.id - b.id);
  const first = ordered[0]!;
  return {
    format: first.format,
    version: first.version,
    detections: first.detections,
    tracker: first.tracker,
    frameCount,
    tracks,
  };
}
