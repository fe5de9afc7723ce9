/**
 * Homography from point correspondences by the normalised Direct Linear
 * Transform (Hartley & Zisserman, Multiple View Geometry, 2nd ed., Algorithm
 * 4.2): both point sets are translated to their centroid and scaled to a mean
 * distance of √2, each correspondence gives two rows of `A·h = 0`, and `h` is
 * the right singular vector of the smallest singular value (ml-matrix SVD).
 */
import { ValidationError } from '@polyvision/shared';
import { Matrix, SingularValueDecomposition } from 'ml-matrix';

/** A 2-D point, pixels (or metres on the pitch plane). */
export type Point2 = readonly [number, number];

/** Similarity transform that normalises `points` (Hartley normalisation), row-major 3×3. */
function normaliser(points: readonly Point2[]): number[] {
  let mx = 0;
  let my = 0;
  for (const [x, y] of points) {
    mx += x / points.length;
    my += y / points.length;
  }
  let d = 0;
  for (const [x, y] of points) d += Math.hypot(x - mx, y - my) / points.length;
  const s = d > 0 ? Math.SQRT2 / d : 1;
  return [s, 0, -s * mx, 0, s, -s * my, 0, 0, 1];
}

/**
 * Estimates `H` with `dst ~ H·src` from ≥ 4 correspondences (least squares
 * in the algebraic error when more are given).
 *
 * @returns H row-major, normalised so that H[8] = 1 (when it is not 0).
 * @throws ValidationError `calibration_too_few_points` (< 4 or lengths differ),
 *   `calibration_degenerate` (collinear or repeated points: the solution is not unique or singular).
 */
export function homographyDlt(src: readonly Point2[], dst: readonly Point2[]): number[] {
  if (src.length !== dst.length || src.length < 4) {
    throw new ValidationError(
      'calibration_too_few_points',
      `a homography needs at least 4 point pairs (got ${src.length} source and ${dst.length} target points)`,
    );
  }
  const ts = normaliser(src);
  const td = normaliser(dst);
  const apply = (t: number[], [x, y]: Point2): Point2 => [
    (t[0] as number) * x + (t[2] as number),
    (t[4] as number) * y + (t[5] as number),
  ];
  const rows: number[][] = [];
  for (let i = 0; i < src.length; i++) {
    const [x, y] = apply(ts, src[i] as Point2);
    const [u, v] = apply(td, dst[i] as Point2);
    rows.push([-x, -y, -1, 0, 0, 0, u * x, u * y, u]);
    rows.push([0, 0, 0, -x, -y, -1, v * x, v * y, v]);
  }
  // Square up to 9 rows so the SVD always yields 9 right singular vectors.
  while (rows.length < 9) rows.push(new Array(9).fill(0));
  const svd = new SingularValueDecomposition(new Matrix(rows), { autoTranspose: false });
  const sv = svd.diagonal;
  const smallest = sv[8] as number;
  const second = sv[7] as number;
  if (!(second > 1e-9 * (sv[0] as number))) {
    throw new ValidationError(
      'calibration_degenerate',
      'the points do not determine a homography (collinear or repeated points)',
    );
  }
  void smallest;
  const h = svd.rightSingularVectors.getColumn(8);
  // Denormalise: H = Td⁻¹ · Hn · Ts.
  const s = td[0] as number;
  const tdInv = [1 / s, 0, -(td[2] as number) / s, 0, 1 / s, -(td[5] as number) / s, 0, 0, 1];
  const out = mul(mul(tdInv, h), ts);
  const det =
    (out[0] as number) * ((out[4] as number) * (out[8] as number) - (out[5] as number) * (out[7] as number)) -
    (out[1] as number) * ((out[3] as number) * (out[8] as number) - (out[5] as number) * (out[6] as number)) +
    (out[2] as number) * ((out[3] as number) * (out[7] as number) - (out[4] as number) * (out[6] as number));
  const scale = Math.max(...out.map(Math.abs));
  if (!(Math.abs(det) > 1e-12 * scale ** 3)) {
    throw new ValidationError('calibration_degenerate', 'the estimated homography is singular');
  }
  const last = out[8] as number;
  return Math.abs(last) > 1e-12 ? out.map((v) => v / last) : out;
}

function mul(a: readonly number[], b: readonly number[]): number[] {
  const out = new Array<number>(9);
  for (let r = 0; r < 3; r++) {
    for (let c = 0; c < 3; c++) {
      out[r * 3 + c] =
        (a[r * 3] as number) * (b[c] as number) +
        (a[r * 3 + 1] as number) * (b[3 + c] as number) +
        (a[r * 3 + 2] as number) * (b[6 + c] as number);
    }
  }
  return out;
}

/** Transfer error `|dst − H·src|` of one correspondence, in target units (∞ behind the camera). */
export function transferError(h: readonly number[], src: Point2, dst: Point2): number {
  const w = (h[6] as number) * src[0] + (h[7] as number) * src[1] + (h[8] as number);
  if (Math.abs(w) < 1e-12) return Number.POSITIVE_INFINITY;
  const x = ((h[0] as number) * src[0] + (h[1] as number) * src[1] + (h[2] as number)) / w;
  const y = ((h[3] as number) * src[0] + (h[4] as number) * src[1] + (h[5] as number)) / w;
  return Math.hypot(x - dst[0], y - dst[1]);
}
