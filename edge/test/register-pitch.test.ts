import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  applyHomography,
  buildRig,
  mat3FromRows,
  mat3Multiply,
  mat3MulVec,
  mat3Rows,
  pitchMappingOf,
  type VenueCalibration,
  venueCalibrationOf,
  venueCalibrationSchema,
} from '@polyvision/shared';
import { describe, expect, it } from 'vitest';
import {
  cameraToPanorama,
  distortBrown,
  type PitchPoints,
  readPitchPoints,
  registerPitch,
} from '../src/calibration/index.ts';

const truth: VenueCalibration = venueCalibrationOf(
  buildRig({ cameraCount: 2, widthPx: 640, heightPx: 360, heightM: 18, setbackM: 25, panoramaWidthPx: 1600 }),
  'register-pitch-test',
);

/** The venue as self-calibration leaves it: the pitch rectangle only laid over the panorama. */
function unregistered(venue: VenueCalibration): VenueCalibration {
  const { width_px: w, height_px: h } = venue.panorama;
  return {
    ...venue,
    panorama: {
      ...venue.panorama,
      pitch_to_panorama: [
        [w / 105, 0, w / 2],
        [0, -h / 68, h / 2],
        [0, 0, 1],
      ],
      panorama_to_pitch: [
        [105 / w, 0, -52.5],
        [0, -68 / h, 34],
        [0, 0, 1],
      ],
    },
    quality: { method: 'features', pitch_registered: false },
  };
}

/** Pitch markings of a 105 × 68 m pitch (metres). */
const MARKINGS: Array<[string, number, number]> = [
  ['near left corner', -52.5, -34],
  ['far left corner', -52.5, 34],
  ['left penalty area, near front corner', -36, -20.16],
  ['left penalty area, far front corner', -36, 20.16],
  ['halfway line, near touchline', 0, -34],
  ['halfway line, far touchline', 0, 34],
  ['centre circle, near', 0, -9.15],
  ['right penalty area, near front corner', 36, -20.16],
  ['right penalty area, far front corner', 36, 20.16],
  ['right penalty area, near goal-line corner', 52.5, -20.16],
  ['right penalty area, far goal-line corner', 52.5, 20.16],
  ['near right corner', 52.5, -34],
  ['far right corner', 52.5, 34],
];

/** Each marking as the first camera that sees it records it (`image_px` through the true pitch_to_image). */
function pointsFrom(venue: VenueCalibration, distort = (_camera: number, p: [number, number]) => p): PitchPoints {
  const points: PitchPoints['points'] = [];
  for (const [name, x, y] of MARKINGS) {
    const seen = venue.cameras.findIndex((c) => {
      const [u, v] = applyHomography(mat3FromRows(c.pitch_to_image), x, y);
      return u >= 0 && v >= 0 && u <= c.width_px && v <= c.height_px;
    });
    if (seen < 0) continue;
    const camera = venue.cameras[seen]!;
    const image = applyHomography(mat3FromRows(camera.pitch_to_image), x, y);
    points.push({ camera: camera.id, image_px: distort(seen, image), pitch_m: [x, y], name });
  }
  return { points };
}

/** Largest distance (m) between a pitch point and where the venue's panorama_to_pitch puts its true panorama pixel. */
function worstPitchErrorM(venue: VenueCalibration): number {
  const toPanorama = mat3FromRows(truth.panorama.pitch_to_panorama);
  const toPitch = mat3FromRows(venue.panorama.panorama_to_pitch);
  let worst = 0;
  for (let x = -50; x <= 50; x += 10) {
    for (let y = -30; y <= 30; y += 10) {
      const [u, v] = applyHomography(toPanorama, x, y);
      // In front of the camera, as the analytics require (w > 0).
      expect(mat3MulVec(toPitch, [u, v, 1])[2]).toBeGreaterThan(0);
      const [px, py] = applyHomography(toPitch, u, v);
      worst = Math.max(worst, Math.hypot(px - x, py - y));
    }
  }
  return worst;
}

describe('registerPitch: the panorama to the pitch from pitch points seen by the cameras', () => {
  it('recovers the true pitch frame of a self-calibrated-like venue from camera pixels', () => {
    const points = pointsFrom(truth);
    expect(new Set(points.points.map((p) => ('camera' in p ? p.camera : '')))).toEqual(
      new Set(['camera-0', 'camera-1']),
    );
    const before = unregistered(truth);
    expect(worstPitchErrorM(before)).toBeGreaterThan(5);
    const { venue, registration } = registerPitch(before, points);
    expect(worstPitchErrorM(venue)).toBeLessThan(1e-6);
    expect(registration.rmsErrorM).toBeLessThan(1e-6);
    expect(venue.quality).toMatchObject({ pitch_registered: true, pitch_points: points.points.length });
    // Each camera's pitch_to_image agrees with the truth.
    venue.cameras.forEach((c, i) => {
      const [u, v] = applyHomography(mat3FromRows(c.pitch_to_image), 20, 10);
      const [tu, tv] = applyHomography(mat3FromRows(truth.cameras[i]!.pitch_to_image), 20, 10);
      expect(Math.hypot(u - tu, v - tv)).toBeLessThan(1e-6);
    });
  });

  it('undoes the lens first: Brown–Conrady pixels as recorded register as exactly', () => {
    const distortion = { k1: -0.25, k2: 0.05, p1: 0.001, p2: -0.001, k3: 0 };
    const lens = { ...truth, cameras: truth.cameras.map((c) => ({ ...c, distortion })) };
    const recorded = pointsFrom(lens, (i, [u, v]) => distortBrown(lens.cameras[i]!.intrinsics, distortion, u, v));
    expect(() => registerPitch(unregistered(truth), recorded)).toThrow(/from where the other points put it/);
    const { venue } = registerPitch(unregistered(lens), recorded);
    expect(worstPitchErrorM(venue)).toBeLessThan(1e-6);
  });

  it("undoes a camera's seam warp: a pixel lands where the stitcher puts it", () => {
    const camera = truth.cameras[1]!;
    const warp = { x_px: 0, y_px: 0, step_px: 100, cols: 17, rows: 17, dx_px: [], dy_px: [] } as {
      x_px: number;
      y_px: number;
      step_px: number;
      cols: number;
      rows: number;
      dx_px: number[];
      dy_px: number[];
    };
    warp.dx_px = new Array(17 * 17).fill(3);
    warp.dy_px = new Array(17 * 17).fill(-2);
    const warped = { ...truth, cameras: [truth.cameras[0]!, { ...camera, panorama_warp: warp }] };
    const [x, y] = applyHomography(mat3FromRows(camera.image_to_panorama), 300, 200);
    const [px, py] = cameraToPanorama(warped, 'camera-1', [300, 200], 'p');
    expect(px).toBeCloseTo(x - 3, 6);
    expect(py).toBeCloseTo(y + 2, 6);
  });

  it('fits one homography per camera when the cameras are joined by a seam, and maps each side of it by its own', () => {
    // Camera 1 joined to the panorama 12 px right, 6 px down and 2 % larger than the pitch plane would have it
    // (a rig whose cameras are apart), with a seam down the middle.
    const shift = [1.02, 0, 12, 0, 1.02, 6, 0, 0, 1];
    const seamX = truth.panorama.width_px / 2;
    const seamed: VenueCalibration = {
      ...truth,
      cameras: [
        truth.cameras[0]!,
        {
          ...truth.cameras[1]!,
          image_to_panorama: mat3Rows(mat3Multiply(shift, mat3FromRows(truth.cameras[1]!.image_to_panorama))),
        },
      ],
      panorama: { ...truth.panorama, seam_x_px: new Array(truth.panorama.height_px).fill(seamX) },
    };
    const points = pointsFrom(truth);
    const truePanorama = mat3FromRows(truth.panorama.pitch_to_panorama);
    // The venue's cameras in either order (the left camera second as well as first).
    const reversed = { ...seamed, cameras: [seamed.cameras[1]!, seamed.cameras[0]!] };
    for (const rig of [seamed, reversed]) {
      const { venue, registration } = registerPitch(unregistered(rig), points);
      expect(registration.parts).toBe(2);
      expect(registration.maxErrorM).toBeLessThan(1e-6);
      expect(venueCalibrationSchema.safeParse(venue).success).toBe(true);
      const mapping = pitchMappingOf(venue)!;
      for (const [x, y] of [
        [-40, -20],
        [-30, 25],
        [30, -25],
        [45, 10],
      ] as const) {
        const [u0, v0] = applyHomography(truePanorama, x, y);
        const [u, v] = u0 < seamX ? [u0, v0] : applyHomography(shift, u0, v0);
        const [px, py] = mapping.toPitch(u, v)!;
        expect(Math.hypot(px - x, py - y), `pitch (${x}, ${y})`).toBeLessThan(1e-6);
        const [bu, bv] = mapping.toPanorama(x, y)!;
        expect(Math.hypot(bu - u, bv - v)).toBeLessThan(1e-6);
      }
    }
    const { venue } = registerPitch(unregistered(seamed), points);
    // One homography for both parts cannot hold these points: refused, not fitted wrong.
    const { seam_x_px: _seam, ...noSeam } = seamed.panorama;
    expect(() => registerPitch(unregistered({ ...seamed, panorama: noSeam }), points)).toThrow(
      expect.objectContaining({ code: 'pitch_points_inconsistent' }),
    );
    // Too few points on one camera: said, with the camera.
    const leftOnly = { points: points.points.filter((p) => 'camera' in p && p.camera === 'camera-0') };
    expect(() => registerPitch(unregistered(seamed), leftOnly)).toThrow(/camera "camera-1" has 0 pitch points/);
    // A venue file with parts but no seam is refused by the contract.
    expect(
      venueCalibrationSchema.safeParse({ ...venue, panorama: { ...venue.panorama, seam_x_px: undefined } }).success,
    ).toBe(false);
  });

  it('refuses points that disagree, a line of points, unknown cameras and pixels off the frame, saying which', () => {
    const base = unregistered(truth);
    const points = pointsFrom(truth);
    const moved = structuredClone(points);
    moved.points[4]!.pitch_m = [5, -34]; // the halfway line's end given 5 m off
    expect(() => registerPitch(base, moved)).toThrow(
      expect.objectContaining({
        code: 'pitch_points_inconsistent',
        message: expect.stringMatching(/^halfway line, near touchline/),
      }),
    );
    const line: PitchPoints = {
      points: points.points.filter((p) => p.pitch_m[0] === 0),
    };
    expect(line.points.length).toBeGreaterThanOrEqual(3);
    const lineOfFour = { points: [...line.points, { ...line.points[0]!, pitch_m: [0, 20] as [number, number] }] };
    expect(() => registerPitch(base, lineOfFour)).toThrow(
      expect.objectContaining({ code: expect.stringMatching(/calibration_degenerate|pitch_points_inconsistent/) }),
    );
    const unknown = structuredClone(points);
    (unknown.points[0] as { camera: string }).camera = 'camera-9';
    expect(() => registerPitch(base, unknown)).toThrow(
      expect.objectContaining({
        code: 'pitch_points_unknown_camera',
        message: expect.stringContaining('camera-0, camera-1'),
      }),
    );
    const off = structuredClone(points);
    (off.points[0] as { image_px: [number, number] }).image_px = [5000, 10];
    expect(() => registerPitch(base, off)).toThrow(expect.objectContaining({ code: 'pitch_points_outside' }));
  });

  it('reads a points file, refusing one that is not JSON or has too few points', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pv-pitch-points-'));
    try {
      const good = join(dir, 'good.json');
      await writeFile(good, JSON.stringify({ pitch: { length_m: 100, width_m: 64 }, ...pointsFrom(truth) }));
      expect((await readPitchPoints(good)).pitch).toEqual({ length_m: 100, width_m: 64 });
      const bad = join(dir, 'bad.json');
      await writeFile(bad, '{"points": [');
      await expect(readPitchPoints(bad)).rejects.toMatchObject({ code: 'pitch_points_invalid' });
      await writeFile(bad, JSON.stringify({ points: pointsFrom(truth).points.slice(0, 3) }));
      await expect(readPitchPoints(bad)).rejects.toThrow(/at least 4 pitch points/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
