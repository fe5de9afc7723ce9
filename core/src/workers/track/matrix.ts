/** Small dense matrices (row arrays) for the Kalman filter: 8×8 state, 4×4 innovation. */
export type Matrix = number[][];

export function identity(n: number): Matrix {
  return Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (i === j ? 1 : 0)));
}

export function multiply(a: Matrix, b: Matrix): Matrix {
  const rows = a.length;
  const inner = b.length;
  const cols = b[0]!.length;
  const out: Matrix = Array.from({ length: rows }, () => new Array<number>(cols).fill(0));
  for (let i = 0; i < rows; i++) {
    const ai = a[i]!;
    const oi = out[i]!;
    for (let k = 0; k < inner; k++) {
      const v = ai[k]!;
      if (v === 0) continue;
      const bk = b[k]!;
      for (let j = 0; j < cols; j++) oi[j]! += v * bk[j]!;
    }
  }
  return out;
}

export function transpose(a: Matrix): Matrix {
  return a[0]!.map((_, j) => a.map((row) => row[j]!));
}

export function add(a: Matrix, b: Matrix, sign = 1): Matrix {
  return a.map((row, i) => row.map((v, j) => v + sign * b[i]![j]!));
}

export function multiplyVector(a: Matrix, v: readonly number[]): number[] {
  return a.map((row) => row.reduce((sum, x, j) => sum + x * v[j]!, 0));
}

export function diagonal(values: readonly number[]): Matrix {
  return values.map((v, i) => values.map((_, j) => (i === j ? v : 0)));
}

/** Inverse by Gauss–Jordan elimination with partial pivoting; throws on a singular matrix. */
export function invert(a: Matrix): Matrix {
  const n = a.length;
  const m = a.map((row, i) => [...row, ...identity(n)[i]!]);
  for (let col = 0; col < n; col++) {
    let pivot = col;
    for (let r = col + 1; r < n; r++) if (Math.abs(m[r]![col]!) > Math.abs(m[pivot]![col]!)) pivot = r;
    if (Math.abs(m[pivot]![col]!) < 1e-12) throw new Error('singular matrix');
    [m[col], m[pivot]] = [m[pivot]!, m[col]!];
    const p = m[col]![col]!;
    for (let j = 0; j < 2 * n; j++) m[col]![j]! /= p;
    for (let r = 0; r < n; r++) {
      if (r === col) continue;
      const f = m[r]![col]!;
      if (f === 0) continue;
      for (let j = 0; j < 2 * n; j++) m[r]![j]! -= f * m[col]![j]!;
    }
  }
  return m.map((row) => row.slice(n));
}
