import { histogramDistance } from '../detect/appearance.ts';
import type { CameraMotion } from '../detect/camera-motion.ts';
import { type BoxXyxy, iou } from '../detect/geometry.ts';
import { assignWithLimit } from './assignment.ts';
import { initiate, type KalmanState, predict, update, warp } from './kalman-filter.ts';

/** ByteTrack parameters (defaults: the paper's MOT17 settings). */
export interface ByteTrackOptions {
  /** Detections at or above this score are "high" (first association). @defaultValue 0.5 */
  highScoreThreshold?: number;
  /** Detections below this score are dropped; between this and high: second association. @defaultValue 0.1 */
  lowScoreThreshold?: number;
  /** A new track needs a detection at least this confident. @defaultValue 0.6 (high + 0.1) */
  newTrackThreshold?: number;
  /** First-association cost limit, on 1 − IoU·score. @defaultValue 0.8 */
  matchCostLimit?: number;
  /** Second-association (low-score boxes) cost limit, on 1 − IoU. @defaultValue 0.5 */
  secondMatchCostLimit?: number;
  /** Cost limit to confirm a tentative track. @defaultValue 0.7 */
  unconfirmedMatchCostLimit?: number;
  /** Frames a lost track is kept to be found again (occlusions). @defaultValue 30 */
  lostTrackBufferFrames?: number;
  /** Multiply IoU by the detection score in the first association (ByteTrack without `--mot20`). @defaultValue true */
  fuseScore?: boolean;
  /**
   * Boxes are enlarged by this factor around their centre before IoU is
   * computed for association (the buffer of C-BIoU, Yang et al., WACV 2023):
   * small fast objects such as the ball overlap their next position only when
   * buffered. @defaultValue 1 (plain IoU)
   */
  associationBoxScale?: number;
  /**
   * Which box a matched track reports: its `detection` (exact localisation) or
   * the Kalman-`filtered` box (smoother; ByteTrack's `tlwh`). @defaultValue 'detection'
   */
  outputBox?: 'detection' | 'filtered';
  /**
   * Appearance gate: in the first association (confident boxes) and when confirming, a track and
   * a box whose appearance features (`TrackerDetection.feature`) differ by more than this
   * (`histogramDistance`) are never paired — two players of different teams crossing keep their
   * ids. Boxes or tracks without a feature are not gated. @defaultValue 0.5
   */
  appearanceGate?: number;
  /** Weight of a track's old appearance in its running mean (BoT-SORT's EMA). @defaultValue 0.9 */
  appearanceMomentum?: number;
}

/** A detection handed to the tracker. */
export interface TrackerDetection {
  box: BoxXyxy;
  score: number;
  /** Appearance feature (e.g. `torsoHistogram`), L1-normalised; optional. */
  feature?: Float32Array | null;
}

/** A confirmed track's state in the current frame. */
export interface TrackerOutput {
  trackId: number;
  /** The matched detection's box, or the Kalman-corrected one (`outputBox`). */
  box: BoxXyxy;
  score: number;
  /** Index of the detection it was matched to in this frame. */
  detectionIndex: number;
}

type TrackState = 'tracked' | 'lost' | 'removed';

/** A {@link ByteTracker}'s state as JSON data (see `snapshot`); validated by `byteTrackerSnapshotSchema`. */
export interface ByteTrackerSnapshot {
  /** Frames the tracker has seen. */
  frame: number;
  /** The id the next confirmed track gets. */
  nextId: number;
  tracks: {
    /** 0 while tentative. */
    id: number;
    /** Kalman mean `[cx, cy, a, h, vcx, vcy, va, vh]` and 8×8 covariance. */
    mean: number[];
    covariance: number[][];
    state: 'tracked' | 'lost';
    confirmed: boolean;
    score: number;
    /** Frame (tracker count) of its last match. */
    lastFrame: number;
    detectionBox: BoxXyxy;
    feature: number[] | null;
  }[];
}

interface Track {
  id: number;
  kalman: KalmanState;
  state: TrackState;
  confirmed: boolean;
  score: number;
  lastFrame: number;
  detectionIndex: number;
  detectionBox: BoxXyxy;
  /** Running mean of the matched boxes' features. */
  feature: Float32Array | null;
}

const toMeasurement = (b: BoxXyxy) => {
  const w = b[2] - b[0];
  const h = b[3] - b[1];
  return [b[0] + w / 2, b[1] + h / 2, w / h, h];
};

const toBox = (mean: readonly number[]): BoxXyxy => {
  const [cx, cy, a, h] = mean as [number, number, number, number];
  const w = a * h;
  return [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2];
};

/**
 * ByteTrack (Zhang et al., "ByteTrack: Multi-Object Tracking by Associating
 * Every Detection Box", ECCV 2022; reference `byte_tracker.py`):
 * 1. predict every tracked and lost track with a constant-velocity Kalman filter;
 * 2. associate high-score detections to them (Hungarian on 1 − IoU·score);
 * 3. associate the low-score detections to the still unmatched tracked ones
 *    (Hungarian on 1 − IoU) — occluded players keep their ids through weak boxes;
 * 4. confirm tentative tracks, start tentative tracks from unmatched
 *    confident detections, forget tracks lost for longer than the buffer.
 *
 * Ids are given when a track is confirmed (its second matched frame, or the
 * first frame of the sequence), so they count up without gaps.
 */
export class ByteTracker {
  readonly #o: Required<ByteTrackOptions>;
  #frame = 0;
  #nextId: number;
  #tracks: Track[] = [];

  /** @param firstId - the id of the first track (to keep ids unique across several trackers). */
  constructor(options: ByteTrackOptions = {}, firstId = 1) {
    const high = options.highScoreThreshold ?? 0.5;
    this.#o = {
      highScoreThreshold: high,
      lowScoreThreshold: options.lowScoreThreshold ?? 0.1,
      newTrackThreshold: options.newTrackThreshold ?? high + 0.1,
      matchCostLimit: options.matchCostLimit ?? 0.8,
      secondMatchCostLimit: options.secondMatchCostLimit ?? 0.5,
      unconfirmedMatchCostLimit: options.unconfirmedMatchCostLimit ?? 0.7,
      lostTrackBufferFrames: options.lostTrackBufferFrames ?? 30,
      fuseScore: options.fuseScore ?? true,
      associationBoxScale: options.associationBoxScale ?? 1,
      outputBox: options.outputBox ?? 'detection',
      appearanceGate: options.appearanceGate ?? 0.5,
      appearanceMomentum: options.appearanceMomentum ?? 0.9,
    };
    this.#nextId = firstId;
  }

  /** The id the next confirmed track will get. */
  get nextId(): number {
    return this.#nextId;
  }

  /**
   * The tracker's whole state after the last `update` — frame counter, id counter, every live
   * track (tracked, lost or tentative) with its Kalman mean and covariance and appearance — as
   * plain JSON data. {@link ByteTracker.restore} continues from it exactly as if the frames had
   * kept coming to this instance (the carry of a match's track stage from segment to segment).
   */
  snapshot(): ByteTrackerSnapshot {
    return {
      frame: this.#frame,
      nextId: this.#nextId,
      tracks: this.#tracks.map((t) => ({
        id: t.id,
        mean: [...t.kalman.mean],
        covariance: t.kalman.covariance.map((row) => [...row]),
        state: t.state === 'lost' ? 'lost' : 'tracked',
        confirmed: t.confirmed,
        score: t.score,
        lastFrame: t.lastFrame,
        detectionBox: [...t.detectionBox] as BoxXyxy,
        feature: t.feature ? [...t.feature] : null,
      })),
    };
  }

  /** A tracker with `options` that continues from a {@link ByteTracker.snapshot}. */
  static restore(options: ByteTrackOptions, snapshot: ByteTrackerSnapshot): ByteTracker {
    const tracker = new ByteTracker(options, snapshot.nextId);
    tracker.#frame = snapshot.frame;
    tracker.#tracks = snapshot.tracks.map((t) => ({
      id: t.id,
      kalman: { mean: [...t.mean], covariance: t.covariance.map((row) => [...row]) },
      state: t.state,
      confirmed: t.confirmed,
      score: t.score,
      lastFrame: t.lastFrame,
      detectionIndex: -1,
      detectionBox: [...t.detectionBox] as BoxXyxy,
      feature: t.feature ? Float32Array.from(t.feature) : null,
    }));
    return tracker;
  }

  /**
   * Advances one frame with its detections; returns the confirmed tracks seen in this frame.
   *
   * @param cameraMotion - the camera's motion since the previous frame (`camera-motion.ts`, source px):
   *   every track's predicted state is moved with it before association (`warp`), so a pan does
   *   not carry the players' predicted boxes away from them. Absent: the camera stood still.
   */
  update(detections: readonly TrackerDetection[], cameraMotion?: CameraMotion): TrackerOutput[] {
    this.#frame += 1;
    const frame = this.#frame;
    const o = this.#o;
    const indexed = detections.map((d, index) => ({ ...d, index }));
    const high = indexed.filter((d) => d.score >= o.highScoreThreshold);
    const low = indexed.filter((d) => d.score > o.lowScoreThreshold && d.score < o.highScoreThreshold);

    const live = this.#tracks.filter((t) => t.state !== 'removed');
    const unconfirmed = live.filter((t) => t.state === 'tracked' && !t.confirmed);
    const pool = live.filter((t) => t.confirmed);
    for (const t of pool) {
      if (t.state !== 'tracked') t.kalman.mean[7] = 0; // ByteTrack: no height velocity while lost
      t.kalman = predict(t.kalman);
    }
    for (const t of unconfirmed) t.kalman = predict(t.kalman);
    if (cameraMotion) for (const t of [...pool, ...unconfirmed]) t.kalman = warp(t.kalman, cameraMotion);

    const apply = (t: Track, d: (typeof indexed)[number]) => {
      t.kalman = update(t.kalman, toMeasurement(d.box));
      t.state = 'tracked';
      t.score = d.score;
      t.lastFrame = frame;
      t.detectionIndex = d.index;
      t.detectionBox = d.box;
      if (d.feature) {
        if (!t.feature) t.feature = Float32Array.from(d.feature);
        else {
          const m = o.appearanceMomentum;
          let sum = 0;
          for (let i = 0; i < t.feature.length; i++) {
            t.feature[i] = m * t.feature[i]! + (1 - m) * d.feature[i]!;
            sum += t.feature[i]!;
          }
          for (let i = 0; i < t.feature.length; i++) t.feature[i]! /= sum;
        }
      }
    };

    // 1st association: high-score boxes with every confirmed track (tracked or lost).
    const first = assignWithLimit(
      this.#costs(pool, high, o.fuseScore, true),
      pool.length,
      high.length,
      o.matchCostLimit,
    );
    for (const [ti, di] of first.matches) apply(pool[ti]!, high[di]!);

    // 2nd association: low-score boxes with the tracked ones still unmatched.
    const remaining = first.unmatchedRows.map((i) => pool[i]!).filter((t) => t.state === 'tracked');
    const second = assignWithLimit(
      this.#costs(remaining, low, false),
      remaining.length,
      low.length,
      o.secondMatchCostLimit,
    );
    for (const [ti, di] of second.matches) apply(remaining[ti]!, low[di]!);
    for (const i of second.unmatchedRows) remaining[i]!.state = 'lost';

    // Tentative tracks against the high-score boxes left over.
    const leftover = first.unmatchedColumns.map((i) => high[i]!);
    const third = assignWithLimit(
      this.#costs(unconfirmed, leftover, o.fuseScore, true),
      unconfirmed.length,
      leftover.length,
      o.unconfirmedMatchCostLimit,
    );
    for (const [ti, di] of third.matches) {
      const t = unconfirmed[ti]!;
      apply(t, leftover[di]!);
      t.confirmed = true;
      t.id = this.#nextId++;
    }
    for (const i of third.unmatchedRows) unconfirmed[i]!.state = 'removed';

    // New tentative tracks (confirmed at once on the very first frame).
    for (const di of third.unmatchedColumns) {
      const d = leftover[di]!;
      if (d.score < o.newTrackThreshold) continue;
      const confirmed = frame === 1;
      this.#tracks.push({
        id: confirmed ? this.#nextId++ : 0,
        kalman: initiate(toMeasurement(d.box)),
        state: 'tracked',
        confirmed,
        score: d.score,
        lastFrame: frame,
        detectionIndex: d.index,
        detectionBox: d.box,
        feature: d.feature ? Float32Array.from(d.feature) : null,
      });
    }

    for (const t of this.#tracks) {
      if (t.state === 'lost' && frame - t.lastFrame > o.lostTrackBufferFrames) t.state = 'removed';
    }
    this.#tracks = this.#tracks.filter((t) => t.state !== 'removed');
    return this.#tracks
      .filter((t) => t.confirmed && t.state === 'tracked' && t.lastFrame === frame)
      .map((t) => ({
        trackId: t.id,
        box: o.outputBox === 'detection' ? t.detectionBox : toBox(t.kalman.mean),
        score: t.score,
        detectionIndex: t.detectionIndex,
      }));
  }

  #costs(
    tracks: readonly Track[],
    detections: readonly TrackerDetection[],
    fuseScore: boolean,
    gateAppearance = false,
  ): number[][] {
    const k = this.#o.associationBoxScale;
    const grow = (b: BoxXyxy): BoxXyxy => {
      if (k === 1) return b;
      const hw = ((b[2] - b[0]) * k) / 2;
      const hh = ((b[3] - b[1]) * k) / 2;
      const cx = (b[0] + b[2]) / 2;
      const cy = (b[1] + b[3]) / 2;
      return [cx - hw, cy - hh, cx + hw, cy + hh];
    };
    const grown = detections.map((d) => grow(d.box));
    return tracks.map((t) => {
      const box = grow(toBox(t.kalman.mean));
      return detections.map((d, j) => {
        if (
          gateAppearance &&
          t.feature &&
          d.feature &&
          histogramDistance(t.feature, d.feature) > this.#o.appearanceGate
        ) {
          return 2; // above every cost limit: never paired
        }
        return 1 - iou(box, grown[j]!) * (fuseScore ? d.score : 1);
      });
    });
  }
}
