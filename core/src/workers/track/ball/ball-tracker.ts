import { assignWithLimit } from '../assignment.ts';
import { type BallCandidate, type CandidateRejections, filterBallCandidates } from './ball-candidates.ts';
import { PointKalman, type PointState } from './ball-kalman.ts';

/** What the ball track knows in one analysed frame. */
export type BallState = 'detected' | 'predicted' | 'interpolated' | 'lost';

/** One analysed frame of the ball track. */
export interface BallFrame {
  frame: number;
  /** Presentation time of the analysed frame, seconds. */
  t: number;
  /** Ball centre, px (source/panorama pixels); null when `lost`. */
  x: number | null;
  y: number | null;
  state: BallState;
  /** The detection's score (`detected`), else 0. */
  score: number;
}

/** Options of {@link trackBall}. */
export interface BallTrackOptions {
  /** Analysed frames per second. */
  fps: number;
  /** Source width, px (sets the default speed bound). */
  frameWidthPx: number;
  /** Fastest plausible ball, px/s. @defaultValue 0.6 · frame width per second */
  maxSpeedPxPerS?: number;
  /**
   * The motion model's acceleration noise (σ of a white-noise acceleration), px/s². A ball rolling or
   * in flight changes speed little (friction, drag, gravity seen on the image: ≲ 16 m/s² on a pitch ~105 m
   * across 2 880 px); a kick is an impulse that no motion model follows at 10 analysed frames per second:
   * it ends the tracklet, and the path goes on in the next one (step 3 and interpolation stitch them).
   * A wider gate lets a tracklet take a false alarm whenever the ball is missed and follow it away.
   * @defaultValue 0.15 · frame width per s² (bench/README § the ball track across segments: the ball
   * positions right 0.49 → 0.78 of frames at 1.5 · width, the old default, on seed 7's simulated ball
   * detector; held-out seed 11 0.40 → 0.72)
   */
  accelerationPxPerS2?: number;
  /** Lowest candidate score. @defaultValue 0 */
  minScore?: number;
  /**
   * Whether a candidate's point lies on the pitch (venue calibration), with its analysed frame index
   * (context first); absent: everywhere.
   */
  onPitch?: (x: number, y: number, frame: number) => boolean;
  /** See `filterBallCandidates`. @defaultValue 1 */
  staticSeconds?: number;
  /** See `filterBallCandidates`. @defaultValue 10 */
  topKPerFrame?: number;
  /** Gate: χ² (2 degrees of freedom) of a candidate against a tracklet's prediction. @defaultValue 13.8 (99.9 %) */
  gateChi2?: number;
  /** Frames a tracklet may miss before it ends (coasting on its prediction). @defaultValue round(0.5 s · fps), ≥ 1 */
  maxMissFrames?: number;
  /** Shortest tracklet that can be the ball, in detections. @defaultValue 3 */
  minTrackletDetections?: number;
  /** Gaps between two chosen tracklets filled by interpolation, analysed frames. @defaultValue round(1 s · fps) */
  interpolateGapFrames?: number;
  /** Frames after a tracklet's last detection shown as `predicted` (when not interpolated). @defaultValue round(0.3 s · fps) */
  maxPredictFrames?: number;
  /**
   * The people's tracked boxes per analysed frame (`{id, box}`, source px). A tracklet whose
   * detections lie, for at least `followShare` of them, in the lower half of one and the same
   * person's box follows that player — a boot the detector takes for the ball, or the ball dribbled:
   * it is the ball only as a continuation of the path (a chosen tracklet that interpolation reaches
   * it from or to), never on its own. A real ball arrives at and leaves a player's feet.
   */
  people?: ReadonlyMap<number, readonly { id: number; box: readonly [number, number, number, number] }[]>;
  /** @defaultValue 0.8 */
  followShare?: number;
  /**
   * The first `contextFrames` frames are the previous segment's end (`BallCarry`, a match's segment
   * after the first): their candidates take part in the filter, the tracklets and the choice of the
   * path, but the frames returned and the summary's counts are the segment's own, numbered from 0.
   * @defaultValue 0
   */
  contextFrames?: number;
}

/** Counts of the ball track (`summary` of `ball-track.json`). */
export interface BallTrackSummary {
  frames: number;
  detected: number;
  interpolated: number;
  predicted: number;
  lost: number;
  /** Share of frames with a position (not `lost`). */
  coverage: number;
  candidates: number;
  /**
   * Candidates kept (after the rejections) per analysed frame. There is one ball: a detector
   * that leaves many per frame (boots, heads) makes the chosen path doubtful.
   */
  keptCandidatesPerFrame: number;
  rejected: CandidateRejections;
  tracklets: number;
  /** Tracklets that follow one player's feet (the ball only as a continuation of the path; see `BallTrackOptions.people`). */
  followingPlayer: number;
  /**
   * Tracklets left out as a ball at rest: every detection within max(2 px, 0.75 · median candidate size)
   * of their mean (a ball at rest seen in too few frames for the candidates' static test).
   */
  stillTracklets: number;
  chosenTracklets: number;
}

interface Tracklet {
  state: PointState;
  lastFrame: number;
  detections: BallCandidate[];
}

/**
 * The ball's path, at most one ball per frame, from the detector's ball candidates:
 * 1. candidates that cannot be the ball in play are left out (`filterBallCandidates`: low score,
 *    off the pitch, static, beyond the 10 best of their frame);
 * 2. tracklets: every remaining candidate joins a constant-velocity Kalman tracklet
 *    (`PointKalman`) by optimal assignment on the Mahalanobis distance, gated by χ² and by the
 *    fastest plausible ball; a tracklet ends after `maxMissFrames` frames without a candidate;
 * 3. the ball is the set of non-overlapping tracklets of at least `minTrackletDetections`
 *    detections, not at rest (`BallTrackSummary.stillTracklets`), with the largest total score
 *    (weighted interval scheduling, `heaviestDisjoint`); a tracklet that only follows one player's
 *    feet (`people`) is then added only where it overlaps none of them and interpolation reaches it
 *    from one of them (the ball arriving at or leaving a player: a dribble);
 * 4. per frame: `detected` on a chosen detection; `interpolated` (linear) inside a tracklet and
 *    across a gap of at most `interpolateGapFrames` between two chosen tracklets when the jump is
 *    no faster than the speed bound; `predicted` (constant velocity) for up to `maxPredictFrames`
 *    after a tracklet; `lost` otherwise.
 *
 * Offline (it sees the whole clip) and deterministic. A match's segment sees the previous segment's
 * last frames as context (`contextFrames`, `BallCarry`), so the path goes on across the boundary.
 *
 * @param frameTimesS - presentation time (s) of every analysed frame, index = frame (context first).
 */
export function trackBall(
  candidates: readonly BallCandidate[],
  frameTimesS: readonly number[],
  options: BallTrackOptions,
): { frames: BallFrame[]; summary: BallTrackSummary } {
  const fps = options.fps;
  const dt = 1 / fps;
  const maxSpeed = options.maxSpeedPxPerS ?? 0.6 * options.frameWidthPx;
  const maxMiss = options.maxMissFrames ?? Math.max(1, Math.round(0.5 * fps));
  const gateChi2 = options.gateChi2 ?? 13.8;
  const contextFrames = options.contextFrames ?? 0;
  const { kept, rejected } = filterBallCandidates(candidates, {
    fps,
    minScore: options.minScore,
    onPitch: options.onPitch,
    staticSeconds: options.staticSeconds,
    topKPerFrame: options.topKPerFrame,
    contextFrames,
  });
  const medianSize = median(kept.map((c) => c.sizePx)) ?? 4;
  const kalman = new PointKalman({
    measurementPx: Math.max(1, medianSize / 2),
    accelerationPxPerS2: options.accelerationPxPerS2 ?? 0.15 * options.frameWidthPx,
    initialSpeedPxPerS: maxSpeed / 2,
  });

  // 2. Tracklets, frame by frame.
  const byFrame = new Map<number, BallCandidate[]>();
  for (const c of kept) {
    const list = byFrame.get(c.frame);
    if (list) list.push(c);
    else byFrame.set(c.frame, [c]);
  }
  const finished: Tracklet[] = [];
  let live: Tracklet[] = [];
  for (let frame = 0; frame < frameTimesS.length; frame++) {
    const here = (byFrame.get(frame) ?? []).sort((a, b) => b.score - a.score || a.x - b.x);
    for (const t of live) t.state = kalman.predict(t.state, dt);
    const cost = live.map((t) =>
      here.map((c) => {
        const steps = frame - t.lastFrame;
        const last = t.detections.at(-1)!;
        const jump = Math.hypot(c.x - last.x, c.y - last.y);
        if (jump > maxSpeed * steps * dt + 2 * medianSize) return Number.POSITIVE_INFINITY;
        const d2 = kalman.mahalanobis2(t.state, c.x, c.y);
        return d2 <= gateChi2 ? d2 : Number.POSITIVE_INFINITY;
      }),
    );
    const finite = cost.map((row) => row.map((v) => (Number.isFinite(v) ? v : gateChi2 * 4)));
    const { matches, unmatchedColumns } = assignWithLimit(finite, live.length, here.length, gateChi2);
    for (const [ti, ci] of matches) {
      const t = live[ti]!;
      const c = here[ci]!;
      t.state = kalman.update(t.state, c.x, c.y);
      t.lastFrame = frame;
      t.detections.push(c);
    }
    for (const ci of unmatchedColumns) {
      const c = here[ci]!;
      live.push({ state: kalman.initiate(c.x, c.y), lastFrame: frame, detections: [c] });
    }
    const still: Tracklet[] = [];
    for (const t of live) (frame - t.lastFrame >= maxMiss ? finished : still).push(t);
    live = still;
  }
  finished.push(...live);

  // 3. The best set of non-overlapping tracklets.
  const minDetections = options.minTrackletDetections ?? 3;
  const followsOnePlayer = (t: Tracklet): boolean => {
    if (!options.people) return false;
    const counts = new Map<number, number>();
    for (const c of t.detections) {
      for (const p of options.people.get(c.frame) ?? []) {
        const [x1, y1, x2, y2] = p.box;
        const pad = Math.max(2, c.sizePx);
        if (c.x >= x1 - pad && c.x <= x2 + pad && c.y >= (y1 + y2) / 2 && c.y <= y2 + pad) {
          counts.set(p.id, (counts.get(p.id) ?? 0) + 1);
        }
      }
    }
    return Math.max(0, ...counts.values()) >= (options.followShare ?? 0.8) * t.detections.length;
  };
  const ownFrames = (t: Tracklet) => t.detections.at(-1)!.frame >= contextFrames;
  let followingPlayer = 0;
  // A tracklet whose detections never leave a small circle is a ball at rest (a spare ball by the touchline
  // that the detector sees in too few frames for the candidates' static test).
  const stillRadius = Math.max(2, 0.75 * medianSize);
  let still = 0;
  const eligible: PathStretch[] = finished
    .filter((t) => t.detections.length >= minDetections)
    .filter((t) => {
      const isStill = spreadPx(t.detections) <= stillRadius;
      if (isStill && ownFrames(t)) still += 1;
      return !isStill;
    })
    .map((t) => {
      const follows = followsOnePlayer(t);
      if (follows && ownFrames(t)) followingPlayer += 1;
      return {
        t,
        start: t.detections[0]!.frame,
        end: t.detections.at(-1)!.frame,
        weight: t.detections.reduce((s, c) => s + c.score, 0),
        follows,
      };
    });
  const interpolateGap = options.interpolateGapFrames ?? Math.round(fps);
  /**
   * Whether the path can go from tracklet `a` to the later `b` by interpolation: a gap of at most
   * `interpolateGap` frames, crossed no faster than the speed bound (steps 3 and 4).
   */
  const connects = (a: PathStretch, b: PathStretch): boolean => {
    const gap = b.start - a.end;
    if (gap < 1 || gap - 1 > interpolateGap) return false;
    const from = a.t.detections.at(-1)!;
    const to = b.t.detections[0]!;
    return Math.hypot(to.x - from.x, to.y - from.y) / (gap * dt) <= maxSpeed;
  };
  const chosen = heaviestDisjoint(eligible.filter((e) => !e.follows));
  // A tracklet on one player's boots is the ball only as a continuation of the path (a dribble): it joins
  // when it overlaps nothing chosen and connects to a chosen tracklet before or after it.
  const boots = eligible.filter((e) => e.follows).sort((a, b) => b.weight - a.weight);
  for (let added = true; added; ) {
    added = false;
    for (const [k, e] of boots.entries()) {
      if (chosen.some((c) => c.start <= e.end && e.start <= c.end)) continue;
      if (!chosen.some((c) => connects(c, e) || connects(e, c))) continue;
      chosen.push(e);
      boots.splice(k, 1);
      added = true;
      break;
    }
  }
  chosen.sort((a, b) => a.start - b.start);

  // 4. Per-frame states.
  const frames: BallFrame[] = frameTimesS.map((t, frame) => ({
    frame,
    t: round3(t),
    x: null,
    y: null,
    state: 'lost',
    score: 0,
  }));
  const set = (frame: number, x: number, y: number, state: BallState, score = 0) => {
    const f = frames[frame];
    if (!f) return;
    f.x = round1(x);
    f.y = round1(y);
    f.state = state;
    f.score = round4(score);
  };
  const maxPredict = options.maxPredictFrames ?? Math.round(0.3 * fps);
  const fill = (a: BallCandidate, b: BallCandidate) => {
    for (let f = a.frame + 1; f < b.frame; f++) {
      const k = (f - a.frame) / (b.frame - a.frame);
      set(f, a.x + (b.x - a.x) * k, a.y + (b.y - a.y) * k, 'interpolated');
    }
  };
  chosen.forEach((e, i) => {
    const dets = e.t.detections;
    dets.forEach((c, j) => {
      set(c.frame, c.x, c.y, 'detected', c.score);
      if (j > 0) fill(dets[j - 1]!, c);
    });
    const last = dets.at(-1)!;
    const following = chosen[i + 1];
    const next = following?.t.detections[0];
    if (following && next && connects(e, following)) {
      fill(last, next);
      return;
    }
    // Coast on the tracklet's velocity (from its last two detections' filtered state).
    const velocity = velocityOf(dets, dt);
    for (let k = 1; k <= maxPredict && last.frame + k < (next?.frame ?? frames.length); k++) {
      set(last.frame + k, last.x + velocity[0] * k * dt, last.y + velocity[1] * k * dt, 'predicted');
    }
  });

  // The segment's own frames, numbered from 0 (the context was only there to decide them).
  const own = frames.slice(contextFrames).map((f) => ({ ...f, frame: f.frame - contextFrames }));
  const count = (s: BallState) => own.filter((f) => f.state === s).length;
  const summary: BallTrackSummary = {
    frames: own.length,
    detected: count('detected'),
    interpolated: count('interpolated'),
    predicted: count('predicted'),
    lost: count('lost'),
    coverage: own.length > 0 ? round4(1 - count('lost') / own.length) : 0,
    candidates: candidates.filter((c) => c.frame >= contextFrames).length,
    keptCandidatesPerFrame:
      own.length > 0 ? round4(kept.filter((c) => c.frame >= contextFrames).length / own.length) : 0,
    rejected,
    tracklets: finished.filter(ownFrames).length,
    followingPlayer,
    stillTracklets: still,
    chosenTracklets: chosen.filter((e) => ownFrames(e.t)).length,
  };
  return { frames: own, summary };
}

/** A tracklet as a possible stretch of the ball's path. */
interface PathStretch {
  t: Tracklet;
  /** First and last detection's analysed frame. */
  start: number;
  end: number;
  /** Sum of its detections' scores. */
  weight: number;
  /** It follows one player's boots (`BallTrackOptions.people`). */
  follows: boolean;
}

/**
 * The set of tracklets that do not overlap in time with the largest total weight: weighted interval
 * scheduling by exact dynamic programming (Kleinberg & Tardos, "Algorithm Design", §6.1). Sorted by end.
 */
function heaviestDisjoint(items: readonly PathStretch[]): PathStretch[] {
  const byEnd = [...items].sort((a, b) => a.end - b.end || a.start - b.start);
  const best = new Array<number>(byEnd.length + 1).fill(0);
  const take = new Array<boolean>(byEnd.length + 1).fill(false);
  const previous = byEnd.map((e, i) => {
    // Count of tracklets ending before this one starts (binary search over ends).
    let lo = 0;
    let hi = i;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (byEnd[mid]!.end < e.start) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  });
  for (let i = 1; i <= byEnd.length; i++) {
    const withIt = byEnd[i - 1]!.weight + best[previous[i - 1]!]!;
    take[i] = withIt > best[i - 1]!;
    best[i] = Math.max(withIt, best[i - 1]!);
  }
  const chosen: PathStretch[] = [];
  for (let i = byEnd.length; i > 0; ) {
    if (take[i]) {
      chosen.push(byEnd[i - 1]!);
      i = previous[i - 1]!;
    } else i -= 1;
  }
  return chosen.reverse();
}

/** The largest distance of a tracklet's detections from their mean, px. */
function spreadPx(dets: readonly BallCandidate[]): number {
  const mx = dets.reduce((a, c) => a + c.x, 0) / dets.length;
  const my = dets.reduce((a, c) => a + c.y, 0) / dets.length;
  return Math.max(...dets.map((c) => Math.hypot(c.x - mx, c.y - my)));
}

/** Velocity (px/s) from a tracklet's last detections (mean over up to the last 3 steps). */
function velocityOf(dets: readonly BallCandidate[], dt: number): [number, number] {
  if (dets.length < 2) return [0, 0];
  const a = dets[Math.max(0, dets.length - 4)]!;
  const b = dets.at(-1)!;
  const seconds = (b.frame - a.frame) * dt;
  return [(b.x - a.x) / seconds, (b.y - a.y) / seconds];
}

function median(values: number[]): number | undefined {
  if (values.length === 0) return undefined;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

const round1 = (v: number) => Math.round(v * 10) / 10;
const round3 = (v: number) => Math.round(v * 1000) / 1000;
const round4 = (v: number) => Math.round(v * 1e4) / 1e4;
