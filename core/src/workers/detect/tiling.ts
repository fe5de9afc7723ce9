import { PolyvisionError } from '@polyvision/shared';
import type { Region } from './geometry.ts';

/** How a frame is cut into tiles for detection. */
export interface TilingOptions {
  /** Tiles across; `'auto'` picks one per unit of aspect ratio beyond 2:1 (wide panoramas). */
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
 * @throws PolyvisionError `tiling_invalid` for non-positive counts or an overlap outside [0, 0.5).
 */
export function planTiles(width: number, height: number, options: TilingOptions): Region[] {
  const aspect = width / height;
  const columns = options.columns === 'auto' ? (aspect > 2 ? Math.ceil(aspect / 1.5) : 1) : options.columns;
  const { rows, overlapFraction } = options;
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
