/**
 * The panorama plane of a two-camera rig: the plane "half way" between the
 * cameras. With `H` mapping camera B's undistorted pixels to camera A's, the
 * principal square root `G = H^½` (Denman & Beavers, "The matrix sign function
 * and computations in systems", 1976) splits the warp evenly: camera A goes to
 * the middle plane by `G⁻¹`, camera B by `G⁻¹·H = G`. For a rotating camera
 * pair (`H = K·R·K⁻¹`) this is exactly a virtual camera turned half way,
 * `K·R^½·K⁻¹`, so neither half of the pitch is stretched more than the other
 * and the far side keeps its sharpness on both sides of the seam.
 */
import { inverse, Matrix } from 'ml-matrix';

/**
 * Principal square root of a 3×3 homography, scaled to determinant 1 first.
 * @throws Error `no real square root` when the iteration does not converge
 *   (e.g. a homography with eigenvalues on the negative real axis: a mirrored camera).
 */
export function homographySqrt(h: readonly number[]): number[] {
  let m = new Matrix([h.slice(0, 3), h.slice(3, 6), h.slice(6, 9)] as number[][]);
  const det =
    m.get(0, 0) * (m.get(1, 1) * m.get(2, 2) - m.get(1, 2) * m.get(2, 1)) -
    m.get(0, 1) * (m.get(1, 0) * m.get(2, 2) - m.get(1, 2) * m.get(2, 0)) +
    m.get(0, 2) * (m.get(1, 0) * m.get(2, 1) - m.get(1, 1) * m.get(2, 0));
  if (!(det > 0)) m = m.mul(-1);
  m = m.div(Math.cbrt(Math.abs(det)));
  let y = m.clone();
  let z = Matrix.eye(3);
  for (let i = 0; i < 100; i++) {
    let yi: Matrix;
    let zi: Matrix;
    try {
      yi = inverse(y);
      zi = inverse(z);
    } catch (error) {
      throw new Error(`no real square root of the homography (${(error as Error).message})`);
    }
    const yNext = y.clone().add(zi).mul(0.5);
    const zNext = z.clone().add(yi).mul(0.5);
    const change = yNext.clone().sub(y).norm('frobenius');
    y = yNext;
    z = zNext;
    if (change < 1e-13) break;
  }
  const check = y.mmul(y).sub(m).norm('frobenius');
  if (!(check < 1e-6)) throw new Error(`no real square root of the homography (residual ${check})`);
  return y.to1DArray();
}

/** Row-major 3×3 product `a·b`. */
export function mul3(a: readonly number[], b: readonly number[]): number[] {
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

/** Row-major 3×3 inverse. */
export function inv3(a: readonly number[]): number[] {
  return inverse(new Matrix([a.slice(0, 3), a.slice(3, 6), a.slice(6, 9)] as number[][])).to1DArray();
}

/** Applies a row-major homography to a point; NaN where it maps to infinity or behind (w ≤ 0). */
export function apply3(h: readonly number[], x: number, y: number): [number, number] {
  const w = (h[6] as number) * x + (h[7] as number) * y + (h[8] as number);
  if (!(w > 1e-12)) return [Number.NaN, Number.NaN];
  return [
    ((h[0] as number) * x + (h[1] as number) * y + (h[2] as number)) / w,
    ((h[3] as number) * x + (h[4] as number) * y + (h[5] as number)) / w,
  ];
}

/**
 * Linear magnification of `h` at `(x, y)`: the square root of the Jacobian's
 * determinant (target pixels per source pixel, averaged over directions).
 */
export function localScale(h: readonly number[], x: number, y: number): number {
  const e = 0.5;
  const [x0, y0] = apply3(h, x - e, y);
  const [x1, y1] = apply3(h, x + e, y);
  const [x2, y2] = apply3(h, x, y - e);
  const [x3, y3] = apply3(h, x, y + e);
  const det = ((x1 - x0) * (y3 - y2) - (y1 - y0) * (x3 - x2)) / (4 * e * e);
  return Math.sqrt(Math.abs(det));
}
