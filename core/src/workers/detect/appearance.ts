import type { BoxXyxy } from './geometry.ts';

/** What {@link torsoHistogram} reads: packed BGR pixels, row-major. */
export interface BgrFrame {
  width: number;
  height: number;
  data: Buffer | Uint8Array;
}

/** Bins per colour channel of {@link torsoHistogram} (4³ = 64 bins). */
export const HISTOGRAM_BINS_PER_CHANNEL = 4;

/**
 * The shortest person box (source pixels) whose torso colours are measured. Below it a torso is a
 * few source pixels (at 11 px: ~3 × 3), its histogram mostly noise, and a colour gate on it breaks
 * tracks (synthetic 1440×196 panoramas, people ~11 px: HOTA 70.9 → 66.5 with colours measured on
 * them, 71.3 without; bench/README § track).
 */
export const TORSO_MIN_BOX_HEIGHT_PX = 14;

/** An RGB colour, each channel 0–255. */
export type Rgb = [number, number, number];

/** What {@link measureTorso} finds in one person box. */
export interface TorsoColours {
  /** See {@link torsoHistogram}. */
  histogram: Float32Array | null;
  /**
   * The torso's mean colour (RGB, rounded to integers): the jersey colour the analyze stage splits
   * teams by. Null when fewer than 4 torso pixels remain; measured for boxes of any height.
   */
  meanRgb: Rgb | null;
}

/**
 * A person's torso — 20–50 % of the box height, the middle half of its width, where the shirt is —
 * leaving out grass-green pixels (G above both R and B by more than 15), measured in one pass: its
 * colour histogram and its mean colour.
 *
 * @param frame - packed BGR.
 * @param box - in source pixels; `scale` maps them to `frame` pixels (frame width / source width).
 */
export function measureTorso(frame: BgrFrame, box: BoxXyxy, scale = 1): TorsoColours {
  const [x1, y1, x2, y2] = box.map((v) => v * scale) as [number, number, number, number];
  const bw = x2 - x1;
  const bh = y2 - y1;
  const left = Math.max(0, Math.floor(x1 + bw * 0.25));
  const right = Math.min(frame.width - 1, Math.ceil(x2 - bw * 0.25));
  const top = Math.max(0, Math.floor(y1 + bh * 0.2));
  const bottom = Math.min(frame.height - 1, Math.ceil(y1 + bh * 0.5));
  const k = HISTOGRAM_BINS_PER_CHANNEL;
  const histogram = new Float32Array(k * k * k);
  let n = 0;
  let sumR = 0;
  let sumG = 0;
  let sumB = 0;
  for (let y = top; y <= bottom; y++) {
    for (let x = left; x <= right; x++) {
      const o = (y * frame.width + x) * 3;
      const b = frame.data[o]!;
      const g = frame.data[o + 1]!;
      const r = frame.data[o + 2]!;
      if (g > r + 15 && g > b + 15) continue; // grass
      histogram[(((r * k) >> 8) * k + ((g * k) >> 8)) * k + ((b * k) >> 8)]! += 1;
      sumR += r;
      sumG += g;
      sumB += b;
      n += 1;
    }
  }
  const tallEnough = box[3] - box[1] >= TORSO_MIN_BOX_HEIGHT_PX;
  if (tallEnough && n >= 8) for (let i = 0; i < histogram.length; i++) histogram[i]! /= n;
  return {
    histogram: tallEnough && n >= 8 ? histogram : null,
    meanRgb: n >= 4 ? [Math.round(sumR / n), Math.round(sumG / n), Math.round(sumB / n)] : null,
  };
}

/**
 * A person's appearance: the colour histogram (4 × 4 × 4 RGB bins, L1-normalised) of the torso
 * ({@link measureTorso}). Cheap enough for every box of every analysed frame.
 *
 * @param box - in source pixels; `scale` maps them to `frame` pixels (frame width / source width).
 * @returns null for a box under {@link TORSO_MIN_BOX_HEIGHT_PX} source pixels, or when fewer than
 *   8 torso pixels remain in the frame (tiny or off-frame boxes).
 */
export function torsoHistogram(frame: BgrFrame, box: BoxXyxy, scale = 1): Float32Array | null {
  if (box[3] - box[1] < TORSO_MIN_BOX_HEIGHT_PX) return null;
  return measureTorso(frame, box, scale).histogram;
}

/**
 * Distance of two L1-normalised histograms, 1 − Bhattacharyya coefficient (Σ √(pᵢqᵢ)):
 * 0 for the same colours, 1 for disjoint ones.
 */
export function histogramDistance(p: Float32Array, q: Float32Array): number {
  let bc = 0;
  for (let i = 0; i < p.length; i++) bc += Math.sqrt(p[i]! * q[i]!);
  return Math.max(0, 1 - bc);
}

/**
 * A {@link torsoHistogram} as it is stored in a detections file (`Detection.appearance`): each of the
 * 64 bins as one byte, `round(255 · p)`, base64 (88 characters).
 */
export function encodeHistogram(histogram: Float32Array): string {
  const bytes = new Uint8Array(histogram.length);
  for (let i = 0; i < histogram.length; i++) bytes[i] = Math.min(255, Math.round(255 * histogram[i]!));
  return Buffer.from(bytes).toString('base64');
}

/**
 * The histogram of {@link encodeHistogram}, L1-normalised again (the bytes' rounding moves each bin by
 * at most 1/510).
 *
 * @returns null when the text is not 64 base64-encoded bytes or every bin is 0.
 */
export function decodeHistogram(text: string): Float32Array | null {
  const bytes = Buffer.from(text, 'base64');
  const bins = HISTOGRAM_BINS_PER_CHANNEL ** 3;
  if (bytes.length !== bins) return null;
  let sum = 0;
  for (const b of bytes) sum += b;
  if (sum === 0) return null;
  const histogram = new Float32Array(bins);
  for (let i = 0; i < bins; i++) histogram[i] = bytes[i]! / sum;
  return histogram;
}
