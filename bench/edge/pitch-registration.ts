/**
 * The pitch registration of the real two-camera rig from pitch points read by eye
 * (bench/label/tsukuba-pair/pitch-points.json): one homography for the whole panorama against one
 * per camera's part (what `registerPitch` does for a rig with a seam), and the pitch size that
 * fits the markings best.
 *
 *   node bench/edge/pitch-registration.ts [--venue venue.json] [--max-width 7680]
 *
 * Without --venue the rig is self-calibrated first (as `polyvision edge calibrate`, panorama width
 * cap --max-width). The points file's markings are written at its pitch size; the size search
 * rebuilds them for each length × width (markings: corners and halfway-line ends move with the
 * size; the centre circle, 9.15 m, and the penalty areas, 16.5 × 40.32 m, do not).
 *
 * Writes bench/results/edge-pitch-registration.json and prints a table.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { type PitchPoints, readPitchPoints, registerPitch, selfCalibrate } from '../../edge/src/calibration/index.ts';
import { type VenueCalibration, venueCalibrationSchema } from '../../shared/src/index.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const footage = join(root, '..', 'shared', 'footage');
const { values } = parseArgs({
  options: { venue: { type: 'string' }, 'max-width': { type: 'string', default: '7680' } },
});

const venue: VenueCalibration = values.venue
  ? venueCalibrationSchema.parse(JSON.parse(await readFile(values.venue, 'utf8')))
  : (
      await selfCalibrate([join(footage, 'tsukuba-left.mp4'), join(footage, 'tsukuba-right.mp4')], {
        maxPanoramaWidthPx: Number(values['max-width']),
      })
    ).venue;
const points = await readPitchPoints(join(root, 'bench', 'label', 'tsukuba-pair', 'pitch-points.json'));
const given = points.pitch ?? venue.pitch;

/** The markings at another pitch size: a coordinate at ±L/2 or ±W/2 of the file's size moves with it. */
function atSize(lengthM: number, widthM: number): PitchPoints {
  const move = (v: number, half: number, newHalf: number) =>
    Math.abs(Math.abs(v) - half) < 1e-9 ? Math.sign(v) * newHalf : v;
  const moveX = (x: number) => {
    const goal = move(x, given.length_m / 2, lengthM / 2);
    // The penalty areas' front corners: 16.5 m in from the goal line.
    const front = given.length_m / 2 - 16.5;
    return Math.abs(Math.abs(x) - front) < 1e-9 ? Math.sign(x) * (lengthM / 2 - 16.5) : goal;
  };
  return {
    pitch: { length_m: lengthM, width_m: widthM },
    points: points.points.map((p) => ({
      ...p,
      pitch_m: [moveX(p.pitch_m[0]), move(p.pitch_m[1], given.width_m / 2, widthM / 2)] as [number, number],
    })),
  };
}

const { seam_x_px: _seam, pitch_parts: _parts, ...oneHomography } = venue.panorama;
const single = { ...venue, panorama: oneHomography };
const register = (v: VenueCalibration, p: PitchPoints) =>
  registerPitch(v, p, { maxPointErrorM: Number.POSITIVE_INFINITY });
const rows = {
  onePerPart: register(venue, points).registration,
  oneForAll: register(single, points).registration,
};
let best = { rmsErrorM: Number.POSITIVE_INFINITY, lengthM: 0, widthM: 0 };
let bestSingle = { ...best };
for (let L = 90; L <= 120; L += 0.25) {
  for (let W = 45; W <= 90; W += 0.25) {
    const rms = register(venue, atSize(L, W)).registration.rmsErrorM;
    if (rms < best.rmsErrorM) best = { rmsErrorM: rms, lengthM: L, widthM: W };
    const rmsSingle = register(single, atSize(L, W)).registration.rmsErrorM;
    if (rmsSingle < bestSingle.rmsErrorM) bestSingle = { rmsErrorM: rmsSingle, lengthM: L, widthM: W };
  }
}
const result = {
  panorama: `${venue.panorama.width_px}×${venue.panorama.height_px}`,
  points: points.points.length,
  pitch: given,
  onePerPart: rows.onePerPart,
  oneForAll: rows.oneForAll,
  bestSize: { onePerPart: best, oneForAll: bestSingle },
};
await writeFile(join(root, 'bench', 'results', 'edge-pitch-registration.json'), `${JSON.stringify(result, null, 2)}\n`);
const m = (n: number) => n.toFixed(2);
console.log(`panorama ${result.panorama}, ${result.points} points, pitch ${given.length_m} × ${given.width_m} m`);
console.log('| fit | RMS (m) | worst (m) | worst point | best size (RMS there) |');
console.log('|---|---|---|---|---|');
for (const [name, r, b] of [
  ['one homography per camera part', rows.onePerPart, best],
  ['one homography for the panorama', rows.oneForAll, bestSingle],
] as const) {
  console.log(
    `| ${name} | ${m(r.rmsErrorM)} | ${m(r.maxErrorM)} | ${r.worstPoint} | ${b.lengthM} × ${b.widthM} m (${m(b.rmsErrorM)}) |`,
  );
}
