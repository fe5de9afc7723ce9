/**
 * The demo's joins of a match's segment outputs (deploy/src/demo/match-outputs.ts):
 * videos with the concat demuxer (real ffmpeg), detections and camera paths on the match clock.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ffprobe, resolveFfmpegPath, spawnChild } from '@polyvision/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { concatVideos, mergeCameraPaths, mergeDetectionsFiles } from '../src/demo/match-outputs.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pv-demo-join-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Segment `index`'s detections: 20 analysed frames of 2 s at 10 fps from a 25 fps source. */
async function detectionsOf(index: number): Promise<string> {
  const header = {
    format: 'polyvision.detections',
    version: 1,
    source: { width: 64, height: 32, fps: 25, frameCount: 50, durationMs: 2000 },
    analysisFps: 10,
  };
  const frames = Array.from({ length: 20 }, (_, i) => ({
    frame: i,
    sourceFrame: Math.floor(i * 2.5),
    tMs: i * 100,
    detections: [{ class: 'player', score: 0.9, box: [index, i, 10, 20] }],
  }));
  const path = join(dir, `detections-${index}.jsonl`);
  await writeFile(path, [header, ...frames].map((l) => JSON.stringify(l)).join('\n'));
  return path;
}

describe('joining a match from its segments', () => {
  it('moves detections to the match clock and sums the source', async () => {
    const out = join(dir, 'detections.jsonl');
    const written = await mergeDetectionsFiles([await detectionsOf(0), await detectionsOf(1)], out);
    expect(written).toBe(40);
    const lines = (await readFile(out, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines[0].source).toMatchObject({ frameCount: 100, durationMs: 4000 });
    expect(lines.slice(1).map((l) => l.frame)).toEqual([...Array(40).keys()]);
    expect(lines[21]).toMatchObject({ frame: 20, sourceFrame: 50, tMs: 2000 });
    expect(lines[21].detections[0].box[0]).toBe(1);
  });

  it('refuses a detections file without its header', async () => {
    const path = join(dir, 'headless.jsonl');
    await writeFile(path, '{"frame":0,"tMs":0,"detections":[]}\n');
    await expect(mergeDetectionsFiles([path], join(dir, 'x.jsonl'))).rejects.toMatchObject({
      code: 'demo_detections_invalid',
    });
  });

  it('concatenates camera paths, summing counts and weighting shares by windows', async () => {
    const part = async (index: number, windows: number, share: number, carry: boolean) => {
      const path = join(dir, `camera-path-${index}.json`);
      await writeFile(
        path,
        JSON.stringify({
          format: 'polyvision.camera-path',
          output: { outputWidth: 640 },
          quality: { ballInCropShare: share, framesWithBall: windows, maxPanSpeed: index + 1, rmsJerk: 2 },
          follow: { ballFrames: windows, playerFrames: 1, heldFrames: 0, firstObservedFrame: 0 },
          windows: Array.from({ length: windows }, (_, i) => ({ cx: index * 100 + i, cy: 0 })),
          ...(carry ? { carry: { camera: {} } } : {}),
        }),
      );
      return path;
    };
    const out = join(dir, 'camera-path.json');
    expect(await mergeCameraPaths([await part(0, 10, 1, true), await part(1, 30, 0.5, true)], out)).toBe(40);
    const merged = JSON.parse(await readFile(out, 'utf8'));
    expect(merged.windows[10]).toEqual({ cx: 100, cy: 0 });
    expect(merged.quality.ballInCropShare).toBeCloseTo(0.625, 6);
    expect(merged.quality).toMatchObject({ framesWithBall: 40, maxPanSpeed: 2, rmsJerk: 2 });
    expect(merged.follow).toEqual({ ballFrames: 40, playerFrames: 2, heldFrames: 0, firstObservedFrame: 0 });
    expect(merged.output).toEqual({ outputWidth: 640 });
    expect(merged.segments).toBe(2);
    expect(merged.carry).toBeUndefined();
  });

  it('joins segment videos without re-encoding: frames and duration add up', { timeout: 120_000 }, async () => {
    const parts: string[] = [];
    for (const [i, colour] of ['red', 'blue'].entries()) {
      const path = join(dir, `part-${i}.mp4`);
      const run = spawnChild(
        resolveFfmpegPath(),
        ['-nostdin', '-v', 'error', '-y', '-f', 'lavfi', '-i', `color=c=${colour}:s=64x32:r=25:d=1`].concat([
          '-c:v',
          'libx264',
          '-preset',
          'ultrafast',
          '-pix_fmt',
          'yuv420p',
          path,
        ]),
        { stdout: 'ignore' },
      );
      await run.done;
      parts.push(path);
    }
    const out = join(dir, 'joined.mp4');
    await concatVideos(parts, out);
    const probe = await ffprobe(out);
    expect(probe.frameCount).toBe(50);
    expect(probe.durationSeconds).toBeCloseTo(2, 1);
    await expect(concatVideos([join(dir, 'missing.mp4')], join(dir, 'no.mp4'))).rejects.toMatchObject({
      code: 'demo_concat_failed',
    });
  });
});
