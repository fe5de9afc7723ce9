/**
 * Seam alignment on a rig with known parallax: two 800×400 cameras side by side
 * (pinhole, overlap 400 px); camera B sees the lower rows ("near pitch") 8 px
 * lower than camera A does. The flow must find the 8 px there (not above), the
 * warped B must agree with A along the seam, and the seam must stay inside the overlap.
 */
import { describe, expect, it } from 'vitest';
import { alignSeam, type SeamCamera, warpAt } from '../src/calibration/self/index.ts';

const W = 800;
const H = 400;
/** A smooth texture: a few sinusoids with fixed phases (deterministic). */
function scene(x: number, y: number): number {
  return (
    128 +
    40 * Math.sin(x / 7.3 + 0.4) * Math.cos(y / 9.1 + 1.3) +
    30 * Math.sin((x + 2 * y) / 13.7 + 2.1) +
    25 * Math.cos((3 * x - y) / 17.9 + 0.7)
  );
}
/** Vertical parallax of camera B, px: 0 above row 220, 8 below row 300, smooth between. */
function parallax(y: number): number {
  const t = Math.min(1, Math.max(0, (y - 220) / 80));
  return 8 * t * t * (3 - 2 * t);
}

function camera(offsetX: number, shift: (y: number) => number): SeamCamera {
  const gray = new Uint8Array(W * H);
  for (let v = 0; v < H; v++) {
    for (let u = 0; u < W; u++) gray[v * W + u] = Math.round(scene(u + offsetX, v + shift(v)));
  }
  return {
    gray,
    widthPx: W,
    heightPx: H,
    lens: { lambda: 0, cx: W / 2, cy: H / 2, normPx: 500 },
    imageToPano: [1, 0, offsetX, 0, 1, 0, 0, 0, 1],
  };
}

describe('seam alignment', () => {
  it('finds the near rows parallax, warps camera B onto A at the seam and keeps the seam in the overlap', async () => {
    const a = camera(0, () => 0);
    const b = camera(400, parallax);
    const result = await alignSeam(a, b, { widthPx: 1200, heightPx: H });
    expect(result).not.toBeNull();
    const r = result as NonNullable<typeof result>;
    expect(r.seamXPx).toHaveLength(H);
    for (const x of r.seamXPx) {
      expect(x).toBeGreaterThan(400);
      expect(x).toBeLessThan(800);
    }
    // A(p) = S(p); B shows S(x, y + d(y)) at p: the warp that aligns B is dy ≈ −d near the seam.
    const yNear = 340;
    const [, dyNear] = warpAt(r.warp, r.seamXPx[yNear] as number, yNear);
    expect(dyNear).toBeLessThan(-6);
    expect(dyNear).toBeGreaterThan(-10);
    const yFar = 120;
    const [dxFar, dyFar] = warpAt(r.warp, r.seamXPx[yFar] as number, yFar);
    expect(Math.hypot(dxFar, dyFar)).toBeLessThan(1);
    // Along the seam, warped B against A (grey levels): close after, far apart before.
    let before = 0;
    let after = 0;
    for (let y = 250; y < 380; y++) {
      const x = r.seamXPx[y] as number;
      const [dx, dy] = warpAt(r.warp, x, y);
      const va = scene(x, y);
      before += Math.abs(scene(x, y + parallax(y)) - va);
      const yb = y + dy;
      after += Math.abs(scene(x + dx, yb + parallax(yb)) - va);
    }
    expect(after).toBeLessThan(0.35 * before);
    expect(r.meanDifference.after).toBeLessThan(r.meanDifference.before);
  });
});
