import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pitchMappingOf, resolveFfmpegPath, spawnChild } from '@polyvision/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drawPitchLines, pitchMarkings, writePitchPreview } from '../src/stitch/index.ts';
import { makeClip, type TestClip } from './support/clip.ts';

let clip: TestClip;
let work: string;
beforeAll(async () => {
  clip = await makeClip({ durationS: 1 });
  work = await mkdtemp(join(tmpdir(), 'edge-pitch-preview-'));
});
afterAll(async () => {
  await clip?.remove();
  if (work) await rm(work, { recursive: true, force: true });
});

/** Decodes an image file to RGB24 with ffmpeg. */
async function rgbOf(path: string): Promise<Buffer> {
  const raw = join(work, 'decoded.rgb');
  await spawnChild(resolveFfmpegPath(), ['-v', 'error', '-i', path, '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-y', raw], {
    stdout: 'ignore',
  }).done;
  return readFile(raw);
}

describe('the pitch preview: a still with the markings where the calibration puts them', () => {
  it('draws the markings through the pitch mapping, and only there', () => {
    const { width_px: w, height_px: h } = clip.venue.panorama;
    const rgb = Buffer.alloc(w * h * 3);
    const painted = drawPitchLines(rgb, clip.venue, pitchMarkings(clip.venue.pitch), [255, 0, 255], 1);
    expect(painted).toBeGreaterThan(500);
    const at = (x: number, y: number) => {
      const [u, v] = pitchMappingOf(clip.venue)!.toPanorama(x, y)!;
      const i = 3 * (Math.round(v) * w + Math.round(u));
      return [rgb[i], rgb[i + 1], rgb[i + 2]];
    };
    expect(at(20, 10)).toEqual([0, 0, 0]); // open pitch
    expect(at(0, 20)).toEqual([255, 0, 255]); // the halfway line
    expect(at(9.15, 0)).toEqual([255, 0, 255]); // the centre circle
    expect(at(-clip.venue.pitch.length_m / 2 + 16.5, 5)).toEqual([255, 0, 255]); // a penalty area's front
    // A venue that does not know where the pitch is (self-calibrated, no pitch points) gets no markings.
    const unregistered = { ...clip.venue, quality: { method: 'features' as const, pitch_registered: false } };
    expect(drawPitchLines(Buffer.alloc(w * h * 3), unregistered, pitchMarkings(clip.venue.pitch))).toBe(0);
  });

  it('writes the stitched first frame with the markings, as a whole file', async () => {
    const out = join(work, 'preview.png');
    await writePitchPreview(clip.venue, clip.cameraPaths, out);
    const rgb = await rgbOf(out);
    const { width_px: w, height_px: h } = clip.venue.panorama;
    expect(rgb.length).toBe(w * h * 3);
    const [u, v] = pitchMappingOf(clip.venue)!.toPanorama(0, 20)!;
    const i = 3 * (Math.round(v) * w + Math.round(u));
    expect([rgb[i], rgb[i + 1], rgb[i + 2]]).toEqual([255, 0, 255]);
    // The picture is there too: most pixels are the stitched frame, not black and not magenta.
    let picture = 0;
    for (let k = 0; k < w * h; k++) {
      const [r, g, b] = [rgb[3 * k]!, rgb[3 * k + 1]!, rgb[3 * k + 2]!];
      if (r + g + b > 60 && !(r > 240 && g < 20 && b > 240)) picture++;
    }
    expect(picture / (w * h)).toBeGreaterThan(0.5);
    expect(existsSync(`${out}.partial`)).toBe(false);
    await expect(writePitchPreview(clip.venue, clip.cameraPaths, join(work, 'preview.gif'))).rejects.toMatchObject({
      code: 'preview_format',
    });
  });
});
