import { rename, rm, writeFile } from 'node:fs/promises';
import { PolyvisionError } from '@polyvision/shared';
import type { DetectionClass } from '../detect/detect-options.ts';
import type { DetectionsFile } from '../detect/detections-format.ts';
import type { BoxXyxy } from '../detect/geometry.ts';
import { ByteTracker, type ByteTrackOptions } from './byte-tracker.ts';
import { TRACKS_FORMAT, type Track, type TrackFrame, type TracksFile } from './tracks-format.ts';

/** Options of {@link trackDetections}. */
export interface TrackOptions extends ByteTrackOptions {
  /** Fill gaps up to this many frames by linear interpolation (0: never). @defaultValue 20 */
  interpolateGapFrames?: number;
  /** Tracks shorter than this many observed frames are dropped. @defaultValue 3 */
  minTrackFrames?: number;
  /**
   * The lost-track buffer scales with the analysis rate as in ByteTrack
   * (`int(fps / 30 · track_buffer)`) unless `lostTrackBufferFrames` is given.
   */
  lostTrackBufferAt30Fps?: number;
  /** Association box scale for the ball (small and fast; see `ByteTrackOptions.associationBoxScale`). @defaultValue 8 */
  ballAssociationBoxScale?: number;
}

/**
 * Tracks every class of a detections file with its own ByteTracker (players
 * never swap ids with the ball); ids are unique over the whole file.
 * Pure and deterministic: the same detections give the same tracks.
 *
 * @param signal - checked between frames.
 * @param onProgress - share of frames done, in [0, 1].
 */
export function trackDetections(
  detections: DetectionsFile,
  options: TrackOptions = {},
  signal?: AbortSignal,
  onProgress?: (fraction: number) => void,
): TracksFile {
  const fps = detections.header.analysisFps;
  const lostTrackBufferFrames =
    options.lostTrackBufferFrames ?? Math.max(1, Math.round((fps / 30) * (options.lostTrackBufferAt30Fps ?? 30)));
  const trackerOptions: ByteTrackOptions = { ...options, lostTrackBufferFrames };
  const classes = [...new Set(detections.frames.flatMap((f) => f.detections.map((d) => d.class)))].sort();
  const tracks: Track[] = [];
  let nextId = 1;
  const total = detections.frames.length * Math.max(1, classes.length);
  let done = 0;
  for (const cls of classes) {
    const tracker = new ByteTracker(
      cls === 'ball'
        ? {
            ...trackerOptions,
            associationBoxScale: options.ballAssociationBoxScale ?? trackerOptions.associationBoxScale ?? 8,
          }
        : trackerOptions,
      nextId,
    );
    const byId = new Map<number, TrackFrame[]>();
    for (const frame of detections.frames) {
      signal?.throwIfAborted();
      const own = frame.detections.filter((d) => d.class === cls);
      for (const out of tracker.update(own)) {
        let list = byId.get(out.trackId);
        if (!list) {
          list = [];
          byId.set(out.trackId, list);
        }
        list.push({
          frame: frame.frame,
          tMs: frame.tMs,
          box: out.box.map(round1) as BoxXyxy,
          score: round4(out.score),
        });
      }
      done += 1;
      if (done % 50 === 0) onProgress?.(done / total);
    }
    nextId = tracker.nextId;
    for (const [id, frames] of byId) {
      if (frames.length < (options.minTrackFrames ?? 3)) continue;
      tracks.push({
        id,
        class: cls as DetectionClass,
        frames: interpolate(frames, options.interpolateGapFrames ?? 20, fps),
      });
    }
  }
  tracks.sort((a, b) => a.id - b.id);
  // Renumber 1..n after dropping short tracks, so ids stay dense and stable.
  tracks.forEach((t, i) => {
    t.id = i + 1;
  });
  onProgress?.(1);
  return {
    format: TRACKS_FORMAT,
    version: 1,
    detections: detections.header,
    tracker: { name: 'bytetrack', options: { ...trackerOptions } },
    frameCount: detections.frames.length,
    tracks,
  };
}

function interpolate(frames: TrackFrame[], maxGap: number, fps: number): TrackFrame[] {
  if (maxGap <= 0) return frames;
  const out: TrackFrame[] = [];
  for (let i = 0; i < frames.length; i++) {
    const a = frames[i]!;
    out.push(a);
    const b = frames[i + 1];
    if (!b) continue;
    const gap = b.frame - a.frame;
    if (gap <= 1 || gap > maxGap + 1) continue;
    for (let k = 1; k < gap; k++) {
      const f = k / gap;
      out.push({
        frame: a.frame + k,
        tMs: Math.round(((a.frame + k) * 1000 * 1000) / fps) / 1000,
        box: a.box.map((v, j) => round1(v + (b.box[j]! - v) * f)) as BoxXyxy,
        score: 0,
        interpolated: true,
      });
    }
  }
  return out;
}

const round1 = (v: number) => Math.round(v * 10) / 10;
const round4 = (v: number) => Math.round(v * 1e4) / 1e4;

/**
 * Writes a tracks file atomically (temporary name, then rename).
 *
 * @throws PolyvisionError `no_tracks` (not retriable) when `failOnZeroTracks` and there is no track.
 */
export async function writeTracksFile(path: string, tracks: TracksFile, failOnZeroTracks = true): Promise<void> {
  if (failOnZeroTracks && tracks.tracks.length === 0) {
    throw new PolyvisionError(
      'no_tracks',
      `no track lasted ${tracks.frameCount > 0 ? 'long enough' : 'a frame'} in ${tracks.frameCount} frames: nothing to follow`,
    );
  }
  const temporary = `${path}.${process.pid}.${Date.now()}.part`;
  try {
    await writeFile(temporary, JSON.stringify(tracks));
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}
