/**
 * The output rectangle of a self-calibrated panorama: the largest axis-aligned
 * rectangle that the cameras see, so the panorama (and the virtual camera and
 * report cut from it) shows no black bands or wedges where no camera looks.
 *
 * The panorama plane is sampled on a grid of `cellPx` cells; a cell counts as
 * seen when its four corners and its centre are seen by at least one camera
 * (coverage borders are smooth lens/homography curves, so this is conservative
 * up to a sliver). Every maximal all-seen rectangle of cells is a candidate
 * (one per row and limiting column, the histogram-and-stack method for the
 * largest rectangle in a binary matrix); the largest candidate that keeps at
 * least `minPitchKept` of the pitch-line pixels wins. When none keeps the
 * pitch, the pitch wins: the crop is the pitch lines' box and its unseen
 * pixels stay filled (`filled` true, with the unseen fraction measured).
 * Corners and sizes are even (4:2:0 chroma).
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
  /** Fraction (0–1) of the rectangle's pixels no camera sees (sampled every `cellPx / 4` px). */
  unseenFraction: number;
  /** The same fraction over the whole uncropped panorama. */
  unseenFractionBefore: number;
  /** Fraction (0–1) of the pitch-line pixels inside the panorama that the rectangle keeps. */
  pitchKeptFraction: number;
  /** True when no fully seen rectangle keeps the pitch, so the rectangle holds unseen (filled) pixels. */
  filled: boolean;
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
  /** Grid cell size, panorama pixels (even). @defaultValue the even number nearest width / 480, at least 2 */
  cellPx?: number;
  /** Smallest share of the pitch-line pixels the rectangle must keep. @defaultValue 0.995 */
  minPitchKept?: number;
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
  const cell = Math.max(2, even(options.cellPx ?? Math.round(W / 480)));
  const minPitchKept = options.minPitchKept ?? 0.995;
  const cols = Math.ceil(W / cell);
  const rows = Math.ceil(H / cell);
  // Seen-ness at the lattice corners (clamped to the panorama's last pixel) and at cell centres.
  const lx = (c: number) => Math.min(W - 1, c * cell);
  const ly = (r: number) => Math.min(H - 1, r * cell);
  const corner = new Uint8Array((cols + 1) * (rows + 1));
  for (let r = 0; r <= rows; r++) {
    for (let c = 0; c <= cols; c++) corner[r * (cols + 1) + c] = seen(lx(c), ly(r)) ? 1 : 0;
  }
  const ok = new Uint8Array(cols * rows);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const i = r * (cols + 1) + c;
      const corners = corner[i] && corner[i + 1] && corner[i + cols + 1] && corner[i + cols + 2];
      ok[r * cols + c] = corners && seen((lx(c) + lx(c + 1)) / 2, (ly(r) + ly(r + 1)) / 2) ? 1 : 0;
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

  // Maximal all-seen rectangles: per bottom row, a histogram of seen run heights and a stack.
  let best: { c0: number; r0: number; c1: number; r1: number; area: number } | null = null;
  const heights = new Int32Array(cols);
  const stack: number[] = [];
  const consider = (c0: number, c1: number, r1: number, h: number) => {
    if (h <= 0 || c1 <= c0) return;
    const area = (Math.min(W, c1 * cell) - c0 * cell) * (Math.min(H, r1 * cell) - (r1 - h) * cell);
    if (best && area <= best.area) return;
    if (pitchIn(c0, r1 - h, c1, r1) < needPitch) return;
    best = { c0, r0: r1 - h, c1, r1, area };
  };
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) heights[c] = ok[r * cols + c] ? (heights[c] as number) + 1 : 0;
    stack.length = 0;
    for (let c = 0; c <= cols; c++) {
      const h = c < cols ? (heights[c] as number) : 0;
      while (stack.length > 0 && (heights[stack[stack.length - 1] as number] as number) >= h) {
        const top = stack.pop() as number;
        const left = stack.length > 0 ? (stack[stack.length - 1] as number) + 1 : 0;
        consider(left, c, r + 1, heights[top] as number);
      }
      stack.push(c);
    }
  }

  const toRect = (x0: number, y0: number, x1: number, y1: number): CropRect => {
    const x = Math.max(0, even(Math.ceil(x0)));
    const y = Math.max(0, even(Math.ceil(y0)));
    const width = Math.max(2, even(Math.min(W, Math.floor(x1)) - x));
    const height = Math.max(2, even(Math.min(H, Math.floor(y1)) - y));
    return { x, y, width, height };
  };
  let rect: CropRect;
  let filled = false;
  const chosen = best as { c0: number; r0: number; c1: number; r1: number } | null;
  if (chosen) {
    rect = toRect(chosen.c0 * cell, chosen.r0 * cell, chosen.c1 * cell, chosen.r1 * cell);
  } else {
    // No seen rectangle keeps the pitch: the pitch lines' box (trimmed by the allowance), unseen corners filled.
    filled = true;
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
    const stride = Math.max(1, cell / 4);
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
    filled: filled && unseenFraction > 0,
  };
}
