import { PolyvisionError } from '@polyvision/shared';
import type { Region } from './geometry.ts';

/** How a frame is cut into tiles for detection. */
export interface TilingOptions {
  /**
   * `'auto'`: the grid that brings people to the model's training scale
   * ({@link chooseTileGrid}); `'off'`: the whole frame, letterboxed;
   * `'grid'`: exactly `columns × rows`.
   */
  mode: 'auto' | 'off' | 'grid';
  /** Tiles across (`'grid'` mode). */
  columns: number;
  /** Tiles down (`'grid'` mode). */
  rows: number;
  /** Share of a tile that overlaps its neighbour, in [0, 0.5). */
  overlapFraction: number;
  /**
   * Expected person height in source pixels (a venue/rig hint). In `'auto'`
   * mode without it, the detect stage estimates it from a first pass over a
   * few frames ({@link nativeScaleGrid}); when that finds too few people, the
   * whole frame is one tile (and the output says so).
   */
  personHeightPx?: number;
  /**
   * The model's training scale: the person height in model-input pixels from
   * which the model sees people well (e.g. the 10th percentile of its training
   * boxes). Default `0.1 × input height`; the repository's player detector
   * uses 20 (detect handler `DEFAULT_MODEL_PERSON_HEIGHT_PX`).
   */
  modelPersonHeightPx?: number;
  /** Most tiles per frame `'auto'` may choose (cost grows linearly). @defaultValue 16 */
  maxTiles: number;
  /**
   * Largest source→input magnification `'auto'` aims for (whole tile counts
   * may give a little more). @defaultValue 2
   */
  maxUpscale: number;
}

/** A tile grid and the scale it shows the frame at. */
export interface TileGrid {
  columns: number;
  rows: number;
  /** Source → model-input magnification of every tile (letterbox scale). */
  scale: number;
}

/** Frame, model and scale facts {@link chooseTileGrid} works from. */
export interface GridInputs {
  frameWidth: number;
  frameHeight: number;
  inputWidth: number;
  inputHeight: number;
  overlapFraction: number;
  maxTiles: number;
  maxUpscale: number;
}

/** Tiles needed along one axis so each is at most `maxTilePx` long: `n(1 − o) + o ≥ total / maxTilePx`. */
function tilesAlong(totalPx: number, maxTilePx: number, overlapFraction: number): number {
  return Math.max(1, Math.ceil((totalPx / maxTilePx - overlapFraction) / (1 - overlapFraction) - 1e-9));
}

/** Length of each of `count` tiles covering `totalPx` with `overlapFraction` overlap. */
function tileLength(totalPx: number, count: number, overlapFraction: number): number {
  return count === 1 ? totalPx : Math.ceil(totalPx / (count - (count - 1) * overlapFraction));
}

/** The letterbox scale of the tiles of a `columns × rows` grid. */
export function gridScale(g: GridInputs, columns: number, rows: number): number {
  const w = tileLength(g.frameWidth, columns, g.overlapFraction);
  const h = tileLength(g.frameHeight, rows, g.overlapFraction);
  return Math.min(g.inputWidth / w, g.inputHeight / h);
}

/**
 * The fewest tiles that show the frame at magnification ≥ `wantedScale`
 * (source → model input): each tile at most `inputWidth / s × inputHeight / s`
 * source pixels, so `columns = ⌈(W·s/inputWidth − o)/(1 − o)⌉` and likewise
 * rows (`o` the overlap). `s` is capped at `maxUpscale`; when the grid would
 * exceed `maxTiles`, `s` is lowered (×0.95 steps) until it fits.
 */
export function gridForScale(g: GridInputs, wantedScale: number): TileGrid {
  let s = Math.min(wantedScale, g.maxUpscale);
  for (;;) {
    const whole = Math.min(g.inputWidth / g.frameWidth, g.inputHeight / g.frameHeight);
    if (whole >= s) return { columns: 1, rows: 1, scale: whole };
    const columns = tilesAlong(g.frameWidth, g.inputWidth / s, g.overlapFraction);
    const rows = tilesAlong(g.frameHeight, g.inputHeight / s, g.overlapFraction);
    if (columns * rows <= g.maxTiles || s <= whole) return { columns, rows, scale: gridScale(g, columns, rows) };
    s *= 0.95;
  }
}

/**
 * The grid that sees the frame at the model's native scale (tiles no larger
 * than the model input, magnification ≈ 1; frames smaller than the input stay
 * whole). Used for the first pass that estimates the person height.
 */
export function nativeScaleGrid(g: GridInputs): TileGrid {
  return gridForScale(g, 1);
}

/**
 * The tile grid chosen from object scale (`'auto'` tiling): the magnification
 * that brings a person of `personHeightPx` source pixels to the model's
 * training scale `modelPersonHeightPx` (input pixels) is
 * `s = modelPersonHeightPx / personHeightPx`, then {@link gridForScale}.
 * Works for any aspect ratio (columns and rows are chosen independently).
 *
 * Numbers (core/README.md § detect): the player detector (1280×720 input,
 * people from 20 px) on 1920×1080 real broadcast frames (people ~54 px):
 * s = 0.37 < 0.67 → the whole frame, 1 tile; on its own 1280×720 synthetic
 * cameras (people ~25 px): s = 0.8 < 1 → 1 tile; on the demo's 2880×392
 * panorama (people ~24 px): s = 0.83 → 3×1 tiles; a far camera at 1080p
 * with people of 12 px: s = 1.67 → 3×3 tiles.
 */
export function chooseTileGrid(g: GridInputs, personHeightPx: number, modelPersonHeightPx: number): TileGrid {
  if (!(personHeightPx > 0 && modelPersonHeightPx > 0)) {
    throw new PolyvisionError(
      'tiling_invalid',
      `person heights must be positive, got ${personHeightPx} px (source) and ${modelPersonHeightPx} px (model)`,
    );
  }
  return gridForScale(g, modelPersonHeightPx / personHeightPx);
}

/**
 * Cuts a `width × height` frame into `columns × rows` overlapping tiles that
 * together cover it; neighbours share `overlapFraction` of a tile, so a player
 * cut by one tile border is whole in the next tile (SAHI-style slicing; the
 * per-tile detections are merged by class-wise NMS).
 *
 * @throws PolyvisionError `tiling_invalid` for non-positive counts or an overlap outside [0, 0.5).
 */
export function planTiles(
  width: number,
  height: number,
  grid: { columns: number; rows: number; overlapFraction: number },
): Region[] {
  const { columns, rows, overlapFraction } = grid;
  if (!(columns >= 1 && rows >= 1 && Number.isInteger(columns) && Number.isInteger(rows))) {
    throw new PolyvisionError('tiling_invalid', `tile grid must be whole numbers ≥ 1, got ${columns}×${rows}`);
  }
  if (!(overlapFraction >= 0 && overlapFraction < 0.5)) {
    throw new PolyvisionError('tiling_invalid', `tile overlap must be in [0, 0.5), got ${overlapFraction}`);
  }
  const span = (total: number, count: number) => {
    if (count === 1) return [{ start: 0, size: total }];
    const size = tileLength(total, count, overlapFraction);
    const step = (total - size) / (count - 1);
    return Array.from({ length: count }, (_, i) => ({ start: Math.round(i * step), size }));
  };
  const regions: Region[] = [];
  for (const r of span(height, rows)) {
    for (const c of span(width, columns)) regions.push({ x: c.start, y: r.start, width: c.size, height: r.size });
  }
  return regions;
}

/**
 * Parses a tiling setting: `auto`, `off`, a grid `CxR` (e.g. `2x1`), or an
 * expected person height `NNpx` (auto tiling with that hint).
 *
 * @throws PolyvisionError `tiling_invalid` naming what is accepted.
 */
export function parseTilingSetting(text: string): Pick<TilingOptions, 'mode'> & Partial<TilingOptions> {
  const t = text.trim().toLowerCase();
  if (t === 'auto' || t === 'off') return { mode: t };
  const grid = /^(\d+)x(\d+)$/.exec(t);
  if (grid && Number(grid[1]) >= 1 && Number(grid[2]) >= 1 && Number(grid[1]) <= 64 && Number(grid[2]) <= 64) {
    return { mode: 'grid', columns: Number(grid[1]), rows: Number(grid[2]) };
  }
  const px = /^(\d+(?:\.\d+)?)px$/.exec(t);
  if (px && Number(px[1]) >= 2 && Number(px[1]) <= 4000) return { mode: 'auto', personHeightPx: Number(px[1]) };
  throw new PolyvisionError(
    'tiling_invalid',
    `tiling ${JSON.stringify(text)}: expected auto, off, a grid like 2x1, or a person height like 60px`,
  );
}
