import { PNG } from 'pngjs';
import type { PositionSpace } from './pitch-space.ts';

/** Options of {@link renderHeatmapPng}. */
export interface HeatmapOptions {
  /** Grid cell size, in the space's unit. @defaultValue 1 (m) */
  cellSize?: number;
  /** Gaussian blur radius, in cells (σ). @defaultValue 1.5 */
  blurCells?: number;
  /** Output pixels per cell. @defaultValue 8 */
  pixelsPerCell?: number;
}

/** A time-occupancy grid over the space's bounds. */
export interface OccupancyGrid {
  columns: number;
  rows: number;
  cellSize: number;
  /** Seconds spent per cell, row-major, row 0 at `yMin`. */
  seconds: Float64Array;
}

/** Accumulates the seconds spent in each cell from positions sampled at `fps`. */
export function occupancyGrid(
  positions: Iterable<{ x: number; y: number }>,
  space: PositionSpace,
  fps: number,
  cellSize: number,
): OccupancyGrid {
  const [x0, y0, x1, y1] = space.bounds;
  const columns = Math.max(1, Math.ceil((x1 - x0) / cellSize));
  const rows = Math.max(1, Math.ceil((y1 - y0) / cellSize));
  const seconds = new Float64Array(columns * rows);
  for (const p of positions) {
    const c = Math.floor((p.x - x0) / cellSize);
    const r = Math.floor((p.y - y0) / cellSize);
    if (c < 0 || r < 0 || c >= columns || r >= rows) continue;
    seconds[r * columns + c]! += 1 / fps;
  }
  return { columns, rows, cellSize, seconds };
}

function blur(grid: OccupancyGrid, sigma: number): Float64Array {
  if (sigma <= 0) return grid.seconds;
  const radius = Math.ceil(sigma * 3);
  const kernel = Array.from({ length: 2 * radius + 1 }, (_, i) => Math.exp(-((i - radius) ** 2) / (2 * sigma * sigma)));
  const total = kernel.reduce((a, b) => a + b, 0);
  const k = kernel.map((v) => v / total);
  const { columns: C, rows: R } = grid;
  const tmp = new Float64Array(C * R);
  const out = new Float64Array(C * R);
  for (let r = 0; r < R; r++)
    for (let c = 0; c < C; c++) {
      let s = 0;
      for (let i = -radius; i <= radius; i++) {
        const cc = Math.min(C - 1, Math.max(0, c + i));
        s += grid.seconds[r * C + cc]! * k[i + radius]!;
      }
      tmp[r * C + c] = s;
    }
  for (let r = 0; r < R; r++)
    for (let c = 0; c < C; c++) {
      let s = 0;
      for (let i = -radius; i <= radius; i++) {
        const rr = Math.min(R - 1, Math.max(0, r + i));
        s += tmp[rr * C + c]! * k[i + radius]!;
      }
      out[r * C + c] = s;
    }
  return out;
}

/** A perceptual-ish ramp: transparent → blue → green → yellow → red. */
function ramp(t: number): [number, number, number, number] {
  const stops: [number, number, number, number][] = [
    [0, 0, 0, 0],
    [30, 60, 255, 120],
    [40, 220, 80, 170],
    [255, 230, 0, 210],
    [230, 20, 20, 240],
  ];
  const x = Math.min(0.9999, Math.max(0, t)) * (stops.length - 1);
  const i = Math.floor(x);
  const f = x - i;
  const a = stops[i]!;
  const b = stops[i + 1]!;
  return [0, 1, 2, 3].map((j) => a[j]! + (b[j]! - a[j]!) * f) as [number, number, number, number];
}

/**
 * Renders an occupancy grid as a PNG (pngjs): blurred (Gaussian, σ in
 * cells), normalised to its maximum, colour-ramped and blended over a green
 * pitch with its outline and halfway line (pitch space) or over grey (image space).
 * Row 0 of the image is `yMin` (in the pitch frame: the touchline nearest the cameras).
 */
export function renderHeatmapPng(grid: OccupancyGrid, space: PositionSpace, options: HeatmapOptions = {}): Buffer {
  const ppc = options.pixelsPerCell ?? 8;
  const values = blur(grid, options.blurCells ?? 1.5);
  let max = 0;
  for (const v of values) max = Math.max(max, v);
  const width = grid.columns * ppc;
  const height = grid.rows * ppc;
  const png = new PNG({ width, height });
  const pitch = space.kind === 'pitch';
  // A pixel's colour depends only on its cell (stripes are 5 cells wide): one blend per cell, one
  // pixel row per row of cells, copied to the cells' `ppc` pixel rows.
  const line = Buffer.alloc(width * 4);
  for (let row = 0; row < grid.rows; row++) {
    for (let column = 0; column < grid.columns; column++) {
      const stripe = Math.floor(column / 5) % 2 === 0;
      const base: [number, number, number] = pitch ? (stripe ? [46, 125, 50] : [56, 142, 60]) : [90, 90, 90];
      const v = values[row * grid.columns + column]!;
      const [r, g, b, a] = ramp(max > 0 ? v / max : 0);
      const alpha = a / 255;
      const rgb = [0, 1, 2].map((j) => Math.round(base[j]! * (1 - alpha) + [r, g, b][j]! * alpha));
      for (let o = column * ppc * 4; o < (column + 1) * ppc * 4; o += 4) {
        line[o] = rgb[0]!;
        line[o + 1] = rgb[1]!;
        line[o + 2] = rgb[2]!;
        line[o + 3] = 255;
      }
    }
    for (let y = row * ppc; y < (row + 1) * ppc; y++) line.copy(png.data, y * width * 4);
  }
  if (pitch) {
    const line = (x: number, y: number) => {
      if (x < 0 || y < 0 || x >= width || y >= height) return;
      const o = (y * width + x) * 4;
      png.data[o] = 240;
      png.data[o + 1] = 240;
      png.data[o + 2] = 240;
    };
    for (let x = 0; x < width; x++) {
      line(x, 0);
      line(x, height - 1);
    }
    for (let y = 0; y < height; y++) {
      line(0, y);
      line(width - 1, y);
      line(Math.round(width / 2), y);
    }
    const radius = (9.15 / grid.cellSize) * ppc;
    for (let t = 0; t < 720; t++) {
      const a = (t / 720) * 2 * Math.PI;
      line(Math.round(width / 2 + radius * Math.cos(a)), Math.round(height / 2 + radius * Math.sin(a)));
    }
  }
  return PNG.sync.write(png);
}
