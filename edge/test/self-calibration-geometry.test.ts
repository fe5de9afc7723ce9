/**
 * The self-calibration's geometry on exact inputs: the division lens model and
 * its closed-form inverse, its Brown–Conrady fit, the homography square root
 * (half-way panorama plane), and the time offset from motion energy.
 */
import { describe, expect, it } from 'vitest';
import {
  apply3,
  brownFromDivision,
  distortBrown,
  distortDivision,
  estimateTimeOffset,
  homographySqrt,
  mul3,
  undistortDivision,
} from '../src/calibration/index.ts';

const lens = { lambda: -0.25, cx: 1535.5, cy: 863.5, normPx: Math.hypot(3072, 1728) / 2 };

describe('lens models', () => {
  it('distortDivision inverts undistortDivision across the image', () => {
    let worst = 0;
    for (const [u, v] of [
      [0, 0],
      [3071, 1727],
      [1500, 100],
      [2900, 900],
    ] as const) {
      const [x, y] = undistortDivision(lens, u, v);
      const [du, dv] = distortDivision(lens, x, y);
      worst = Math.max(worst, Math.hypot(du - u, dv - v));
    }
    expect(worst).toBeLessThan(1e-6);
    // Barrel (λ < 0): undistortion moves the corners outwards.
    const [cx] = undistortDivision(lens, 0, 0);
    expect(cx).toBeLessThan(-100);
  });

  it('the Brown–Conrady fit of a division lens agrees with it inside the image', () => {
    const fit = brownFromDivision(lens, 0.8 * lens.normPx);
    expect(fit.distortion.k1).toBeLessThan(0);
    const [x, y] = undistortDivision(lens, 400, 300);
    const [u, v] = distortBrown(fit.intrinsics, fit.distortion, x, y);
    expect(Math.hypot(u - 400, v - 300)).toBeLessThan(1);
  });
});

describe('half-way panorama plane', () => {
  it('G = H^½ satisfies G·G = H (up to scale) and splits a rotation evenly', () => {
    const f = 1500;
    const a = (20 * Math.PI) / 180;
    // K·R_y(a)·K⁻¹ for a camera turned by 20° about the vertical axis.
    const c = Math.cos(a);
    const s = Math.sin(a);
    const k = [f, 0, 960, 0, f, 540, 0, 0, 1];
    const kInv = [1 / f, 0, -960 / f, 0, 1 / f, -540 / f, 0, 0, 1];
    const h = mul3(mul3(k, [c, 0, s, 0, 1, 0, -s, 0, c]), kInv);
    const g = homographySqrt(h);
    const gg = mul3(g, g);
    const [x1, y1] = apply3(gg, 100, 200);
    const [x2, y2] = apply3(h, 100, 200);
    expect(Math.hypot(x1 - x2, y1 - y2)).toBeLessThan(1e-6);
    // The image centre moves by f·tan(10°) under the half rotation.
    const [gx] = apply3(g, 960, 540);
    expect(gx - 960).toBeCloseTo(f * Math.tan(a / 2), 3);
  });

  it('refuses a mirrored camera (no real square root)', () => {
    expect(() => homographySqrt([-1, 0, 0, 0, 1, 0, 0, 0, 1])).toThrow(/no real square root/);
  });
});

describe('time offset', () => {
  it('finds the lag of a shifted motion-energy signal', () => {
    const a = Float64Array.from(
      { length: 200 },
      (_, t) => Math.sin(t / 3) + Math.sin(t / 11) * 2 + ((t * 7919) % 13) / 13,
    );
    const lag = 6;
    const b = Float64Array.from({ length: 200 }, (_, t) => a[Math.max(0, t - lag)] as number);
    const found = estimateTimeOffset(a, b, 20);
    expect(found.lagFrames).toBe(lag);
    expect(found.correlation).toBeGreaterThan(0.9);
  });
});
