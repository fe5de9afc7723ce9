/**
 * `polyvision edge calibrate`: self-calibrates a two-camera rig from its
 * footage and writes the venue file (edge/src/calibration/self).
 */
import { rename, writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { readPitchPoints, registerPitch, selfCalibrate, writePitchPreview } from '@polyvision/edge';
import { type PolyvisionError, ValidationError } from '@polyvision/shared';
import { parseCommandLine } from '../command-kit.ts';

export const CALIBRATE_HELP = `Usage: pnpm polyvision edge calibrate --cameras a.mp4,b.mp4 --out venue.json [options]

Calibrates a two-camera rig from a few seconds of its footage: lens
distortion from the pitch lines, the cameras' geometry from features matched
in their overlap (players removed by a background median), the panorama
plane half way between them, the time offset between the cameras and the
colour balance across the seam. Writes venue.json with the measured quality
(reprojection and seam error, overlap, time offset, distortion).

Options:
  --cameras A,B        the two camera videos, left to right              required
  --out FILE           venue file to write                               required
  --venue-id ID        venue id in the file                             default venue
  --max-width PX       panorama width cap                                default 7680
  --pitch-points FILE  pitch markings read off the cameras' frames (JSON: ≥ 4 points
                       {camera, image_px, pitch_m}, optional pitch size): registers
                       the panorama to the pitch, so the analytics are in metres
                       (how to read them: edge/README.md, "Reading pitch points")
  --preview FILE       a still of the panorama (.png or .jpg) with the pitch markings
                       drawn where the calibration puts them: check them by eye
  --json               print the quality as JSON instead of a summary
  -h, --help           this help

Exit status: 0 written, 2 bad input (the message says what is wrong: no overlap,
a black or frozen camera, different sizes or frame rates, too few features, pitch points
that disagree), 1 other failures.
`;

export async function runCalibrate(argv: string[]): Promise<number> {
  const parsed = parseCommandLine('edge calibrate', CALIBRATE_HELP, () =>
    parseArgs({
      args: argv,
      options: {
        cameras: { type: 'string' },
        out: { type: 'string' },
        'venue-id': { type: 'string' },
        'max-width': { type: 'string' },
        'pitch-points': { type: 'string' },
        preview: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }),
  );
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  const cameras = (values.cameras ?? '').split(',').filter((p) => p.length > 0);
  if (cameras.length === 0 || !values.out) {
    process.stderr.write(`edge calibrate: --cameras A,B and --out FILE are required\n\n${CALIBRATE_HELP}`);
    return 2;
  }
  const maxWidth = values['max-width'] === undefined ? undefined : Number(values['max-width']);
  if (maxWidth !== undefined && !(Number.isInteger(maxWidth) && maxWidth >= 64)) {
    process.stderr.write(`edge calibrate: --max-width ${values['max-width']}: expected an integer ≥ 64\n`);
    return 2;
  }
  if (values.preview && !/\.(png|jpe?g)$/i.test(values.preview)) {
    process.stderr.write(`edge calibrate: --preview ${values.preview}: expected a .png or a .jpg file\n`);
    return 2;
  }
  try {
    const pitchPoints = values['pitch-points'] ? await readPitchPoints(values['pitch-points']) : null;
    const result = await selfCalibrate(cameras, {
      ...(values['venue-id'] ? { venueId: values['venue-id'] } : {}),
      ...(maxWidth ? { maxPanoramaWidthPx: maxWidth } : {}),
      onStep: values.json ? undefined : (step) => process.stderr.write(`calibrate: ${step}…\n`),
      onWarning: (line) => process.stderr.write(`calibrate: warning: ${line}\n`),
    });
    const registered = pitchPoints ? registerPitch(result.venue, pitchPoints) : null;
    const venue = registered?.venue ?? result.venue;
    const tmp = `${values.out}.partial`;
    await writeFile(tmp, `${JSON.stringify(venue, null, 2)}\n`);
    await rename(tmp, values.out);
    if (values.preview) await writePitchPreview(venue, cameras, values.preview);
    const q = venue.quality;
    if (values.json) {
      process.stdout.write(`${JSON.stringify({ out: values.out, quality: q, lenses: result.lenses }, null, 2)}\n`);
    } else {
      const p = venue.panorama;
      process.stdout.write(
        [
          `wrote ${values.out}: panorama ${p.width_px}×${p.height_px}${values.preview ? `; the still with the pitch markings: ${values.preview}` : ''}`,
          ...(result.crop
            ? [
                `  cropped from ${result.crop.before.widthPx}×${result.crop.before.heightPx} to what the cameras see: unseen ${(100 * result.crop.unseenFractionBefore).toFixed(1)} % → ${(100 * result.crop.unseenFraction).toFixed(2)} %, pitch lines kept ${(100 * result.crop.pitchKeptFraction).toFixed(1)} %`,
              ]
            : []),
          `  reprojection error ${q?.reprojection_error_px?.toFixed(2)} px (${q?.inliers} of ${q?.matches} matches)`,
          `  seam error mean ${q?.seam_error_mean_px?.toFixed(2)} px, p95 ${q?.seam_error_p95_px?.toFixed(2)} px`,
          `  overlap ${((q?.overlap_fraction ?? 0) * 100).toFixed(1)} % of the panorama`,
          `  time offset ${q?.time_offset_s?.toFixed(3)} s (correlation ${q?.time_offset_correlation?.toFixed(2)})`,
          ...venue.cameras.map(
            (c) =>
              `  ${c.id}: k1 ${c.distortion.k1.toFixed(4)} k2 ${c.distortion.k2.toFixed(4)} k3 ${c.distortion.k3.toFixed(4)}, gains ${c.color_gains?.map((g) => g.toFixed(3)).join('/')}`,
          ),
          registered
            ? `  in ${((q?.calibration_ms ?? 0) / 1000).toFixed(1)} s; pitch ${venue.pitch.length_m}×${venue.pitch.width_m} m registered from ${registered.registration.points} points: RMS ${registered.registration.rmsErrorM.toFixed(2)} m, worst ${registered.registration.maxErrorM.toFixed(2)} m (${registered.registration.worstPoint})`
            : `  in ${((q?.calibration_ms ?? 0) / 1000).toFixed(1)} s; the pitch frame (metres) is not registered: add --pitch-points for metres`,
          '',
        ].join('\n'),
      );
    }
    return 0;
  } catch (error) {
    const e = error as PolyvisionError;
    process.stderr.write(`edge calibrate: ${e.code ? `[${e.code}] ` : ''}${e.message}\n`);
    return error instanceof ValidationError ? 2 : 1;
  }
}
