import { resolveFfmpegPath, spawnChild } from '@polyvision/shared';
import type { MediaBinaries } from '../detect/frames/index.ts';
import type { PitchRegion } from './pitch-region.ts';

/** Is an RGB pixel grass? HSV thresholds: hue 65–170°, saturation ≥ 0.22, value ≥ 0.12. */
export function isGrass(r: number, g: number, b: number): boolean {
  const max = Math.max(r, g, b);
  const min = Math.min(r, g, b);
  if (max !== g || max < 0.12 * 255) return false;
  const chroma = max - min;
  if (chroma < 0.22 * max) return false;
  const hue = 60 * ((b - r) / chroma + 2);
  return hue >= 65 && hue <= 170;
}

/**
 * The pitch found in a packed RGB image (e.g. the median of a few frames): the
 * grass mask (see {@link isGrass}) dilated by `closeRadius` pixels (so white
 * lines do not split it), its largest 4-connected component, filled
 * row by row between its leftmost and rightmost pixel (white lines and
 * players inside stay pitch), grown by `marginRows` rows up and down so feet on
 * the touchline count. `scale` maps panorama pixels to image pixels.
 *
 * @returns null when the largest component covers less than `minShare` of the image.
 */
export function grassRegionFromRgb(
  rgb: Uint8Array,
  width: number,
  height: number,
  scale: number,
  { minShare = 0.1, marginRows = 2, closeRadius = 3 } = {},
): PitchRegion | null {
  const n = width * height;
  const grass = new Uint8Array(n);
  for (let i = 0; i < n; i++) grass[i] = isGrass(rgb[3 * i]!, rgb[3 * i + 1]!, rgb[3 * i + 2]!) ? 1 : 0;
  // Dilation by a (2r+1)² box (separable): painted lines and players no longer split the grass.
  const dilate = (src: Uint8Array, dx: number, dy: number) => {
    const out = new Uint8Array(n);
    for (let y = 0; y < height; y++)
      for (let x = 0; x < width; x++) {
        if (!src[y * width + x]) continue;
        for (let d = -closeRadius; d <= closeRadius; d++) {
          const xx = x + d * dx;
          const yy = y + d * dy;
          if (xx >= 0 && yy >= 0 && xx < width && yy < height) out[yy * width + xx] = 1;
        }
      }
    return out;
  };
  const closed = dilate(dilate(grass, 1, 0), 0, 1);
  const label = new Int32Array(n);
  for (let i = 0; i < n; i++) label[i] = closed[i] ? -1 : 0;
  let best = 0;
  let bestSize = 0;
  let next = 0;
  const queue = new Int32Array(n);
  for (let s = 0; s < n; s++) {
    if (label[s] !== -1) continue;
    next += 1;
    let head = 0;
    let tail = 0;
    queue[tail++] = s;
    label[s] = next;
    while (head < tail) {
      const p = queue[head++]!;
      const x = p % width;
      for (const q of [p - 1, p + 1, p - width, p + width]) {
        if (q < 0 || q >= n || label[q] !== -1) continue;
        if ((q === p - 1 && x === 0) || (q === p + 1 && x === width - 1)) continue;
        label[q] = next;
        queue[tail++] = q;
      }
    }
    if (tail > bestSize) {
      bestSize = tail;
      best = next;
    }
  }
  if (bestSize < minShare * n) return null;
  const left = new Float64Array(height).fill(Number.POSITIVE_INFINITY);
  const right = new Float64Array(height).fill(Number.NEGATIVE_INFINITY);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++)
      if (label[y * width + x] === best) {
        left[y] = Math.min(left[y]!, x);
        right[y] = Math.max(right[y]!, x);
      }
  // Grow the spans by marginRows rows.
  const l2 = Float64Array.from(left);
  const r2 = Float64Array.from(right);
  for (let y = 0; y < height; y++)
    for (let d = -marginRows; d <= marginRows; d++) {
      const k = y + d;
      if (k < 0 || k >= height) continue;
      l2[y] = Math.min(l2[y]!, left[k]!);
      r2[y] = Math.max(r2[y]!, right[k]!);
    }
  const outline: [number, number][] = [];
  const rows = [...Array(height).keys()].filter((y) => l2[y]! <= r2[y]!);
  const step = Math.max(1, Math.floor(rows.length / 24));
  for (let i = 0; i < rows.length; i += step) outline.push([l2[rows[i]!]! / scale, rows[i]! / scale]);
  for (let i = rows.length - 1; i >= 0; i -= step) outline.push([(r2[rows[i]!]! + 1) / scale, (rows[i]! + 1) / scale]);
  return {
    source: 'grass',
    outline,
    contains: (x, y) => {
      const row = Math.floor(y * scale);
      if (row < 0 || row >= height) return false;
      const c = x * scale;
      return c >= l2[row]! && c <= r2[row]! + 1;
    },
  };
}

/**
 * Finds the pitch in a video without calibration: ffmpeg decodes `samples`
 * frames spread over the clip, downscaled to `analysisWidth`; their per-pixel
 * median (moving players vanish) goes to {@link grassRegionFromRgb}.
 *
 * @returns null when no large green area is found.
 * @throws PolyvisionError `child_failed` / `aborted` from ffmpeg.
 */
export async function pitchRegionFromImage(params: {
  inputPath: string;
  sourceWidth: number;
  sourceHeight: number;
  frameCount: number;
  /** @defaultValue 7 */
  samples?: number;
  /** @defaultValue 480 */
  analysisWidth?: number;
  signal?: AbortSignal;
  binaries?: MediaBinaries;
}): Promise<PitchRegion | null> {
  const samples = params.samples ?? 7;
  const width = Math.min(params.sourceWidth, params.analysisWidth ?? 480);
  const height = Math.max(1, Math.round((params.sourceHeight * width) / params.sourceWidth));
  const step = Math.max(1, Math.floor(params.frameCount / samples));
  const child = spawnChild(
    params.binaries?.ffmpegPath ?? resolveFfmpegPath(),
    [
      '-nostdin',
      '-v',
      'error',
      '-i',
      params.inputPath,
      '-an',
      '-vf',
      `select=not(mod(n\\,${step})),scale=${width}:${height}`,
      '-fps_mode',
      'passthrough',
      '-frames:v',
      String(samples),
      '-f',
      'rawvideo',
      '-pix_fmt',
      'rgb24',
      'pipe:1',
    ],
    { signal: params.signal, killTimeoutMs: 1000 },
  );
  const chunks: Buffer[] = [];
  child.stdout?.on('data', (c: Buffer) => chunks.push(c));
  await child.done;
  const all = Buffer.concat(chunks);
  const frameBytes = width * height * 3;
  const frames = Math.floor(all.length / frameBytes);
  if (frames === 0) return null;
  const median = new Uint8Array(frameBytes);
  const values = new Uint8Array(frames);
  for (let i = 0; i < frameBytes; i++) {
    for (let f = 0; f < frames; f++) values[f] = all[f * frameBytes + i]!;
    values.sort();
    median[i] = values[frames >> 1]!;
  }
  return grassRegionFromRgb(median, width, height, width / params.sourceWidth);
}
