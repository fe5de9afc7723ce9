import { PolyvisionError } from '@polyvision/shared';
import type { TracksFile } from '../track/tracks-format.ts';

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
  /** Narrowest crop, as a share of the source width. @defaultValue 0.25 */
  minWidthShare?: number;
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
}

/** A camera path: one crop window per analysed frame. */
export interface CameraPath {
  fps: number;
  sourceWidth: number;
  sourceHeight: number;
  windows: CropWindow[];
}

const PEOPLE = new Set(['player', 'goalkeeper']);

function percentile(sorted: readonly number[], p: number): number {
  const i = (sorted.length - 1) * p;
  const lo = Math.floor(i);
  const hi = Math.ceil(i);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (i - lo);
}

/**
 * Plans a virtual camera over the panorama from the tracks:
 * - **target**: centre of the players (mean of box centres) pulled toward the
 *   ball by `ballWeight`; width from the players' spread (10th–90th
 *   percentile box × `spreadMargin`), kept between `minWidthShare` and the
 *   widest 16:9 window that fits;
 * - **look-ahead**: a centred moving average of the targets (offline, so the
 *   camera starts moving before the play does);
 * - **dynamics**: a dead zone (no pan for small offsets), then a velocity
 *   toward the target capped in speed and acceleration, per axis; zoom with
 *   its own speed cap; the window always stays inside the frame.
 * Frames without players or ball keep the previous target (wide shot at start).
 *
 * @throws PolyvisionError `vcam_options_invalid` for out-of-range options.
 */
export function planCameraPath(tracks: TracksFile, options: CameraPathOptions = {}): CameraPath {
  const o = {
    aspectRatio: 16 / 9,
    ballWeight: 0.5,
    spreadMargin: 1.5,
    minWidthShare: 0.25,
    targetSmoothingSeconds: 1,
    deadZoneShare: 0.08,
    maxPanSpeedShare: 0.35,
    maxPanAccelerationShare: 0.6,
    maxZoomSpeedShare: 0.15,
    responsiveness: 2,
    ...options,
  };
  if (
    !(o.ballWeight >= 0 && o.ballWeight <= 1) ||
    !(o.minWidthShare > 0 && o.minWidthShare <= 1) ||
    !(o.aspectRatio > 0)
  ) {
    throw new PolyvisionError(
      'vcam_options_invalid',
      'ballWeight and minWidthShare must be in [0, 1], aspectRatio > 0',
    );
  }
  const { width: W, height: H } = tracks.detections.source;
  const fps = tracks.detections.analysisFps;
  const n = tracks.frameCount;
  const maxWidth = Math.min(W, H * o.aspectRatio);
  const minWidth = Math.min(maxWidth, W * o.minWidthShare);

  // Per-frame observations.
  const people: { x: number; y: number }[][] = Array.from({ length: n }, () => []);
  const ball: ({ x: number; y: number; score: number } | undefined)[] = new Array(n);
  for (const track of tracks.tracks) {
    for (const f of track.frames) {
      if (f.frame >= n) continue;
      const x = (f.box[0] + f.box[2]) / 2;
      const y = (f.box[1] + f.box[3]) / 2;
      if (PEOPLE.has(track.class)) people[f.frame]!.push({ x, y });
      else if (track.class === 'ball' && (!ball[f.frame] || ball[f.frame]!.score < f.score)) {
        ball[f.frame] = { x, y, score: f.score };
      }
    }
  }

  // Raw targets, holding the last one through empty frames.
  const raw: CropWindow[] = [];
  let last: CropWindow = { cx: W / 2, cy: H / 2, width: maxWidth, height: maxWidth / o.aspectRatio };
  for (let f = 0; f < n; f++) {
    const ps = people[f]!;
    const b = ball[f];
    if (ps.length > 0 || b) {
      let cx = b ? b.x : 0;
      let cy = b ? b.y : 0;
      let width = minWidth;
      if (ps.length > 0) {
        const px = ps.reduce((s, p) => s + p.x, 0) / ps.length;
        const py = ps.reduce((s, p) => s + p.y, 0) / ps.length;
        const w = b ? o.ballWeight : 0;
        cx = (1 - w) * px + w * cx;
        cy = (1 - w) * py + w * cy;
        const xs = ps.map((p) => p.x).sort((a, c) => a - c);
        const ys = ps.map((p) => p.y).sort((a, c) => a - c);
        const spreadW = (percentile(xs, 0.9) - percentile(xs, 0.1)) * o.spreadMargin;
        const spreadH = (percentile(ys, 0.9) - percentile(ys, 0.1)) * o.spreadMargin;
        width = Math.max(spreadW, spreadH * o.aspectRatio, minWidth);
      }
      width = Math.min(maxWidth, width);
      last = { cx, cy, width, height: width / o.aspectRatio };
    }
    raw.push(last);
  }

  // Centred moving average (look-ahead).
  const half = Math.max(0, Math.round((o.targetSmoothingSeconds * fps) / 2));
  const targets = raw.map((_, f) => {
    let cx = 0;
    let cy = 0;
    let width = 0;
    let count = 0;
    for (let k = Math.max(0, f - half); k <= Math.min(n - 1, f + half); k++) {
      cx += raw[k]!.cx;
      cy += raw[k]!.cy;
      width += raw[k]!.width;
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
  let cam = targets[0] ? { ...targets[0] } : { cx: W / 2, cy: H / 2, width: maxWidth };
  let vx = 0;
  let vy = 0;
  const axis = (pos: number, target: number, v: number, deadZone: number) => {
    const offset = target - pos;
    const beyond = Math.abs(offset) <= deadZone ? 0 : offset - Math.sign(offset) * deadZone;
    const desired = Math.max(-maxSpeed, Math.min(maxSpeed, beyond * o.responsiveness));
    const dv = Math.max(-maxAccel * dt, Math.min(maxAccel * dt, desired - v));
    return v + dv;
  };
  for (let f = 0; f < n; f++) {
    const t = targets[f]!;
    const deadZone = o.deadZoneShare * cam.width;
    vx = axis(cam.cx, t.cx, vx, deadZone);
    vy = axis(cam.cy, t.cy, vy, deadZone * (H / W));
    const dz = Math.max(-maxZoom * dt, Math.min(maxZoom * dt, (t.width - cam.width) * o.responsiveness * dt));
    const width = Math.max(minWidth, Math.min(maxWidth, cam.width + dz));
    const height = width / o.aspectRatio;
    const cx = Math.max(width / 2, Math.min(W - width / 2, cam.cx + vx * dt));
    const cy = Math.max(height / 2, Math.min(H - height / 2, cam.cy + vy * dt));
    // A wall stops the camera: keep velocity consistent with where it really went.
    vx = (cx - cam.cx) / dt;
    vy = (cy - cam.cy) / dt;
    cam = { cx, cy, width };
    windows.push({ cx, cy, width, height });
  }
  return { fps, sourceWidth: W, sourceHeight: H, windows };
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
