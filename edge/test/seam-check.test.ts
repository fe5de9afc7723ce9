/**
 * The live seam check: on a synthetic two-camera rig, the exact calibration
 * measures a closed seam and raises nothing; the same footage against a
 * calibration whose second camera is off by 12 px (a bumped camera) measures
 * the step and raises `seam_misaligned`, which a good check clears again.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mat3FromRows, mat3Multiply, mat3Rows, type VenueCalibration } from '@polyvision/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Alarms } from '../src/alarms/index.ts';
import { createStitcher } from '../src/stitch/index.ts';
import { makeClip, type TestClip } from './support/clip.ts';

let clip: TestClip;
let work: string;

beforeAll(async () => {
  clip = await makeClip({ cameras: 2, widthPx: 640, heightPx: 360, durationS: 2, panoramaVideo: false });
  work = await mkdtemp(join(tmpdir(), 'edge-seam-check-'));
});
afterAll(async () => {
  await clip?.remove();
  if (work) await rm(work, { recursive: true, force: true });
});

/** The venue as it would be if camera 1 had been turned so that its picture moved by `dx` panorama pixels. */
function bumped(venue: VenueCalibration, dx: number): VenueCalibration {
  const t = [1, 0, dx, 0, 1, 0, 0, 0, 1];
  return {
    ...venue,
    cameras: venue.cameras.map((c, i) =>
      i === 1 ? { ...c, image_to_panorama: mat3Rows(mat3Multiply(t, mat3FromRows(c.image_to_panorama))) } : c,
    ),
  };
}

describe('live seam check', () => {
  it('measures a closed seam on the exact calibration and a bumped camera as misaligned, with the alarm', async () => {
    const alarms = new Alarms();
    const inputs = clip.venue.cameras.map((c, i) => ({ cameraId: c.id, path: clip.cameraPaths[i] as string }));
    const run = async (name: string, venue: VenueCalibration) => {
      const stitcher = await createStitcher(venue, {
        workDir: join(work, name),
        encoder: 'libx264',
        preset: 'ultrafast',
        seamCheck: { intervalS: 0, alarmPx: 4, alarms },
      });
      await stitcher.stitch(inputs, join(work, `${name}.mp4`));
      return stitcher.seamCheck;
    };

    const good = await run('good', clip.venue);
    expect(good?.last).toHaveLength(1);
    expect(good?.last[0]?.matches).toBeGreaterThanOrEqual(8);
    expect(good?.errorPx).toBeLessThan(2);
    expect(alarms.has('seam_misaligned')).toBe(false);

    const bad = await run('bumped', bumped(clip.venue, 12));
    expect(bad?.errorPx).toBeGreaterThan(8);
    expect(alarms.has('seam_misaligned', 'camera-0|camera-1')).toBe(true);
    expect(alarms.list().find((a) => a.code === 'seam_misaligned')?.message).toMatch(/off by \d+\.\d px.*recalibrate/);

    await run('good-again', clip.venue);
    expect(alarms.has('seam_misaligned')).toBe(false);
  });
});
