import { rename, rm, writeFile } from 'node:fs/promises';
import { PolyvisionError } from '@polyvision/shared';
import { type CameraMotion, invertCameraMotion, motionsToFirstFrame, moveBox } from '../detect/camera-motion.ts';
import type { DetectionClass } from '../detect/detect-options.ts';
import type { DetectionsFile } from '../detect/detections-format.ts';
import type { BoxXyxy } from '../detect/geometry.ts';
import type { AppearanceFeatures } from './appearance-features.ts';
import type { BallTrackFile } from './ball/ball-track-format.ts';
import type { BallTrackOptions } from './ball/ball-tracker.ts';
import { ballTrackFromDetections } from './ball/track-ball-detections.ts';
import { ByteTracker, type ByteTrackOptions } from './byte-tracker.ts';
import type { PitchRegion } from './pitch-region.ts';
import { calibrateScoreThresholds, personScores, type ScoreThresholds } from './score-thresholds.ts';
import type { TrackCarry } from './tracker-carry.ts';
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
  /**
   * The detector's own thresholds (its model card's `tracker: {high, low}`); used unless
   * `highScoreThreshold` is given. Without either, they are calibrated on the clip
   * (`calibrateScoreThresholds`).
   */
  modelCardThresholds?: { high: number; low: number };
  /**
   * The pitch (foot points, image px), from the venue calibration: person tracks whose every
   * observed foot point is off it (benches, coaches, spectators) are dropped, and ball candidates
   * off it are ignored.
   */
  pitchRegion?: PitchRegion;
  /**
   * Appearance features of the person boxes (`appearanceFeatures`): ByteTrack then never pairs a
   * track with a confident box of other colours (`ByteTrackOptions.appearanceGate`). Absent: motion only.
   */
  appearance?: AppearanceFeatures;
  /**
   * Move every track's prediction with the camera's motion the detections file carries per frame
   * (`FrameDetections.cameraMotion`; camera-motion compensation, `ByteTracker.update`). `false`:
   * ignore it (the baseline of bench/workers/camera-motion.ts). @defaultValue true
   */
  cameraMotion?: boolean;
  /** Options of the ball track (`trackBall`). */
  ball?: Omit<BallTrackOptions, 'fps' | 'frameWidthPx' | 'onPitch'>;
  /**
   * A segment of a match (issue #18): continue from the state the previous segment left
   * (`TrackedClip.carry`; null for the first segment). Ids then are the tracker's own, unique over
   * the match (not renumbered 1..n), the thresholds are the carried ones, and a track carried in
   * from earlier segments is kept however few frames it has in this one.
   */
  segment?: { carry: TrackCarry | null };
}

/** What {@link trackClip} produces: the tracks file and the ball track. */
export interface TrackedClip {
  tracks: TracksFile;
  ballTrack: BallTrackFile;
  /** The thresholds used, and where they came from. */
  thresholds: ScoreThresholds;
  /** Person tracks dropped because they never set foot on the pitch. */
  offPitchTracksDropped: number;
  /** The state to hand to the next segment of the match (`TrackOptions.segment`). */
  carry: TrackCarry;
}

/** ByteTrack thresholds for a clip: explicit options, else the model card, else a calibration pass. */
export function resolveScoreThresholds(detections: DetectionsFile, options: TrackOptions): ScoreThresholds {
  if (options.highScoreThreshold !== undefined) {
    return {
      high: options.highScoreThreshold,
      low: options.lowScoreThreshold ?? 0.1,
      source: 'options',
      samples: 0,
    };
  }
  if (options.modelCardThresholds) return { ...options.modelCardThresholds, source: 'model-card', samples: 0 };
  return calibrateScoreThresholds(personScores(detections));
}

/**
 * Tracks a detections file (see {@link trackClip}) and returns the tracks file only.
 */
export function trackDetections(
  detections: DetectionsFile,
  options: TrackOptions = {},
  signal?: AbortSignal,
  onProgress?: (fraction: number) => void,
): TracksFile {
  return trackClip(detections, options, signal, onProgress).tracks;
}

const PEOPLE = new Set(['player', 'goalkeeper', 'referee']);

/**
 * Tracks the people of a detections file with one ByteTracker — players, goalkeepers and referees
 * together, so a box whose class flickers between frames keeps its track; each track's class is
 * the one with the largest score sum over its boxes — and the ball with the ball tracker
 * (`trackBall`: one ball at most, short gaps interpolated), which also gives the tracks file its
 * single ball track (detected and interpolated frames, boxes of the median ball size).
 * Score thresholds: {@link resolveScoreThresholds}. Person tracks entirely off `pitchRegion` are
 * dropped. Ids are unique and dense (1..n, ordered by first appearance per tracker).
 * Pure and deterministic: the same detections give the same tracks.
 *
 * @param signal - checked between frames.
 * @param onProgress - share of frames done, in [0, 1].
 */
export function trackClip(
  detections: DetectionsFile,
  options: TrackOptions = {},
  signal?: AbortSignal,
  onProgress?: (fraction: number) => void,
): TrackedClip {
  const fps = detections.header.analysisFps;
  const lostTrackBufferFrames =
    options.lostTrackBufferFrames ?? Math.max(1, Math.round((fps / 30) * (options.lostTrackBufferAt30Fps ?? 30)));
  const carried = options.segment?.carry ?? null;
  const thresholds = carried ? carried.thresholds : resolveScoreThresholds(detections, options);
  const trackerOptions: ByteTrackOptions = {
    ...withoutExtras(options),
    highScoreThreshold: thresholds.high,
    lowScoreThreshold: thresholds.low,
    // ByteTrack starts tracks only above high + 0.1 (its MOT17 setting). A calibrated or model-card `high` is
    // already this detector's confident floor (the card's is chosen on held-out real matches), so tracks start
    // there: with + 0.1 (0.741 for player-detector 2.1) players scoring 0.64–0.74 never got a track — on the
    // tsukuba pair 14.3 → 18.6 tracked people per frame, synthetic demo clip HOTA 76.4 → 77.5 (bench/README § track).
    newTrackThreshold:
      options.newTrackThreshold ??
      (thresholds.source === 'calibration' || thresholds.source === 'model-card' ? thresholds.high : undefined),
    lostTrackBufferFrames,
    // ByteTrack's first-association cost 1 − IoU·score assumes MOT17-scale scores: with a detector
    // scoring real people 0.2–0.4 it exceeds the limit at any overlap. Fuse only with ByteTrack's
    // own thresholds (given by hand or too few scores to calibrate), not with a detector's.
    fuseScore: options.fuseScore ?? (thresholds.source === 'default' || thresholds.source === 'options'),
    // Players in a wide panorama are a few pixels wide and move a box width between analysed
    // frames: buffered IoU (C-BIoU, Yang et al., WACV 2023) and a first-association limit of
    // IoU ≥ 0.05 (cost 0.95) keep them matched. With appearance a track never takes a confident box
    // whose torso colours differ by more than 0.3 (1 − Bhattacharyya), which makes a wider buffer
    // (×2.5) safe: it finds players again after an occlusion; motion alone keeps ×1.5 (wider swaps
    // neighbours). Chosen on the synthetic demo clip as the demo stitches it, the rendered clips of
    // seeds 7 and 11 and the hand-labelled tsukuba-left frames (bench/README § track).
    associationBoxScale: options.associationBoxScale ?? (options.appearance ? 2.5 : 1.5),
    matchCostLimit: options.matchCostLimit ?? 0.95,
    appearanceGate: options.appearanceGate ?? 0.3,
  };
  const tracks: Track[] = [];
  const tracker = carried ? ByteTracker.restore(trackerOptions, carried.tracker) : new ByteTracker(trackerOptions, 1);
  const firstNewId = tracker.nextId;
  const byId = new Map<number, { frames: TrackFrame[]; classScores: Map<string, number> }>();
  const total = detections.frames.length;
  const useCameraMotion = options.cameraMotion !== false;
  // A segment's first frame has no motion measured (its previous frame is in the previous segment's
  // file): the camera is taken to go on moving as it did into the previous segment's last frame.
  const cameraMotionInto = (index: number) =>
    !useCameraMotion
      ? undefined
      : (detections.frames[index]!.cameraMotion ??
        (index === 0 && detections.header.cameraMotion ? carried?.cameraMotion : undefined));
  for (const [done, frame] of detections.frames.entries()) {
    signal?.throwIfAborted();
    const features = options.appearance?.get(done);
    const own = frame.detections
      .map((d, i) => ({ ...d, feature: features?.[i] ?? null }))
      .filter((d) => PEOPLE.has(d.class));
    for (const out of tracker.update(own, cameraMotionInto(done))) {
      let entry = byId.get(out.trackId);
      if (!entry) {
        entry = { frames: [], classScores: new Map() };
        byId.set(out.trackId, entry);
      }
      const detection = own[out.detectionIndex]!;
      entry.classScores.set(detection.class, (entry.classScores.get(detection.class) ?? 0) + out.score);
      entry.frames.push({
        frame: frame.frame,
        tMs: frame.tMs,
        box: out.box.map(round1) as BoxXyxy,
        score: round4(out.score),
        ...(detection.torso ? { torso: detection.torso } : {}),
      });
    }
    if ((done + 1) % 50 === 0) onProgress?.((0.9 * (done + 1)) / total);
  }
  let offPitchTracksDropped = 0;
  // Gaps are filled where the pitch stands still: in the first frame's pixels when the camera moved.
  const toFirstFrame = useCameraMotion ? motionsToFirstFrame(detections.frames) : null;
  const snapshot = tracker.snapshot();
  // A segment's young track still live at its end may go on in the next segment: kept, as the
  // whole clip would keep it (dropping it cut its first frames off and made the boundary an id switch).
  const liveAtEnd = new Set(options.segment ? snapshot.tracks.filter((t) => t.confirmed).map((t) => t.id) : []);
  for (const [id, entry] of byId) {
    if (entry.frames.length < (options.minTrackFrames ?? 3) && id >= firstNewId && !liveAtEnd.has(id)) continue;
    const region = options.pitchRegion;
    if (region && !entry.frames.some((f) => region((f.box[0] + f.box[2]) / 2, f.box[3]))) {
      offPitchTracksDropped += 1;
      continue;
    }
    const cls = [...entry.classScores].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0]![0];
    tracks.push({
      id,
      class: cls as DetectionClass,
      frames: interpolate(entry.frames, options.interpolateGapFrames ?? 20, fps, toFirstFrame),
    });
  }
  signal?.throwIfAborted();
  const people = new Map<number, { id: number; box: BoxXyxy }[]>();
  const position = new Map(detections.frames.map((f, i) => [f.frame, i]));
  for (const t of tracks) {
    for (const f of t.frames) {
      if (f.interpolated) continue;
      const i = position.get(f.frame)!;
      const list = people.get(i);
      if (list) list.push({ id: t.id, box: f.box });
      else people.set(i, [{ id: t.id, box: f.box }]);
    }
  }
  const { ballTrack, carry: ballCarry } = ballTrackFromDetections(detections, {
    people,
    ...options.ball,
    ...(options.pitchRegion ? { onPitch: options.pitchRegion } : {}),
    context: carried?.ball ?? null,
    toFirstFrame,
  });
  const ball = ballTrackAsTrack(ballTrack, detections);
  if (ball) tracks.push(ball);
  tracks.sort((a, b) => a.id - b.id);
  // Renumber 1..n after dropping short tracks, so ids stay dense and stable (a segment of a match
  // keeps the tracker's ids: they must mean the same person in the next segment).
  if (!options.segment) {
    tracks.forEach((t, i) => {
      t.id = i + 1;
    });
  }
  onProgress?.(1);
  return {
    tracks: {
      format: TRACKS_FORMAT,
      version: 1,
      detections: detections.header,
      tracker: {
        name: 'bytetrack',
        options: {
          ...trackerOptions,
          scoreThresholds: thresholds,
          pitchRegion: options.pitchRegion !== undefined,
          appearance: options.appearance !== undefined,
        },
      },
      frameCount: detections.frames.length,
      tracks,
    },
    ballTrack,
    thresholds,
    offPitchTracksDropped,
    carry: {
      tracker: snapshot,
      ball: ballCarry,
      thresholds,
      matchFrames: (carried?.matchFrames ?? 0) + detections.frames.length,
      analysisFps: fps,
      ...(useCameraMotion && detections.frames.at(-1)?.cameraMotion
        ? { cameraMotion: detections.frames.at(-1)!.cameraMotion }
        : {}),
    },
  };
}

/** The ball track's detected and interpolated frames as one `ball` track (id after every person). */
function ballTrackAsTrack(ballTrack: BallTrackFile, detections: DetectionsFile): Track | null {
  const sizes = detections.frames
    .flatMap((f) => f.detections.filter((d) => d.class === 'ball'))
    .map((d) => (d.box[2] - d.box[0] + d.box[3] - d.box[1]) / 2)
    .sort((a, b) => a - b);
  const half = (sizes[Math.floor(sizes.length / 2)] ?? 4) / 2;
  const frames: TrackFrame[] = ballTrack.frames.flatMap((f) =>
    (f.state === 'detected' || f.state === 'interpolated') && f.x !== null && f.y !== null
      ? [
          {
            frame: detections.frames[f.frame]!.frame,
            tMs: detections.frames[f.frame]!.tMs,
            box: [f.x - half, f.y - half, f.x + half, f.y + half].map(round1) as BoxXyxy,
            score: f.score,
            ...(f.state === 'interpolated' ? { interpolated: true } : {}),
          },
        ]
      : [],
  );
  return frames.length > 0 ? { id: Number.MAX_SAFE_INTEGER, class: 'ball', frames } : null;
}

function withoutExtras(options: TrackOptions): ByteTrackOptions {
  const {
    interpolateGapFrames: _i,
    minTrackFrames: _m,
    lostTrackBufferAt30Fps: _l,
    modelCardThresholds: _c,
    pitchRegion: _p,
    ball: _b,
    appearance: _a,
    segment: _s,
    cameraMotion: _cm,
    ...rest
  } = options;
  return rest;
}

/**
 * Fills gaps of at most `maxGap` frames by linear interpolation of the boxes — in the first frame's
 * pixels when the camera moved (`toFirstFrame`, per frame number), so a gap during a pan follows the
 * pitch, not a straight line across the picture.
 */
function interpolate(
  frames: TrackFrame[],
  maxGap: number,
  fps: number,
  toFirstFrame: ReadonlyMap<number, CameraMotion> | null,
): TrackFrame[] {
  if (maxGap <= 0) return frames;
  const toFirst = (frame: number, box: BoxXyxy) => {
    const motion = toFirstFrame?.get(frame);
    return motion ? moveBox(motion, box) : box;
  };
  const fromFirst = (frame: number, box: BoxXyxy) => {
    const motion = toFirstFrame?.get(frame);
    return motion ? moveBox(invertCameraMotion(motion), box) : box;
  };
  const out: TrackFrame[] = [];
  for (let i = 0; i < frames.length; i++) {
    const a = frames[i]!;
    out.push(a);
    const b = frames[i + 1];
    if (!b) continue;
    const gap = b.frame - a.frame;
    if (gap <= 1 || gap > maxGap + 1) continue;
    const from = toFirst(a.frame, a.box);
    const to = toFirst(b.frame, b.box);
    for (let k = 1; k < gap; k++) {
      const f = k / gap;
      const box = fromFirst(a.frame + k, from.map((v, j) => v + (to[j]! - v) * f) as BoxXyxy);
      out.push({
        frame: a.frame + k,
        tMs: Math.round(((a.frame + k) * 1000 * 1000) / fps) / 1000,
        box: box.map(round1) as BoxXyxy,
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
