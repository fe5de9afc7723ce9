/**
 * The panorama's layout (edge/src/calibration/self/panorama-layout.ts): for a wide rig a cylinder keeps the
 * pitch's density in fewer pixels than a plane, and the focal length searched is the one a camera of the rig has.
 */
import { describe, expect, it } from 'vitest';
import { layoutPanorama, type PlanePoint } from '../src/calibration/index.ts';

/**
 * Pitch-line pixels of a wide virtual camera (focal `f`, principal point (0, 0)) on its image plane, each with
 * the density a source camera of focal `f` turned to face it would give: the plane's pixels per degree grow as
 * 1/cos²θ, so a source pixel there covers 1/cos²θ plane units sideways and 1/cosθ upwards.
 */
function widePitchLines(f: number, halfAngleDeg: number): PlanePoint[] {
  const points: PlanePoint[] = [];
  for (let deg = -halfAngleDeg; deg <= halfAngleDeg; deg += 0.25) {
    const theta = (deg * Math.PI) / 180;
    for (const elevation of [0.05, 0.15, 0.3]) {
      const c = Math.cos(theta);
      points.push({ x: f * Math.tan(theta), y: (f * elevation) / c, scale: 1 / c ** 1.5 });
    }
  }
  return points;
}

describe('the panorama layout', () => {
  const f = 2000;
  const points = widePitchLines(f, 70);
  const common = { centre: { x: 0, y: 0 }, pixelDensity: 1, maxWidthPx: 1e9 };

  it('keeps the pitch at the source density in fewer pixels on a cylinder than on a plane', () => {
    const planar = layoutPanorama(points, { ...common, projection: 'planar', focalCandidatesPx: [] });
    const cylindrical = layoutPanorama(points, {
      ...common,
      projection: 'cylindrical',
      focalCandidatesPx: [0.5, 0.75, 1, 1.5, 2, 3].map((k) => k * f),
    });
    expect(planar.cylinder).toBeNull();
    expect(cylindrical.cylinder).not.toBeNull();
    // The rig's own focal length makes every degree equal: the search finds it.
    expect(cylindrical.cylinder?.focalPx).toBe(f);
    expect(cylindrical.widthPx * cylindrical.heightPx).toBeLessThan(0.5 * planar.widthPx * planar.heightPx);
    // Both keep the density aimed at on 95 % of the pitch-line pixels; on the cylinder it is even.
    for (const layout of [planar, cylindrical]) expect(layout.density.median).toBeGreaterThanOrEqual(1);
    expect(cylindrical.density.median / cylindrical.density.min).toBeLessThan(1.05);
    expect(planar.density.median / planar.density.min).toBeGreaterThan(1.2);
  });

  it('gives way on the density above the width or pixel bound', () => {
    const capped = layoutPanorama(points, {
      ...common,
      maxWidthPx: 2000,
      projection: 'cylindrical',
      focalCandidatesPx: [f],
    });
    expect(capped.widthPx).toBeLessThanOrEqual(2000);
    expect(capped.density.min).toBeLessThan(1);
    const uncapped = layoutPanorama(points, { ...common, projection: 'cylindrical', focalCandidatesPx: [f] });
    const budget = 0.5 * uncapped.widthPx * uncapped.heightPx;
    const fewer = layoutPanorama(points, {
      ...common,
      maxPixels: budget,
      projection: 'cylindrical',
      focalCandidatesPx: [f],
    });
    expect(fewer.widthPx * fewer.heightPx).toBeLessThanOrEqual(budget * 1.01);
    expect(fewer.density.min).toBeCloseTo(uncapped.density.min * Math.SQRT1_2, 2);
  });
});
