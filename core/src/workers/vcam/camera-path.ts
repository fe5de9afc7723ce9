import { PolyvisionError } from '@polyvision/shared';
import type { TracksFile } from '../track/tracks-format.ts';
import { type BallPosition, ballFromTracks } from './ball-positions.ts';
import { NO_PITCH_REGION, type PitchRegion } from './pitch-region.ts';

/** The crop window of one frame, in source pixels (16:9 unless the source is narrower). */
export interface CropWindow {
  /** Centre x, y. */
  cx: number;
  cy: number;
  width: number;
  height: number;
}

/** Options of {@link planCameraPath}. */
export interface CameraPathOptions {
  /** Output aspect ratio (width / height). @defaultValue 16/9 */
  aspectRatio?: number;
  /** Pull of the ball on the centre: 0 = players only, 1 = ball only. @defaultValue 0.5 */
  ballWeight?: number;
  /** Margin around the players' spread (10th–90th percentile box). @defaultValue 1.5 */
  spreadMargin?: number;
  /**
   * Narrowest crop width in SOURCE pixels (the output size divided by the
   * largest upscale allowed, see `output-size.ts`). @defaultValue a quarter of the source width
   */
  minCropWidthPx?: number;
  /** The ball per analysed frame (ball-track.json); @defaultValue the `ball` tracks of the tracks file */
  ball?: readonly (BallPosition | undefined)[];
  /**
   * People boxes `[x1, y1, x2, y2]` per analysed frame for the centre of play (e.g. confident
   * detections: the crowd's centre needs no identities, and survives a tracker that keeps few
   * tracks). @defaultValue the player and goalkeeper tracks
   */
  peopleBoxes?: readonly (readonly (readonly number[])[])[];
  /** Only people whose foot point (box bottom centre) lies in this region count. @defaultValue everywhere */
  pitch?: PitchRegion;
  /** With a ball, the target keeps it within this share of the crop around the centre. @defaultValue 0.5 */
  ballKeepShare?: number;
  /**
   * The ball is followed only while it is in play: inside the players' window (the window their
   * spread asks for, around their centre) scaled by `ballInPlayShare`. A "ball" outside it is more
   * often a false one (a sock, a line mark) than a long pass, and following it takes the play out of
   * the picture; the players' centre is followed in those frames. Frames without on-pitch people
   * follow the ball wherever it is. `Infinity`: always follow the ball. @defaultValue 1
   */
  ballInPlayShare?: number;
  /** Centred moving average of the targets before the dynamics, seconds (offline look-ahead). @defaultValue 1 */
  targetSmoothingSeconds?: number;
  /** No pan while the target stays within this share of the crop width from the centre. @defaultValue 0.08 */
  deadZoneShare?: number;
  /** Pan speed cap, source widths per second. @defaultValue 0.35 */
  maxPanSpeedShare?: number;
  /** Pan acceleration cap, source widths per second². @defaultValue 0.6 */
  maxPanAccelerationShare?: number;
  /** Zoom speed cap, source widths per second. @defaultValue 0.15 */
  maxZoomSpeedShare?: number;
  /** How fast the camera closes the gap to its target (1/s). @defaultValue 2 */
  responsiveness?: number;
  /**
   * A segment of a match (issue #18): the state the previous segment's path ended in
   * (`CameraPath.carry`; null or absent for the first segment or a whole clip). The camera then
   * starts where and as fast as it was (no jump, no jolt at the boundary), frames before the first
   * observation hold the carried target, and the look-ahead average reaches back over the carried
   * targets; it never reaches past the segment's end (bounded look-ahead: the next segment is not there yet).
   */
  carry?: CameraPathCarry | null;
}

/** What a camera path carries into the next segment of a match (kind `vcam-carry`). */
export interface CameraPathCarry {
  /** The camera's last window (source px) and pan velocity (source px per second). */
  camera: { cx: number; cy: number; width: number; vx: number; vy: number };
  /** The last targets before smoothing (source px), oldest first: the look-behind of the next segment's average. */
  recentTargets: { cx: number; cy: number; width: number; height: number }[];
}

/** A camera path: one crop window per analysed frame. */
export interface CameraPath {
  fps: number;
  sourceWidth: number;
  sourceHeight: number;
  windows: CropWindow[];
  /**
   * What the target followed: frames with a ball, with on-pitch players only, and with neither (target
   * held); `ballOutOfPlayFrames` of the player frames had a ball that was not followed (`ballInPlayShare`).
   */
  follow: {
    ballFrames: number;
    playerFrames: number;
    heldFrames: number;
    firstObservedFrame: number | null;
    ballOutOfPlayFrames: number;
  };
  /** People detections on the pitch / all people detections (foot point in the pitch region). */
  people: { onPitch: number; total: number; pitchSource: PitchRegion['source'] };
  /** The state to hand to the path of the match's next segment (`CameraPathOptions.carry`); always set by `planCameraPath`. */
  carry?: CameraPathCarry;
}

const PEOPLE = new Set(['player', 'goalkeeper']);

/** The velocity after a step the walls may have cut short: what it moved, never more than it meant to. */
function wallVelocity(meant: number, moved: number): number {
  if (Math.sign(meant) !== Math.sign(moved)) return 0;
  return Math.sign(meant) * Math.min(Math.abs(meant), Math.abs(moved));
}

function percentile(sorted: readonly number[], p: number): number {
  const i = (sorted.length - 1) * p;
  const lo = Math.floor(i);
  const hi = Math.ceil(i);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (i - lo);
}

/**
 * Plans a virtual camera over the panorama from the tracks:
 * - **who counts**: players and goalkeepers whose foot point lies in
 *   `pitch` (bench, coaches and spectators do not move the camera);
 * - **target**: the ball when there is one (`ball`, else the tracks' ball),
 *   the centre of play (mean of on-pitch people) otherwise; with both, the
 *   players' centre pulled toward the ball by `ballWeight` and shifted so the
 *   ball stays within `ballKeepShare` of the window; width from the players'
 *   spread (10th–90th percentile box × `spreadMargin`), between
 *   `minCropWidthPx` and the widest window that fits;
 * - **start on the play**: frames before the first observation take the first
 *   observed target (planned backward), never a wide shot; later empty frames hold the last target;
 * - **look-ahead**: a centred moving average of the targets (offline, so the
 *   camera starts moving before the play does);
 * - **dynamics**: per axis, the target's own velocity (feed-forward) plus a
 *   correction toward it beyond a dead zone (no correction for small
 *   offsets), capped in speed and acceleration; zoom with
 *   its own speed cap; the window always stays inside the frame.
 *
 * @throws PolyvisionError `vcam_options_invalid` for out-of-range options.
 */
export function planCameraPath(tracks: TracksFile, options: CameraPathOptions = {}): CameraPath {
  const { width: W, height: H } = tracks.detections.source;
  const o = {
    aspectRatio: 16 / 9,
    ballWeight: 0.5,
    spreadMargin: 1.5,
    minCropWidthPx: W * 0.25,
    targetSmoothingSeconds: 1,
    deadZoneShare: 0.08,
    maxPanSpeedShare: 0.35,
    maxPanAccelerationShare: 0.6,
    maxZoomSpeedShare: 0.15,
    responsiveness: 2,
    ballKeepShare: 0.5,
    ballInPlayShare: 1,
    ...options,
  };
  if (
    !(o.ballWeight >= 0 && o.ballWeight <= 1) ||
    !(o.minCropWidthPx > 0) ||
    !(o.aspectRatio > 0) ||
    !(o.ballKeepShare > 0 && o.ballKeepShare <= 1) ||
    !(o.ballInPlayShare > 0)
  ) {
    throw new PolyvisionError(
      'vcam_options_invalid',
      'ballWeight must be in [0, 1], ballKeepShare in (0, 1], ballInPlayShare, minCropWidthPx and aspectRatio > 0',
    );
  }
  const fps = tracks.detections.analysisFps;
  const n = tracks.frameCount;
  const maxWidth = Math.min(W, H * o.aspectRatio);
  const minWidth = Math.min(maxWidth, o.minCropWidthPx);
  const pitch = o.pitch ?? NO_PITCH_REGION;

  // Per-frame observations: on-pitch people, and the ball.
  const people: { x: number; y: number }[][] = Array.from({ length: n }, () => []);
  let onPitch = 0;
  let total = 0;
  const observe = (frame: number, box: readonly number[]) => {
    if (frame >= n) return;
    total += 1;
    if (!pitch.contains((box[0]! + box[2]!) / 2, box[3]!)) return;
    onPitch += 1;
    people[frame]!.push({ x: (box[0]! + box[2]!) / 2, y: (box[1]! + box[3]!) / 2 });
  };
  if (o.peopleBoxes) {
    for (const [frame, boxes] of o.peopleBoxes.entries()) for (const box of boxes ?? []) observe(frame, box);
  } else
    for (const track of tracks.tracks) {
      if (!PEOPLE.has(track.class)) continue;
      for (const f of track.frames) observe(f.frame, f.box);
    }
  const ball = o.ball ?? ballFromTracks(tracks);

  // Raw targets; null where nothing was observed.
  const raw: (CropWindow | null)[] = [];
  let ballFrames = 0;
  let playerFrames = 0;
  let ballOutOfPlayFrames = 0;
  for (let f = 0; f < n; f++) {
    const ps = people[f]!;
    let b = ball[f];
    if (ps.length === 0 && !b) {
      raw.push(null);
      continue;
    }
    let cx = b ? b.x : 0;
    let cy = b ? b.y : 0;
    let width = minWidth;
    if (ps.length > 0) {
      const px = ps.reduce((s, p) => s + p.x, 0) / ps.length;
      const py = ps.reduce((s, p) => s + p.y, 0) / ps.length;
      const xs = ps.map((p) => p.x).sort((a, c) => a - c);
      const ys = ps.map((p) => p.y).sort((a, c) => a - c);
      const spreadW = (percentile(xs, 0.9) - percentile(xs, 0.1)) * o.spreadMargin;
      const spreadH = (percentile(ys, 0.9) - percentile(ys, 0.1)) * o.spreadMargin;
      width = Math.min(maxWidth, Math.max(spreadW, spreadH * o.aspectRatio, minWidth));
      const playHalfW = (o.ballInPlayShare * width) / 2;
      const playHalfH = (o.ballInPlayShare * width) / o.aspectRatio / 2;
      if (b && (Math.abs(b.x - px) > playHalfW || Math.abs(b.y - py) > playHalfH)) {
        b = undefined;
        ballOutOfPlayFrames += 1;
      }
      const w = b ? o.ballWeight : 0;
      cx = (1 - w) * px + w * cx;
      cy = (1 - w) * py + w * cy;
    }
    width = Math.min(maxWidth, width);
    const height = width / o.aspectRatio;
    if (b) {
      ballFrames += 1;
      // Keep the ball well inside the target window.
      const kx = (o.ballKeepShare * width) / 2;
      const ky = (o.ballKeepShare * height) / 2;
      cx = Math.max(b.x - kx, Math.min(b.x + kx, cx));
      cy = Math.max(b.y - ky, Math.min(b.y + ky, cy));
    } else playerFrames += 1;
    raw.push({ cx, cy, width, height });
  }
  const firstObserved = raw.findIndex((w) => w !== null);
  const carried = o.carry ?? null;
  const behind = carried?.recentTargets ?? [];
  const own: CropWindow[] = [];
  let last: CropWindow =
    behind.at(-1) ??
    (firstObserved >= 0
      ? (raw[firstObserved] as CropWindow)
      : { cx: W / 2, cy: H / 2, width: maxWidth, height: maxWidth / o.aspectRatio });
  for (let f = 0; f < n; f++) {
    last = raw[f] ?? last;
    own.push(last);
  }
  // The carried targets first (look-behind across the segment boundary), then this segment's.
  const filled = [...behind, ...own];
  const lead = behind.length;

  // Centred moving average (look-ahead, bounded by the end of what is known).
  const half = Math.max(0, Math.round((o.targetSmoothingSeconds * fps) / 2));
  const targets = own.map((_, f) => {
    let cx = 0;
    let cy = 0;
    let width = 0;
    let count = 0;
    for (let k = Math.max(0, lead + f - half); k <= Math.min(lead + n - 1, lead + f + half); k++) {
      cx += filled[k]!.cx;
      cy += filled[k]!.cy;
      width += filled[k]!.width;
      count += 1;
    }
    return { cx: cx / count, cy: cy / count, width: width / count };
  });

  // Dynamics.
  const dt = 1 / fps;
  const maxSpeed = o.maxPanSpeedShare * W;
  const maxAccel = o.maxPanAccelerationShare * W;
  const maxZoom = o.maxZoomSpeedShare * W;
  const windows: CropWindow[] = [];
  const start = carried
    ? { cx: carried.camera.cx, cy: carried.camera.cy, width: carried.camera.width }
    : targets[0]
      ? { ...targets[0] }
      : { cx: W / 2, cy: H / 2, width: maxWidth };
  /** The window of `width` centred as near (cx, cy) as the frame's walls allow. */
  const insideWalls = (cx: number, cy: number, width: number): CropWindow => {
    const height = width / o.aspectRatio;
    return {
      cx: Math.max(width / 2, Math.min(W - width / 2, cx)),
      cy: Math.max(height / 2, Math.min(H - height / 2, cy)),
      width,
      height,
    };
  };
  // Start inside the walls: a first target near an edge (its window would stick out) must not read
  // as a camera the wall pushed at hundreds of pixels per frame.
  let cam = insideWalls(start.cx, start.cy, Math.max(minWidth, Math.min(maxWidth, start.width)));
  let vx = carried?.camera.vx ?? 0;
  let vy = carried?.camera.vy ?? 0;
  // Feed-forward: the camera matches the target's own velocity (central difference of the smoothed
  // targets, offline) and closes the remaining gap beyond the dead zone, so a steadily moving
  // play (or ball) is not trailed by speed / responsiveness.
  const targetVelocity = (f: number, key: 'cx' | 'cy') => {
    const a = targets[Math.max(0, f - 1)]!;
    const b = targets[Math.min(n - 1, f + 1)]!;
    const span = Math.min(n - 1, f + 1) - Math.max(0, f - 1);
    return span > 0 ? ((b[key] - a[key]) / span) * fps : 0;
  };
  const axis = (pos: number, target: number, v: number, deadZone: number, feedForward: number) => {
    const offset = target - pos;
    const beyond = Math.abs(offset) <= deadZone ? 0 : offset - Math.sign(offset) * deadZone;
    const desired = Math.max(-maxSpeed, Math.min(maxSpeed, feedForward + beyond * o.responsiveness));
    const dv = Math.max(-maxAccel * dt, Math.min(maxAccel * dt, desired - v));
    return v + dv;
  };
  for (let f = 0; f < n; f++) {
    const t = targets[f]!;
    const deadZone = o.deadZoneShare * cam.width;
    vx = axis(cam.cx, t.cx, vx, deadZone, targetVelocity(f, 'cx'));
    vy = axis(cam.cy, t.cy, vy, deadZone * (H / W), targetVelocity(f, 'cy'));
    const dz = Math.max(-maxZoom * dt, Math.min(maxZoom * dt, (t.width - cam.width) * o.responsiveness * dt));
    const next = insideWalls(
      cam.cx + vx * dt,
      cam.cy + vy * dt,
      Math.max(minWidth, Math.min(maxWidth, cam.width + dz)),
    );
    // A wall stops the camera: keep velocity consistent with where it really went — but a wall that
    // pushes the camera (a zoom-out beside it) gives it no speed.
    vx = wallVelocity(vx, (next.cx - cam.cx) / dt);
    vy = wallVelocity(vy, (next.cy - cam.cy) / dt);
    cam = next;
    windows.push(next);
  }
  return {
    fps,
    sourceWidth: W,
    sourceHeight: H,
    windows,
    follow: {
      ballFrames,
      ballOutOfPlayFrames,
      playerFrames,
      heldFrames: n - ballFrames - playerFrames,
      firstObservedFrame: firstObserved >= 0 ? firstObserved : null,
    },
    people: { onPitch, total, pitchSource: pitch.source },
    carry: {
      camera: { ...cam, vx, vy },
      recentTargets: filled.slice(Math.max(0, filled.length - half)),
    },
  };
}

/** The crop window at time `tMs`, linearly interpolated between analysed frames. */
export function windowAt(path: CameraPath, tMs: number): CropWindow {
  const position = (tMs / 1000) * path.fps;
  const i = Math.max(0, Math.min(path.windows.length - 1, Math.floor(position)));
  const a = path.windows[i]!;
  const b = path.windows[Math.min(path.windows.length - 1, i + 1)]!;
  const f = Math.max(0, Math.min(1, position - i));
  return {
    cx: a.cx + (b.cx - a.cx) * f,
    cy: a.cy + (b.cy - a.cy) * f,
    width: a.width + (b.width - a.width) * f,
    height: a.height + (b.height - a.height) * f,
  };
}
