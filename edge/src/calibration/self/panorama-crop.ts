/**
 * The output rectangle of a self-calibrated panorama: the largest axis-aligned
 * rectangle that the cameras see, so the panorama (and the virtual camera and
 * report cut from it) shows no black bands or wedges where no camera looks.
 *
 * The panorama is sampled every `cellPx / 2` pixels; a cell of `cellPx` is
 * fully seen when all 9 samples on and inside its border are seen by at least
 * one camera, and its unseen share is that of its 4 own samples. For every
 * pair of top and bottom cell rows, the widest column range whose unseen
 * cells stay within the allowance is found by prefix sums and a binary search
 * over suffix minima (O(rows² · cols · log cols)); the largest range that
 * keeps at least `minPitchKept` of the pitch-line pixels wins. First strictly
 * (every cell fully seen); if no such rectangle keeps the pitch, with
 * `maxUnseenFraction` of unseen pixels allowed; if still none, the pitch wins:
 * the pitch lines' box, with its unseen pixels filled (`filled` true, the
 * fraction measured). Corners and sizes are even (4:2:0 chroma).
 */

/** A rectangle of panorama pixels (even corner and size). */
export interface CropRect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** What {@link chooseCoveredCrop} chose and measured. */
export interface PanoramaCrop {
  rect: CropRect;
  /** Fraction (0–1) of the rectangle's pixels no camera sees (sampled every `cellPx / 2` px). */
  unseenFraction: number;
  /** The same fraction over the whole uncropped panorama. */
  unseenFractionBefore: number;
  /** Fraction (0–1) of the pitch-line pixels inside the panorama that the rectangle keeps. */
  pitchKeptFraction: number;
  /** True when no fully seen rectangle keeps the pitch, so the rectangle holds unseen (filled) pixels. */
  filled: boolean;
  /** How it was chosen: every cell seen, within the unseen allowance, or the pitch lines' box. */
  method: 'seen' | 'tolerance' | 'pitch_box';
}

/** Input of {@link chooseCoveredCrop}. */
export interface CropInput {
  /** The uncropped panorama's size, pixels. */
  widthPx: number;
  heightPx: number;
  /** Whether at least one camera sees panorama pixel (x, y) (fractional positions allowed). */
  seen: (x: number, y: number) => boolean;
  /** Pitch-line pixels in panorama coordinates, interleaved x, y (points outside the panorama are ignored). */
  pitchPoints: ArrayLike<number>;
}

/** Options of {@link chooseCoveredCrop}. */
export interface CropOptions {
  /** Grid cell size, panorama pixels (even). @defaultValue the even number nearest width / 960, at least 2 */
  cellPx?: number;
  /** Smallest share of the pitch-line pixels the rectangle must keep. @defaultValue 0.995 */
  minPitchKept?: number;
  /** Unseen share of the rectangle allowed when no fully seen one keeps the pitch. @defaultValue 0.002 */
  maxUnseenFraction?: number;
}

function even(v: number): number {
  return v - (v % 2);
}

/**
 * Chooses the panorama's output rectangle (see the file's comment).
 *
 * @returns the rectangle in uncropped panorama pixels with its measured unseen and
 *   pitch fractions; the whole panorama (rounded down to even) when every cell is seen.
 */
export function chooseCoveredCrop(input: CropInput, options: CropOptions = {}): PanoramaCrop {
  const { widthPx: W, heightPx: H, seen } = input;
  const cell = Math.max(2, even(options.cellPx ?? Math.round(W / 960)));
  const minPitchKept = options.minPitchKept ?? 0.995;
  const cols = Math.ceil(W / cell);
  const rows = Math.ceil(H / cell);
  // Seen-ness on a lattice every cell / 2 px (clamped to the panorama's last pixel).
  const sub = 2;
  const lcols = cols * sub + 1;
  const lrows = rows * sub + 1;
  const lattice = new Uint8Array(lcols * lrows);
  for (let r = 0; r < lrows; r++) {
    const y = Math.min(H - 1, (r * cell) / sub);
    for (let c = 0; c < lcols; c++) lattice[r * lcols + c] = seen(Math.min(W - 1, (c * cell) / sub), y) ? 1 : 0;
  }
  // Per cell: 1 when not fully seen (strict cost), and its unseen share (tolerant cost).
  const notFull = new Float64Array(cols * rows);
  const unseenShare = new Float64Array(cols * rows);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      let all = 0;
      let own = 0;
      for (let j = 0; j <= sub; j++) {
        for (let i = 0; i <= sub; i++) {
          if (lattice[(r * sub + j) * lcols + c * sub + i]) continue;
          all++;
          if (i < sub && j < sub) own++;
        }
      }
      notFull[r * cols + c] = all > 0 ? 1 : 0;
      unseenShare[r * cols + c] = own / (sub * sub);
    }
  }

  // Pitch-line pixels per cell, as a 2-D prefix sum.
  const pts = input.pitchPoints;
  const prefix = new Float64Array((cols + 1) * (rows + 1));
  let pitchTotal = 0;
  const xsPitch: number[] = [];
  const ysPitch: number[] = [];
  for (let k = 0; k + 1 < pts.length; k += 2) {
    const x = pts[k] as number;
    const y = pts[k + 1] as number;
    if (!(x >= 0 && x < W && y >= 0 && y < H)) continue;
    const c = Math.floor(x / cell);
    const r = Math.floor(y / cell);
    prefix[(r + 1) * (cols + 1) + c + 1] = (prefix[(r + 1) * (cols + 1) + c + 1] as number) + 1;
    pitchTotal++;
    xsPitch.push(x);
    ysPitch.push(y);
  }
  for (let r = 1; r <= rows; r++) {
    for (let c = 1; c <= cols; c++) {
      const i = r * (cols + 1) + c;
      prefix[i] =
        (prefix[i] as number) +
        (prefix[i - 1] as number) +
        (prefix[i - cols - 1] as number) -
        (prefix[i - cols - 2] as number);
    }
  }
  /** Pitch points in cells [c0, c1) × [r0, r1). */
  const pitchIn = (c0: number, r0: number, c1: number, r1: number) =>
    (prefix[r1 * (cols + 1) + c1] as number) -
    (prefix[r0 * (cols + 1) + c1] as number) -
    (prefix[r1 * (cols + 1) + c0] as number) +
    (prefix[r0 * (cols + 1) + c0] as number);
  const needPitch = minPitchKept * pitchTotal - 1e-9;

  /**
   * The largest rectangle of cells whose summed cost is at most `tolerance` × its cell count and that keeps
   * the pitch; null when none does.
   */
  const search = (cost: Float64Array, tolerance: number) => {
    // Per column, cost prefix sums down the rows.
    const colPrefix = new Float64Array((rows + 1) * cols);
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        colPrefix[(r + 1) * cols + c] = (colPrefix[r * cols + c] as number) + (cost[r * cols + c] as number);
      }
    }
    let found: { c0: number; r0: number; c1: number; r1: number; area: number } | null = null;
    const S = new Float64Array(cols + 1);
    const suffixMin = new Float64Array(cols + 1);
    for (let r0 = 0; r0 < rows; r0++) {
      // Tallest first, so the area bound below prunes the rest early.
      for (let r1 = rows; r1 > r0; r1--) {
        const h = r1 - r0;
        if (found && cols * h <= found.area) break;
        if (pitchIn(0, r0, cols, r1) < needPitch) continue;
        for (let c = 0; c < cols; c++) {
          const v = (colPrefix[r1 * cols + c] as number) - (colPrefix[r0 * cols + c] as number) - tolerance * h;
          S[c + 1] = (S[c] as number) + v;
        }
        suffixMin[cols] = S[cols] as number;
        for (let c = cols - 1; c >= 0; c--) suffixMin[c] = Math.min(S[c] as number, suffixMin[c + 1] as number);
        for (let c0 = 0; c0 < cols; c0++) {
          if (found && (cols - c0) * h <= found.area) break;
          // Largest c1 > c0 with S[c1] ≤ S[c0]: suffixMin is non-decreasing, so binary search it.
          const target = (S[c0] as number) + 1e-9;
          if (!((suffixMin[c0 + 1] as number) <= target)) continue;
          let lo = c0 + 1;
          let hi = cols;
          while (lo < hi) {
            const mid = (lo + hi + 1) >> 1;
            if ((suffixMin[mid] as number) <= target) lo = mid;
            else hi = mid - 1;
          }
          const area = (lo - c0) * h;
          if (found && area <= found.area) continue;
          if (pitchIn(c0, r0, lo, r1) < needPitch) continue;
          found = { c0, r0, c1: lo, r1, area };
        }
      }
    }
    return found;
  };

  const toRect = (x0: number, y0: number, x1: number, y1: number): CropRect => {
    const x = Math.max(0, even(Math.ceil(x0)));
    const y = Math.max(0, even(Math.ceil(y0)));
    const width = Math.max(2, even(Math.min(W, Math.floor(x1)) - x));
    const height = Math.max(2, even(Math.min(H, Math.floor(y1)) - y));
    return { x, y, width, height };
  };
  let rect: CropRect;
  let method: PanoramaCrop['method'] = 'seen';
  let chosen = search(notFull, 0);
  if (!chosen) {
    method = 'tolerance';
    chosen = search(unseenShare, options.maxUnseenFraction ?? 0.002);
  }
  if (chosen) {
    rect = toRect(chosen.c0 * cell, chosen.r0 * cell, chosen.c1 * cell, chosen.r1 * cell);
  } else {
    // No rectangle within the allowance keeps the pitch: the pitch lines' box (trimmed by the allowance), unseen corners filled.
    method = 'pitch_box';
    const xs = [...xsPitch].sort((a, b) => a - b);
    const ys = [...ysPitch].sort((a, b) => a - b);
    const trim = Math.floor(((1 - minPitchKept) / 4) * pitchTotal);
    const at = (v: number[], i: number) => v[Math.min(v.length - 1, Math.max(0, i))] ?? 0;
    rect =
      pitchTotal === 0
        ? toRect(0, 0, W, H)
        : toRect(
            at(xs, trim) - cell,
            at(ys, trim) - cell,
            at(xs, pitchTotal - 1 - trim) + cell,
            at(ys, pitchTotal - 1 - trim) + cell,
          );
  }

  const unseenIn = (r: CropRect) => {
    const stride = Math.max(1, cell / 2);
    let total = 0;
    let unseen = 0;
    for (let y = r.y; y < r.y + r.height; y += stride) {
      for (let x = r.x; x < r.x + r.width; x += stride) {
        total++;
        if (!seen(x, y)) unseen++;
      }
    }
    return total === 0 ? 0 : unseen / total;
  };
  let kept = 0;
  for (let k = 0; k < xsPitch.length; k++) {
    const x = xsPitch[k] as number;
    const y = ysPitch[k] as number;
    if (x >= rect.x && x < rect.x + rect.width && y >= rect.y && y < rect.y + rect.height) kept++;
  }
  const unseenFraction = unseenIn(rect);
  return {
    rect,
    unseenFraction,
    unseenFractionBefore: unseenIn({ x: 0, y: 0, width: W, height: H }),
    pitchKeptFraction: pitchTotal === 0 ? 1 : kept / pitchTotal,
    filled: method !== 'seen' && unseenFraction > 0,
    method,
  };
}
