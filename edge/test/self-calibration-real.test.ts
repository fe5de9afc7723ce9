/**
 * Self-calibration of the real two-camera rig (../shared/footage/tsukuba-*.mp4):
 * barrel distortion found, seam under 2 px, cameras in step, the panorama
 * cropped to what the cameras see (no black bands or wedge, the pitch kept), and the
 * calibration stitches a panorama of the size it promised; the pitch points read off the cameras'
 * frames (bench/label/tsukuba-pair/pitch-points.json) register it to the pitch in metres. Skips
 * when the footage is absent.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ffprobe, pitchMappingOf, resolveFfmpegPath, spawnChild, venueCalibrationSchema } from '@polyvision/shared';
import { afterAll, describe, expect, it } from 'vitest';
import { Alarms } from '../src/alarms/index.ts';
import { readPitchPoints, registerPitch, selfCalibrate } from '../src/calibration/index.ts';
import { computeRemapMaps, createStitcher, SeamCheck } from '../src/stitch/index.ts';

const footage = resolve(import.meta.dirname, '../../../shared/footage');
const left = join(footage, 'tsukuba-left.mp4');
const right = join(footage, 'tsukuba-right.mp4');
const missing = [left, right].find((p) => !existsSync(p));
if (missing) console.log(`skipping the real-rig self-calibration test: ${missing} is missing`);

let work: string | undefined;
afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

describe.skipIf(missing !== undefined)('self-calibration of the tsukuba rig', () => {
  it('finds the lens, the geometry and the offset, and the stitcher uses them', { timeout: 600_000 }, async () => {
    const result = await selfCalibrate([left, right]);
    const alarms = new Alarms();
    const q = result.venue.quality;
    expect(q?.method).toBe('features');
    expect(q?.pitch_registered).toBe(false);
    expect(q?.inliers).toBeGreaterThan(50);
    expect(q?.seam_error_mean_px).toBeLessThan(2);
    expect(q?.time_offset_s).toBe(0);
    // Strong barrel distortion: the division model's λ is negative and straightening helps.
    expect(result.lenses[0]?.lambda).toBeLessThan(-0.1);
    expect(result.venue.cameras[0]?.distortion.k1).toBeLessThan(0);
    // Camera A's dominant line, the near touchline across its frame: tens of pixels of bow, a few after.
    const line = result.lenses[0]?.line;
    expect(line && line.undistortedPx < 0.2 * line.distortedPx).toBe(true);
    // The geometry is the pitch plane's: fitted on matches on the turf (the lower half of the frames; the first
    // fit's all lie in the stands), and the panorama a cylinder that keeps the source density on the pitch.
    const rows = result.inlierMatches.map((m) => m.a[1]).sort((a, b) => a - b);
    expect(rows[rows.length >> 1]).toBeGreaterThan(1728 / 2);
    expect(result.venue.panorama.projection).toBe('cylindrical');
    expect(q?.pixel_density?.min).toBeGreaterThan(0.95);

    // Seam alignment: camera B warped by the measured parallax, a seam per panorama row, and the
    // overlap's grey difference smaller after than before; the venue file still passes its schema.
    const align = result.seamAlignment;
    expect(align).not.toBeNull();
    expect(align?.meanDifference.after).toBeLessThan(0.85 * (align?.meanDifference.before ?? 0));
    expect(align?.shiftPx.max).toBeGreaterThan(10); // the near touchline's parallax is tens of pixels
    expect(result.venue.cameras[1]?.panorama_warp).toBeDefined();
    expect(result.venue.panorama.seam_x_px).toHaveLength(result.venue.panorama.height_px);
    expect(venueCalibrationSchema.parse(JSON.parse(JSON.stringify(result.venue)))).toBeDefined();

    // Cropped to what the cameras see: the uncropped panorama had black bands and a wedge (several % unseen),
    // the cropped one ≤ 0.2 %, and the crop keeps ≥ 99.5 % of the pitch-line pixels.
    const crop = result.crop;
    expect(crop).not.toBeNull();
    expect(crop?.unseenFractionBefore).toBeGreaterThan(0.01);
    expect(crop?.unseenFraction).toBeLessThanOrEqual(0.002);
    expect(crop?.pitchKeptFraction).toBeGreaterThanOrEqual(0.995);
    expect(q?.unseen_fraction).toBe(crop?.unseenFraction);
    expect(result.venue.panorama.width_px).toBe(crop?.rect.width);
    expect(result.venue.panorama.height_px % 2).toBe(0);
    expect(result.venue.panorama.width_px % 2).toBe(0);

    // The pitch points read off the two cameras' frames: one homography per camera's part of the panorama
    // (one for both misses by metres: the cameras are apart), within decimetres of every marking.
    const points = await readPitchPoints(
      resolve(import.meta.dirname, '../../bench/label/tsukuba-pair/pitch-points.json'),
    );
    const registered = registerPitch(result.venue, points);
    expect(registered.registration.parts).toBe(2);
    expect(registered.registration.rmsErrorM).toBeLessThan(0.6);
    expect(registered.registration.maxErrorM).toBeLessThan(1.2);
    expect(venueCalibrationSchema.parse(JSON.parse(JSON.stringify(registered.venue))).quality?.pitch_registered).toBe(
      true,
    );
    // Metres ↔ panorama pixels both ways, on either side of the seam and on it (the halfway line).
    const mapping = pitchMappingOf(registered.venue)!;
    for (const [x, y] of [
      [-40, -20],
      [0, -30],
      [0, 0],
      [0, 30],
      [35, 10],
    ] as const) {
      const back = mapping.toPitch(...mapping.toPanorama(x, y)!)!;
      expect(Math.hypot(back[0] - x, back[1] - y), `pitch (${x}, ${y})`).toBeLessThan(0.6);
    }

    work = await mkdtemp(join(tmpdir(), 'edge-selfcal-real-'));
    const cuts = await Promise.all(
      [left, right].map(async (path, i) => {
        const out = join(work as string, `cam-${i}.mp4`);
        await spawnChild(
          resolveFfmpegPath(),
          ['-v', 'error', '-i', path, '-t', '0.2', '-c', 'copy', '-an', '-y', out],
          {
            stdout: 'ignore',
          },
        ).done;
        return out;
      }),
    );
    // Stitched with the registered venue: its maps check the pitch coverage through the two parts.
    const stitcher = await createStitcher(registered.venue, {
      workDir: join(work, 'maps'),
      encoder: 'libx264',
      preset: 'ultrafast',
    });
    const out = join(work, 'pano.mp4');
    await stitcher.stitch(
      cuts.map((path, i) => ({ cameraId: result.venue.cameras[i]?.id as string, path })),
      out,
    );
    const probe = await ffprobe(out);
    expect(probe.video?.width).toBe(result.venue.panorama.width_px);
    expect(probe.video?.height).toBe(result.venue.panorama.height_px);
    // The stitcher's own maps: at most 0.2 % of the panorama unseen (no black bands, no wedge).
    expect(stitcher.coverage).toBeGreaterThanOrEqual(0.998);
    // The live seam check on a frame of the real footage (1 s in): closed, no alarm.
    const checked = await new SeamCheck(result.venue, computeRemapMaps(result.venue), { alarmPx: 4, alarms }).check([
      left,
      right,
    ]);
    expect(checked?.[0]?.matches).toBeGreaterThanOrEqual(8);
    expect(checked?.[0]?.medianPx).toBeLessThan(4);
    expect(alarms.has('seam_misaligned')).toBe(false);
  });
});
