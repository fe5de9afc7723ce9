/**
 * The static part of a camera's picture, rendered once per camera: the grass
 * with mowing stripes and texture, the line markings (2 × 2 supersampled), the
 * goals, advertising boards, the crowd in the stands and the sky. Each pixel
 * casts its ray onto the pitch plane (camera.ts `pixelRay`).
 */
import type { Appearance, Rgb } from './appearance.ts';
import { cameraCentre, type PinholeCamera, pixelRay, projectPoint } from './camera.ts';
import { GOAL_HALF_WIDTH_M, GOAL_HEIGHT_M, HALF_LENGTH_M, HALF_WIDTH_M, isOnPitchMarking } from './pitch.ts';
import { hash2 } from './prng.ts';
import { fillDisc, type RgbFrame } from './raster.ts';

/** Mowing stripes: 18 bands across the pitch length (5.83 m each). */
const STRIPE_COUNT = 18;
const BOARD_START_M = 4;
const BOARD_DEPTH_M = 1;
const STAND_START_M = 6;
const FAR_LIMIT_M = 400;

const LINE_COLOUR: Rgb = [236, 238, 232];
const BOARD_COLOURS: Rgb[] = [
  [20, 60, 160],
  [220, 220, 220],
  [200, 30, 40],
  [30, 30, 30],
  [250, 200, 30],
];

function smoothNoise(seed: number, x: number, y: number): number {
  const xi = Math.floor(x);
  const yi = Math.floor(y);
  const fx = x - xi;
  const fy = y - yi;
  const a = hash2(seed, xi, yi);
  const b = hash2(seed, xi + 1, yi);
  const c = hash2(seed, xi, yi + 1);
  const d = hash2(seed, xi + 1, yi + 1);
  const sx = fx * fx * (3 - 2 * fx);
  const sy = fy * fy * (3 - 2 * fy);
  return a + (b - a) * sx + (c - a) * sy + (a - b - c + d) * sx * sy;
}

/** The colour of the ground (or sky) along one ray, written into `out`. */
function sampleRay(
  eye: [number, number, number],
  dir: [number, number, number],
  look: Appearance,
  out: number[],
): void {
  const seed = look.textureSeed;
  if (dir[2] > -1e-6) {
    const k = Math.min(1, dir[2] * 4);
    out[0] = 150 - 60 * k;
    out[1] = 185 - 40 * k;
    out[2] = 225 - 10 * k;
    return;
  }
  const s = -eye[2] / dir[2];
  const x = eye[0] + s * dir[0];
  const y = eye[1] + s * dir[1];
  const outside = Math.max(Math.abs(x) - HALF_LENGTH_M, Math.abs(y) - HALF_WIDTH_M);
  if (s > FAR_LIMIT_M) {
    out[0] = 70;
    out[1] = 70;
    out[2] = 78;
    return;
  }
  if (outside > STAND_START_M) {
    // Stands: rows of seats every 0.8 m, most of them occupied by spectators.
    const row = Math.floor(outside / 0.8);
    const along = Math.abs(x) - HALF_LENGTH_M > Math.abs(y) - HALF_WIDTH_M ? y : x;
    const seat = Math.floor(along / 0.55);
    const h = hash2(seed + 3, row, seat);
    if (h < 0.72) {
      const hue = hash2(seed + 5, row, seat);
      out[0] = 60 + 170 * hue;
      out[1] = 50 + 120 * hash2(seed + 7, row, seat);
      out[2] = 50 + 150 * (1 - hue);
    } else {
      const shade = row % 2 === 0 ? 95 : 80;
      out[0] = shade;
      out[1] = shade;
      out[2] = shade + 8;
    }
    return;
  }
  if (outside > BOARD_START_M && outside < BOARD_START_M + BOARD_DEPTH_M) {
    const along = Math.abs(x) - HALF_LENGTH_M > Math.abs(y) - HALF_WIDTH_M ? y : x;
    const c = BOARD_COLOURS[Math.floor(hash2(seed + 11, Math.floor(along / 6), 0) * BOARD_COLOURS.length)] as Rgb;
    out[0] = c[0];
    out[1] = c[1];
    out[2] = c[2];
    return;
  }
  if (isOnPitchMarking(x, y)) {
    out[0] = LINE_COLOUR[0];
    out[1] = LINE_COLOUR[1];
    out[2] = LINE_COLOUR[2];
    return;
  }
  const stripe = Math.floor(((x + HALF_LENGTH_M) / (2 * HALF_LENGTH_M)) * STRIPE_COUNT);
  let k = outside > 0 ? 0.9 : stripe % 2 === 0 ? 1.06 : 0.94;
  k *= 0.94 + 0.12 * smoothNoise(seed, x / 3, y / 3);
  k *= 0.96 + 0.08 * hash2(seed + 1, Math.floor(x * 6), Math.floor(y * 6));
  out[0] = look.grass[0] * k;
  out[1] = look.grass[1] * k;
  out[2] = look.grass[2] * k;
}

/** Draws the goal frames (posts and crossbar, 0.12 m thick) into the frame. */
function drawGoals(frame: RgbFrame, camera: PinholeCamera): void {
  for (const gx of [-HALF_LENGTH_M, HALF_LENGTH_M]) {
    const segments: [number, number, number, number, number, number][] = [
      [gx, -GOAL_HALF_WIDTH_M, 0, gx, -GOAL_HALF_WIDTH_M, GOAL_HEIGHT_M],
      [gx, GOAL_HALF_WIDTH_M, 0, gx, GOAL_HALF_WIDTH_M, GOAL_HEIGHT_M],
      [gx, -GOAL_HALF_WIDTH_M, GOAL_HEIGHT_M, gx, GOAL_HALF_WIDTH_M, GOAL_HEIGHT_M],
    ];
    for (const [x0, y0, z0, x1, y1, z1] of segments) {
      const a = projectPoint(camera, [x0, y0, z0]);
      const b = projectPoint(camera, [x1, y1, z1]);
      if (a.depthM <= 0.5 || b.depthM <= 0.5) continue;
      const steps = Math.max(2, Math.ceil(Math.hypot(b.u - a.u, b.v - a.v) * 2));
      for (let i = 0; i <= steps; i++) {
        const f = i / steps;
        const p = projectPoint(camera, [x0 + (x1 - x0) * f, y0 + (y1 - y0) * f, z0 + (z1 - z0) * f]);
        fillDisc(frame, p.u, p.v, Math.max(0.5, (camera.fx * 0.06) / p.depthM), [245, 245, 245]);
      }
    }
  }
}

/**
 * Renders the static background of a camera, RGB24, `widthPx · heightPx · 3`
 * bytes. Takes about a second per 1280 × 720 camera on one core.
 */
export function renderBackground(camera: PinholeCamera, look: Appearance): Uint8Array {
  const { widthPx, heightPx } = camera;
  const data = new Uint8Array(widthPx * heightPx * 3);
  const eye = cameraCentre(camera);
  const sample = [0, 0, 0];
  const offsets = [-0.25, 0.25];
  let i = 0;
  for (let v = 0; v < heightPx; v++) {
    for (let u = 0; u < widthPx; u++) {
      let r = 0;
      let g = 0;
      let b = 0;
      for (const dv of offsets) {
        for (const du of offsets) {
          sampleRay(eye, pixelRay(camera, u + du, v + dv), look, sample);
          r += sample[0] as number;
          g += sample[1] as number;
          b += sample[2] as number;
        }
      }
      data[i++] = r / 4;
      data[i++] = g / 4;
      data[i++] = b / 4;
    }
  }
  const frame: RgbFrame = { widthPx, heightPx, data };
  drawGoals(frame, camera);
  return data;
}
