import { describe, expect, it } from 'vitest';
import {
  buildRig,
  cylindricalProjection,
  panoramaProjectionOf,
  pitchMappingOf,
  type VenueCalibration,
  venueCalibrationOf,
  venueCalibrationSchema,
} from '../src/index.ts';

describe('the panorama projection', () => {
  const f = 800;
  const cylinder = cylindricalProjection(f, 1000, 300);

  it('takes panorama pixels to the plane and back, and leaves the centre where it is', () => {
    for (const [x, y] of [
      [1000, 300],
      [0, 0],
      [2100, 640],
      [1500, 10],
    ] as const) {
      const [px, py] = cylinder.toPlane(x, y);
      const [bx, by] = cylinder.fromPlane(px, py);
      expect(bx).toBeCloseTo(x, 6);
      expect(by).toBeCloseTo(y, 6);
    }
    expect(cylinder.fromPlane(1000, 300)).toEqual([1000, 300]);
    // Beyond a quarter turn from the centre there is no plane point.
    expect(cylinder.toPlane(1000 + f * (Math.PI / 2) + 1, 300)[0]).toBeNaN();
  });

  it('gives every degree the same number of columns, where a plane gives the sides more', () => {
    const columnsPerDegree = (deg: number) => {
      const at = (d: number) => cylinder.fromPlane(1000 + f * Math.tan((d * Math.PI) / 180), 300)[0];
      return at(deg + 1) - at(deg);
    };
    expect(columnsPerDegree(0)).toBeCloseTo(columnsPerDegree(60), 6);
    // On the plane the same degree at 60° spans 1/cos²60° = 4 times the columns it spans at the centre.
    const planeColumns = (deg: number) => f * (Math.tan(((deg + 1) * Math.PI) / 180) - Math.tan((deg * Math.PI) / 180));
    expect(planeColumns(60) / planeColumns(0)).toBeGreaterThan(3.9);
  });

  it('is read from the venue: planar is the identity, a cylindrical panorama needs its cylinder', () => {
    const venue = venueCalibrationOf(
      buildRig({ cameraCount: 2, widthPx: 640, heightPx: 360, heightM: 18, setbackM: 25, panoramaWidthPx: 1600 }),
      'projection-test',
    );
    expect(panoramaProjectionOf(venue.panorama).identity).toBe(true);
    const cylindrical: VenueCalibration = {
      ...venue,
      panorama: { ...venue.panorama, projection: 'cylindrical', cylinder: { focal_px: 900, center_px: [800, 200] } },
    };
    expect(venueCalibrationSchema.safeParse(cylindrical).success).toBe(true);
    expect(
      venueCalibrationSchema.safeParse({ ...venue, panorama: { ...venue.panorama, projection: 'cylindrical' } })
        .success,
    ).toBe(false);

    // The pitch mapping goes through the cylinder: a pitch point lands where the plane's mapping puts it, wrapped.
    const plane = pitchMappingOf(venue)!;
    const wrapped = pitchMappingOf(cylindrical)!;
    const projection = panoramaProjectionOf(cylindrical.panorama);
    for (const [x, y] of [
      [-40, -20],
      [0, 0],
      [30, 25],
    ] as const) {
      const onPlane = plane.toPanorama(x, y)!;
      const onCylinder = wrapped.toPanorama(x, y)!;
      const expected = projection.fromPlane(...onPlane);
      expect(onCylinder[0]).toBeCloseTo(expected[0], 6);
      expect(onCylinder[1]).toBeCloseTo(expected[1], 6);
      const back = wrapped.toPitch(...onCylinder)!;
      expect(Math.hypot(back[0] - x, back[1] - y)).toBeLessThan(1e-6);
    }
    // Away from the cylinder's centre the two differ: the wrap is applied, not ignored.
    const side = plane.toPanorama(-40, -20)!;
    const sideWrapped = wrapped.toPanorama(-40, -20)!;
    expect(Math.hypot(side[0] - sideWrapped[0], side[1] - sideWrapped[1])).toBeGreaterThan(5);
  });
});
