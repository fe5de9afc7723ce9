import { applyHomography, buildRig, mat3FromRows, type VenueCalibration, venueCalibrationOf } from '@polyvision/shared';
import { describe, expect, it } from 'vitest';
import {
  calibrateVenue,
  homographyDlt,
  homographyRansac,
  type Point2,
  transferError,
} from '../src/calibration/index.ts';
import { computeRemapMaps, seamMisalignment } from '../src/stitch/index.ts';

const venue: VenueCalibration = venueCalibrationOf(
  buildRig({ cameraCount: 3, widthPx: 320, heightPx: 180, heightM: 20, setbackM: 30, panoramaWidthPx: 720 }),
  'calibration-test',
);

function rng(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Grid points in a camera and their images through its true image_to_panorama, with noise and outliers. */
function correspondences(cameraIndex: number, noisePx: number, outlierFraction: number, seed = 3) {
  const cam = venue.cameras[cameraIndex] as VenueCalibration['cameras'][number];
  const h = mat3FromRows(cam.image_to_panorama);
  const random = rng(seed);
  const src: Point2[] = [];
  const dst: Point2[] = [];
  for (let i = 0; i < 60; i++) {
    const p: Point2 = [random() * (cam.width_px - 1), random() * (cam.height_px - 1)];
    const [x, y] = applyHomography(h, p[0], p[1]);
    const outlier = random() < outlierFraction;
    const gauss = () => (random() + random() + random() - 1.5) * 2 * noisePx;
    src.push(p);
    dst.push(outlier ? [random() * 720, random() * 100] : [x + gauss(), y + gauss()]);
  }
  return { src, dst, truth: h };
}

describe('DLT and RANSAC', () => {
  it('recovers the exact homography from noiseless points', () => {
    const { src, dst, truth } = correspondences(0, 0, 0);
    const h = homographyDlt(src, dst);
    for (let k = 0; k < 9; k++) expect(h[k]).toBeCloseTo(truth[k] as number, 6);
  });

  it('ignores 30 % outliers and stays under 1 px of seam misalignment with 0.3 px noise', () => {
    const estimated = structuredClone(venue);
    venue.cameras.forEach((_, i) => {
      const { src, dst } = correspondences(i, 0.3, 0.3, 10 + i);
      const fit = homographyRansac(src, dst, { thresholdPx: 2 });
      expect(fit.inliers.length).toBeGreaterThan(30);
      expect(fit.rmsErrorPx).toBeLessThan(1);
      (estimated.cameras[i] as VenueCalibration['cameras'][number]).image_to_panorama = [
        fit.homography.slice(0, 3),
        fit.homography.slice(3, 6),
        fit.homography.slice(6, 9),
      ] as VenueCalibration['cameras'][number]['image_to_panorama'];
    });
    const stats = seamMisalignment(
      computeRemapMaps(estimated),
      venue.cameras.map((c) => c.image_to_panorama),
    );
    expect(stats.meanPx).toBeLessThan(1);
  });

  it('plain DLT on the same outliers is far off (RANSAC is doing the work)', () => {
    const { src, dst, truth } = correspondences(1, 0.3, 0.3, 11);
    const h = homographyDlt(src, dst);
    const errors = src.map((p) => transferError(h, p, applyHomography(truth, p[0], p[1])));
    expect(Math.max(...errors)).toBeGreaterThan(5);
  });

  it('refuses collinear points and too few points', () => {
    const line: Point2[] = [
      [0, 0],
      [1, 1],
      [2, 2],
      [3, 3],
      [4, 4],
    ];
    expect(() => homographyDlt(line, line)).toThrow(expect.objectContaining({ code: 'calibration_degenerate' }));
    expect(() => homographyRansac(line.slice(0, 3), line.slice(0, 3))).toThrow(
      expect.objectContaining({ code: 'calibration_too_few_points' }),
    );
  });

  it('reports no consensus when the points are random', () => {
    const random = rng(5);
    const pts = (): Point2[] => Array.from({ length: 40 }, () => [random() * 300, random() * 300] as Point2);
    expect(() => homographyRansac(pts(), pts(), { thresholdPx: 1 })).toThrow(
      expect.objectContaining({ code: 'calibration_no_consensus' }),
    );
  });

  it('calibrates a venue camera from pitch points', () => {
    const cam = venue.cameras[2] as VenueCalibration['cameras'][number];
    const toImage = mat3FromRows(cam.pitch_to_image);
    const points: Array<{ image_px: [number, number]; pitch_m: [number, number] }> = [];
    for (let x = 10; x <= 50; x += 10) {
      for (let y = -30; y <= 30; y += 15) {
        const [u, v] = applyHomography(toImage, x, y);
        points.push({ image_px: [u, v] as [number, number], pitch_m: [x, y] as [number, number] });
      }
    }
    const { venue: calibrated, fits } = calibrateVenue(venue, [{ camera_id: cam.id, points }]);
    expect(fits[0]?.inliers).toBe(points.length);
    const got = mat3FromRows((calibrated.cameras[2] as typeof cam).image_to_panorama);
    const want = mat3FromRows(cam.image_to_panorama);
    for (const [u, v] of [
      [10, 10],
      [160, 90],
      [300, 170],
    ] as const) {
      const a = applyHomography(got, u, v);
      const b = applyHomography(want, u, v);
      expect(Math.hypot(a[0] - b[0], a[1] - b[1])).toBeLessThan(0.01);
    }
    expect(() => calibrateVenue(venue, [{ camera_id: 'nope', points }])).toThrow(
      expect.objectContaining({ code: 'calibration_unknown_camera' }),
    );
  });
});
