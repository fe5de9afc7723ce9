/**
 * 3×3 homographies on row-major arrays, as the venue calibration writes them
 * (three rows of three numbers acting on column vectors `[u, v, 1]ᵀ`;
 * Hartley & Zisserman, Multiple View Geometry, §2.3).
 */
import { type Matrix3x3, mat3FromRows, mat3Invert, ValidationError } from '@polyvision/shared';

/** A homography, row-major, 9 numbers. */
export type Homography = readonly number[];

/**
 * The inverse of a homography read from `venue.json`.
 *
 * @param what - names the matrix in the error (`camera-1 image_to_panorama`).
 * @throws ValidationError `stitch_singular_calibration` when the matrix is singular
 *   (its determinant, relative to the entries' scale, is below 1e-12) or not finite.
 */
export function invertHomography(rows: Matrix3x3 | Homography, what: string): number[] {
  const m = Array.isArray(rows[0]) ? mat3FromRows(rows as Matrix3x3) : [...(rows as Homography)];
  const scale = Math.max(...m.map((v) => Math.abs(v)));
  if (!Number.isFinite(scale) || scale === 0) {
    throw new ValidationError('stitch_singular_calibration', `${what} is zero or not finite`, {
      details: { matrix: what },
    });
  }
  const n = m.map((v) => v / scale);
  const [a, b, c, d, e, f, g, h, i] = n as [number, number, number, number, number, number, number, number, number];
  const det = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g);
  if (!Number.isFinite(det) || Math.abs(det) < 1e-12) {
    throw new ValidationError('stitch_singular_calibration', `${what} is singular (relative determinant ${det})`, {
      details: { matrix: what, determinant: det },
    });
  }
  return mat3Invert(n).map((v) => v / scale);
}

/**
 * Applies `h` to pixel `(u, v)`; returns `[NaN, NaN]` when the point maps to
 * infinity or to the wrong side of the projective line (`w · side ≤ 0`:
 * points behind the camera; see {@link frontSide}).
 *
 * @param side - +1 or −1, the sign of `w` for points in front. @defaultValue 1
 */
export function projectPixel(h: Homography, u: number, v: number, side = 1): [number, number] {
  const x = (h[0] as number) * u + (h[1] as number) * v + (h[2] as number);
  const y = (h[3] as number) * u + (h[4] as number) * v + (h[5] as number);
  const w = (h[6] as number) * u + (h[7] as number) * v + (h[8] as number);
  if (!(w * side > 1e-12)) return [Number.NaN, Number.NaN];
  return [x / w, y / w];
}

/**
 * The sign of `w` that `h` gives points in front of the camera, taken at a
 * point known to be in front (e.g. the panorama pixel a camera's image centre
 * maps to). A homography is defined up to scale, including its sign, so this
 * is needed before {@link projectPixel} can reject points behind the camera.
 */
export function frontSide(h: Homography, u: number, v: number): 1 | -1 {
  const w = (h[6] as number) * u + (h[7] as number) * v + (h[8] as number);
  return w < 0 ? -1 : 1;
}
