/**
 * 3×3 matrices and 3-vectors for the synthetic camera model, stored
 * row-major in plain arrays (`[m00, m01, m02, m10, …]`), as in the venue
 * calibration file where a matrix is written as three rows.
 */

/** A 3×3 matrix, row-major, 9 numbers. */
export type Mat3 = readonly number[];
/** A 3-vector. */
export type Vec3 = readonly [number, number, number];

/** `a · b` (3×3 by 3×3). */
export function mat3Multiply(a: Mat3, b: Mat3): number[] {
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

/** `m · v`. */
export function mat3MulVec(m: Mat3, v: Vec3): [number, number, number] {
  const [x, y, z] = v;
  return [
    (m[0] as number) * x + (m[1] as number) * y + (m[2] as number) * z,
    (m[3] as number) * x + (m[4] as number) * y + (m[5] as number) * z,
    (m[6] as number) * x + (m[7] as number) * y + (m[8] as number) * z,
  ];
}

/** The transpose of `m`. */
export function mat3Transpose(m: Mat3): number[] {
  return [
    m[0] as number,
    m[3] as number,
    m[6] as number,
    m[1] as number,
    m[4] as number,
    m[7] as number,
    m[2] as number,
    m[5] as number,
    m[8] as number,
  ];
}

/**
 * The inverse of `m` by the adjugate.
 * @throws RangeError when `m` is singular (|det| < 1e-15).
 */
export function mat3Invert(m: Mat3): number[] {
  const [a, b, c, d, e, f, g, h, i] = m as [number, number, number, number, number, number, number, number, number];
  const A = e * i - f * h;
  const B = -(d * i - f * g);
  const C = d * h - e * g;
  const det = a * A + b * B + c * C;
  if (Math.abs(det) < 1e-15) throw new RangeError('matrix is singular');
  const s = 1 / det;
  return [
    A * s,
    -(b * i - c * h) * s,
    (b * f - c * e) * s,
    B * s,
    (a * i - c * g) * s,
    -(a * f - c * d) * s,
    C * s,
    -(a * h - b * g) * s,
    (a * e - b * d) * s,
  ];
}

/** Scales a homography so that its bottom-right entry is 1 (the usual normal form). */
export function normalizeHomography(h: Mat3): number[] {
  const s = h[8] as number;
  if (Math.abs(s) < 1e-15) return [...h];
  return h.map((v) => v / s);
}

/**
 * Applies a homography to a 2-D point: `[u', v'] = (H·[u, v, 1])` divided by
 * its third coordinate (Hartley & Zisserman, Multiple View Geometry, §2.3).
 */
export function applyHomography(h: Mat3, u: number, v: number): [number, number] {
  const [x, y, w] = mat3MulVec(h, [u, v, 1]);
  return [x / w, y / w];
}

/** The row-major array as three rows, the form written to JSON. */
export function mat3Rows(m: Mat3): [[number, number, number], [number, number, number], [number, number, number]] {
  const n = (k: number) => m[k] as number;
  return [
    [n(0), n(1), n(2)],
    [n(3), n(4), n(5)],
    [n(6), n(7), n(8)],
  ];
}

/** Three rows (JSON form) back to a row-major array. */
export function mat3FromRows(rows: readonly (readonly number[])[]): number[] {
  return rows.flatMap((r) => [...r]);
}

export function vecSub(a: Vec3, b: Vec3): [number, number, number] {
  return [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
}

export function vecCross(a: Vec3, b: Vec3): [number, number, number] {
  return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
}

export function vecNormalize(a: Vec3): [number, number, number] {
  const n = Math.hypot(a[0], a[1], a[2]);
  return [a[0] / n, a[1] / n, a[2] / n];
}
