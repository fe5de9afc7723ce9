import { PolyvisionError } from '@polyvision/shared';
import type { Region } from './geometry.ts';

/** How a frame is cut into tiles for detection. */
export interface TilingOptions {
  /**
   * Tiles across; `'auto'` picks one per 1.5 units of aspect ratio for frames
   * wider than 2:1 (wide panoramas), but never more than it takes to see the
   * frame at the model's native scale (see {@link planTiles}).
   */
  columns: number | 'auto';
  /** Tiles down. */
  rows: number;
  /** Share of a tile that overlaps its neighbour, in [0, 0.5). */
  overlapFraction: number;
}

/**
 * Cuts a `width × height` frame into `columns × rows` overlapping tiles that
 * together cover it; neighbours share `overlapFraction` of a tile, so a player
 * cut by one tile border is whole in the next tile (SAHI-style slicing; the
 * per-tile detections are merged by class-wise NMS).
 *
 * With `columns: 'auto'` and the model's input width known, the count is
 * capped at the fewest tiles whose width is at most that input width
 * (`n = ceil((width / inputWidth − overlap) / (1 − overlap))`): more tiles
 * would only upscale the picture past the scale the model saw in training
 * (on the demo's 2880×392 panorama and the 1280×720 default detector: 3 tiles
 * instead of 5, people precision 0.94 instead of 0.62, bench/README.md § workers).
 *
 * @param modelInputWidthPx - the model's input width in pixels, when known.
 * @throws PolyvisionError `tiling_invalid` for non-positive counts or an overlap outside [0, 0.5).
 */
export function planTiles(width: number, height: number, options: TilingOptions, modelInputWidthPx?: number): Region[] {
  const { rows, overlapFraction } = options;
  const columns =
    options.columns === 'auto' ? autoColumns(width, height, overlapFraction, modelInputWidthPx) : options.columns;
  if (!(columns >= 1 && rows >= 1 && Number.isInteger(columns) && Number.isInteger(rows))) {
    throw new PolyvisionError('tiling_invalid', `tile grid must be whole numbers ≥ 1, got ${columns}×${rows}`);
  }
  if (!(overlapFraction >= 0 && overlapFraction < 0.5)) {
    throw new PolyvisionError('tiling_invalid', `tile overlap must be in [0, 0.5), got ${overlapFraction}`);
  }
  const span = (total: number, count: number) => {
    if (count === 1) return [{ start: 0, size: total }];
    // count·size − (count−1)·overlap·size = total
    const size = Math.ceil(total / (count - (count - 1) * overlapFraction));
    const step = (total - size) / (count - 1);
    return Array.from({ length: count }, (_, i) => ({ start: Math.round(i * step), size }));
  };
  const regions: Region[] = [];
  for (const r of span(height, rows)) {
    for (const c of span(width, columns)) regions.push({ x: c.start, y: r.start, width: c.size, height: r.size });
  }
  return regions;
}

/** The `'auto'` column count of {@link planTiles}. */
function autoColumns(width: number, height: number, overlapFraction: number, modelInputWidthPx?: number): number {
  const aspect = width / height;
  if (aspect <= 2) return 1;
  const byAspect = Math.ceil(aspect / 1.5);
  if (!modelInputWidthPx || !(overlapFraction < 1)) return byAspect;
  const atNativeScale = Math.max(1, Math.ceil((width / modelInputWidthPx - overlapFraction) / (1 - overlapFraction)));
  return Math.min(byAspect, atNativeScale);
}
