import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import {
  ffprobe,
  mat3FromRows,
  mat3Multiply,
  mat3Rows,
  resolveFfmpegPath,
  spawnChild,
  type VenueCalibration,
} from '@polyvision/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  computeRemapMaps,
  createStitcher,
  panoramaPsnr,
  type Stitcher,
  seamMisalignment,
} from '../src/stitch/index.ts';
import { makeClip, type TestClip } from './support/clip.ts';

let clip: TestClip;
let work: string;
let stitcher: Stitcher;

beforeAll(async () => {
  clip = await makeClip();
  work = await mkdtemp(join(tmpdir(), 'edge-stitch-'));
  stitcher = await createStitcher(clip.venue, { workDir: join(work, 'maps'), encoder: 'libx264', quality: 16 });
});
afterAll(async () => {
  await clip?.remove();
  if (work) await rm(work, { recursive: true, force: true });
});

/** Mean Y, U, V (8-bit levels) of a video's first frame. */
async function planeMeans(path: string): Promise<[number, number, number]> {
  const probe = await ffprobe(path);
  const video = probe.streams.find((st) => st.codec_type === 'video');
  const w = video?.width as number;
  const h = video?.height as number;
  const raw = join(work, `${basename(path)}.yuv`);
  await spawnChild(
    resolveFfmpegPath(),
    [
      '-hide_banner',
      '-nostdin',
      '-loglevel',
      'error',
      '-y',
      '-i',
      path,
      '-frames:v',
      '1',
      '-f',
      'rawvideo',
      '-pix_fmt',
      'yuv420p',
      raw,
    ],
    { stdout: 'ignore' },
  ).done;
  const data = await readFile(raw);
  const mean = (from: number, n: number) => {
    let sum = 0;
    for (let i = from; i < from + n; i++) sum += data[i] as number;
    return sum / n;
  };
  const ys = w * h;
  const cs = (w / 2) * (h / 2);
  return [mean(0, ys), mean(ys, cs), mean(ys + cs, cs)];
}

/** The venue with camera `index`'s homography shifted by `dx` panorama pixels. */
function shifted(venue: VenueCalibration, index: number, dx: number): VenueCalibration {
  const t = [1, 0, dx, 0, 1, 0, 0, 0, 1];
  return {
    ...venue,
    cameras: venue.cameras.map((c, i) =>
      i === index ? { ...c, image_to_panorama: mat3Rows(mat3Multiply(t, mat3FromRows(c.image_to_panorama))) } : c,
    ),
  };
}

describe('remap maps', () => {
  it('with the exact calibration, seams are misaligned by less than 1 px on average and the pitch is covered', () => {
    const maps = computeRemapMaps(clip.venue);
    expect(maps.pitchCoverage).toBe(1);
    expect(maps.overlapPixels).toBeGreaterThan(1000);
    const stats = seamMisalignment(
      maps,
      clip.venue.cameras.map((c) => c.image_to_panorama),
    );
    expect(stats.samples).toBe(maps.overlapPixels);
    expect(stats.meanPx).toBeLessThan(1);
    expect(stats.registrationMeanPx).toBeLessThan(0.6);
  });

  it('measures a wrong calibration as misaligned (the measure can fail)', () => {
    const maps = computeRemapMaps(shifted(clip.venue, 1, 6));
    const stats = seamMisalignment(
      maps,
      clip.venue.cameras.map((c) => c.image_to_panorama),
    );
    expect(stats.meanPx).toBeGreaterThan(4);
  });

  it('refuses a singular calibration with a clear error', () => {
    const venue = structuredClone(clip.venue);
    (venue.cameras[1] as VenueCalibration['cameras'][number]).image_to_panorama = [
      [1, 2, 3],
      [2, 4, 6],
      [0, 0, 1],
    ];
    expect(() => computeRemapMaps(venue)).toThrow(
      expect.objectContaining({ code: 'stitch_singular_calibration', message: expect.stringContaining('camera-1') }),
    );
  });

  it('refuses a calibration that does not cover the panorama', () => {
    expect(() => computeRemapMaps(shifted(clip.venue, 1, 400))).toThrow(
      expect.objectContaining({ code: 'stitch_calibration_uncovered' }),
    );
  });
});

describe('stitcher', () => {
  it('stitches a segment close to the ground-truth panorama (PSNR), better than a misaligned calibration', async () => {
    const out = join(work, 'pano.mp4');
    await stitcher.stitch(
      clip.venue.cameras.map((c, i) => ({ cameraId: c.id, path: clip.cameraPaths[i] as string })),
      out,
    );
    const probe = await ffprobe(out);
    const video = probe.streams.find((s) => s.codec_type === 'video');
    expect(video?.width).toBe(clip.venue.panorama.width_px);
    expect(video?.height).toBe(clip.venue.panorama.height_px);
    const good = await panoramaPsnr(out, clip.panoramaPath);
    expect(good.y).toBeGreaterThan(25);

    const bad = await createStitcher(shifted(clip.venue, 1, 15), {
      workDir: join(work, 'bad-maps'),
      encoder: 'libx264',
    });
    const badOut = join(work, 'bad.mp4');
    await bad.stitch(
      clip.venue.cameras.map((c, i) => ({ cameraId: c.id, path: clip.cameraPaths[i] as string })),
      badOut,
    );
    const worse = await panoramaPsnr(badOut, clip.panoramaPath);
    expect(worse.y).toBeLessThan(good.y - 1);
  });

  it("the 4:2:0 graph (planes warped as decoded) gives the 4:4:4 graph's panorama, colour gains included", async () => {
    // Gains far enough from 1 that a wrong sign or a missing luma-dependent chroma shift shows in U/V.
    const venue: VenueCalibration = {
      ...clip.venue,
      cameras: clip.venue.cameras.map((c, i) => ({
        ...c,
        color_gains: (i === 1 ? [1.12, 1, 0.88] : [0.93, 1.02, 1.08]) as [number, number, number],
      })),
    };
    const inputs = clip.venue.cameras.map((c, i) => ({ cameraId: c.id, path: clip.cameraPaths[i] as string }));
    const outs: string[] = [];
    for (const layout of ['444', '420'] as const) {
      const s = await createStitcher(venue, {
        workDir: join(work, `maps-${layout}`),
        encoder: 'libx264',
        quality: 10,
        chromaLayout: layout,
      });
      const out = join(work, `gains-${layout}.mp4`);
      await s.stitch(inputs, out);
      outs.push(out);
    }
    // Structure: the same panorama (chroma sampled at its own resolution instead of upsampled first).
    const same = await panoramaPsnr(outs[1] as string, outs[0] as string);
    expect(same.y).toBeGreaterThan(40);
    expect(Math.min(same.u, same.v)).toBeGreaterThan(34);
    // Colour: the gains move the planes' means alike in both graphs (PSNR hides a colour cast under the
    // chroma sampling difference; the means do not).
    const [m444, m420] = await Promise.all(outs.map((o) => planeMeans(o)));
    const plain = await createStitcher(clip.venue, {
      workDir: join(work, 'maps-plain'),
      encoder: 'libx264',
      quality: 10,
    });
    const plainOut = join(work, 'plain-420.mp4');
    await plain.stitch(inputs, plainOut);
    const mPlain = await planeMeans(plainOut);
    for (const c of [0, 1, 2] as const)
      expect(Math.abs((m420 as number[])[c]! - (m444 as number[])[c]!)).toBeLessThan(0.3);
    // Without the gains the means move: the comparison can fail.
    expect(Math.max(...[0, 1, 2].map((c) => Math.abs(mPlain[c]! - (m444 as number[])[c]!)))).toBeGreaterThan(1.5);
  });

  it('still stitches when a camera has no segment', async () => {
    const out = join(work, 'missing.mp4');
    await stitcher.stitch([{ cameraId: 'camera-0', path: clip.cameraPaths[0] as string }, null, null], out);
    expect((await stat(out)).size).toBeGreaterThan(1000);
  });

  it('fails cleanly on a file that is not a video and leaves no output', async () => {
    const junk = join(work, 'junk.mp4');
    await writeFile(junk, 'this is not a video\n'.repeat(100));
    const out = join(work, 'junk-out.mp4');
    await expect(
      stitcher.stitch(
        [{ cameraId: 'camera-0', path: clip.cameraPaths[0] as string }, { cameraId: 'camera-1', path: junk }, null],
        out,
      ),
    ).rejects.toMatchObject({ code: 'stitch_failed' });
    await expect(stat(out)).rejects.toThrow();
    await expect(stat(`${out}.partial.mp4`)).rejects.toThrow();
  });

  it('refuses to stitch nothing', async () => {
    await expect(stitcher.stitch([null, null, null], join(work, 'none.mp4'))).rejects.toMatchObject({
      code: 'stitch_no_input',
    });
  });
});
