/**
 * The stitcher honours what the self-calibration measures: a camera's lens
 * (division model) in the remap maps, and its time offset and colour gains in
 * the ffmpeg graph.
 */
import { buildRig, mat3FromRows, mat3Invert, panoramaProjectionOf, venueCalibrationOf } from '@polyvision/shared';
import { describe, expect, it } from 'vitest';
import { apply3, distortDivision } from '../src/calibration/index.ts';
import { computeRemapMaps, type RemapMaps, stitchArgs, UNMAPPED } from '../src/stitch/index.ts';

const venue = venueCalibrationOf(
  buildRig({ cameraCount: 3, widthPx: 320, heightPx: 180, heightM: 20, setbackM: 30, panoramaWidthPx: 720 }),
  'lens-test',
);

/**
 * Every `stride`-th panorama pixel camera `camera` sees in `maps` samples the recorded pixel `expected(x, y)`
 * gives (rounded, clamped to the 320×180 frame), and at least a quarter of them differ from `plain`'s maps.
 */
function expectSamples(
  maps: RemapMaps,
  plain: RemapMaps,
  camera: number,
  stride: number,
  expected: (x: number, y: number) => readonly [number, number],
): void {
  const cam = maps.cameras[camera];
  let checked = 0;
  let differs = 0;
  for (let k = 0; k < maps.widthPx * maps.heightPx; k += stride) {
    if (cam?.xmap[k] === UNMAPPED) continue;
    const x = k % maps.widthPx;
    const [u, v] = expected(x, (k - x) / maps.widthPx);
    expect(cam?.xmap[k]).toBe(Math.max(0, Math.min(319, Math.round(u))));
    expect(cam?.ymap[k]).toBe(Math.max(0, Math.min(179, Math.round(v))));
    if (plain.cameras[camera]?.xmap[k] !== cam?.xmap[k]) differs++;
    checked++;
  }
  expect(checked).toBeGreaterThan(100);
  expect(differs).toBeGreaterThan(checked / 4);
}

describe('remap maps with a lens', () => {
  it('sample each panorama pixel at distort(H⁻¹·p) of the division model', () => {
    const lens = { lambda: -0.2, center_px: [159.5, 89.5] as [number, number], norm_px: Math.hypot(320, 180) / 2 };
    const withLens = { ...venue, cameras: venue.cameras.map((c) => ({ ...c, division_model: lens })) };
    const inverse = mat3Invert(mat3FromRows(withLens.cameras[1]?.image_to_panorama ?? []));
    const division = { lambda: lens.lambda, cx: lens.center_px[0], cy: lens.center_px[1], normPx: lens.norm_px };
    expectSamples(computeRemapMaps(withLens, { minPitchCoverage: 0 }), computeRemapMaps(venue), 1, 97, (x, y) =>
      distortDivision(division, ...apply3(inverse, x, y)),
    );
  });

  it('sample each pixel of a cylindrical panorama at H⁻¹ of its plane point', () => {
    const cylinder = { focal_px: 500, center_px: [360, 60] as [number, number] };
    const wrapped = { ...venue, panorama: { ...venue.panorama, projection: 'cylindrical' as const, cylinder } };
    const projection = panoramaProjectionOf(wrapped.panorama);
    const inverse = mat3Invert(mat3FromRows(venue.cameras[0]?.image_to_panorama ?? []));
    expectSamples(computeRemapMaps(wrapped, { minPitchCoverage: 0 }), computeRemapMaps(venue), 0, 89, (x, y) =>
      apply3(inverse, ...projection.toPlane(x, y)),
    );
  });
});

describe('ffmpeg graph corrections', () => {
  it('trims the lagging camera and applies colour gains before the warp', () => {
    const maps = [0, 1].map((i) => ({
      cameraId: `c${i}`,
      box: { x: 0, y: 0, width: 10, height: 10 },
      xmapPath: `x${i}`,
      ymapPath: `y${i}`,
      xmapChromaPath: `xc${i}`,
      ymapChromaPath: `yc${i}`,
      maskPath: `m${i}`,
    }));
    const args = stitchArgs(
      maps,
      [
        { cameraId: 'c0', path: 'a.mp4' },
        { cameraId: 'c1', path: 'b.mp4' },
      ],
      'out.mp4',
      { encoder: 'libx264', chromaLayout: '444' },
      { widthPx: 20, heightPx: 10 },
      [{ colorGains: [1.05, 1, 0.96] }, { timeOffsetS: 0.08, colorGains: [1, 1, 1] }],
    );
    const graph = args[args.indexOf('-filter_complex') + 1] as string;
    expect(graph).toContain('[0:v]format=gbrp,colorchannelmixer=rr=1.0500:gg=1.0000:bb=0.9600,format=yuv444p[c0]');
    expect(graph).toContain('[1:v]trim=start=0.0800,setpts=PTS-STARTPTS,format=yuv444p[c1]');
    // The default 4:2:0 graph: gains as plane LUTs + a luma-proportional chroma shift, planes warped apart.
    const planar = stitchArgs(
      maps,
      [
        { cameraId: 'c0', path: 'a.mp4' },
        { cameraId: 'c1', path: 'b.mp4' },
      ],
      'out.mp4',
      { encoder: 'libx264' },
      { widthPx: 20, heightPx: 10 },
      [{ colorGains: [1.05, 1, 0.96] }, { timeOffsetS: 0.08 }],
    );
    const g420 = planar[planar.indexOf('-filter_complex') + 1] as string;
    expect(g420).toMatch(/\[0:v\]format=yuv420p,lutyuv=.*,colorcorrect=.*,extractplanes=y\+u\+v/);
    expect(g420).toContain('[1:v]trim=start=0.0800,setpts=PTS-STARTPTS,format=yuv420p,extractplanes=y+u+v');
    expect(g420).toContain('mergeplanes=0x001020:yuv420p');
    expect(g420).not.toContain('yuv444p');
  });
});
