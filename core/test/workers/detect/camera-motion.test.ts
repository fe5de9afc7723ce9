import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  applyCameraMotion,
  type CameraMotion,
  CameraMotionEstimator,
  probeVideo,
  readVideoFrames,
  similarityFit,
} from '../../../src/workers/detect/index.ts';

const run = promisify(execFile);
let dir: string;
let still: string;

/**
 * A camera over one still picture (a frame of ffmpeg's testsrc2, 1280×720): `x` and `y` are the
 * crop window's position per source frame `n` (ffmpeg expressions), 640×360 at 25 fps, 2 s.
 */
async function cameraOver(name: string, x: string, y: string): Promise<string> {
  const path = join(dir, name);
  await run('ffmpeg', [
    ...['-v', 'error', '-y', '-loop', '1', '-framerate', '25', '-i', still, '-frames:v', '50'],
    ...['-vf', `format=rgb24,crop=640:360:x='${x}':y='${y}':exact=1`],
    ...['-c:v', 'libx264', '-preset', 'ultrafast', '-crf', '12', '-pix_fmt', 'yuv420p', path],
  ]);
  return path;
}

/** Every analysed frame's estimate with the frame's source index. */
async function estimate(
  path: string,
  fps: number,
  estimator: CameraMotionEstimator,
): Promise<{ sourceIndex: number; motion: CameraMotion | null }[]> {
  const info = await probeVideo(path);
  const out = [];
  for await (const frame of readVideoFrames(path, { info, fps })) {
    out.push({ sourceIndex: frame.sourceIndex, motion: estimator.next(frame, info.width, []) });
  }
  estimator.close();
  return out;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pv-camera-motion-'));
  still = join(dir, 'still.png');
  await run('ffmpeg', ['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc2=size=1280x720', '-frames:v', '1', still]);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the camera motion between analysed frames', () => {
  it('measures a pan: the picture moves 8 px left and 3 px up per source frame', async () => {
    const pan = await cameraOver('pan.mp4', '8*n', '3*n');
    const estimator = await CameraMotionEstimator.create();
    const frames = await estimate(pan, 10, estimator);
    expect(frames).toHaveLength(20);
    expect(frames[0]!.motion).toBeNull();
    for (const [i, { sourceIndex, motion }] of frames.entries()) {
      if (i === 0) continue;
      const steps = sourceIndex - frames[i - 1]!.sourceIndex; // 2 or 3 source frames between analysed ones
      expect(motion).not.toBeNull();
      // Where the frame's corners and centre go, against the true shift: within 1.5 px (of 640 × 360).
      for (const [x, y] of [
        [0, 0],
        [640, 0],
        [0, 360],
        [640, 360],
        [320, 180],
      ] as const) {
        const [mx, my] = applyCameraMotion(motion!, x, y);
        expect(Math.hypot(mx - (x - 8 * steps), my - (y - 3 * steps))).toBeLessThan(1.5);
      }
    }
    expect(estimator.counts).toEqual({ moving: 19, still: 0, unknown: 0, skipped: 0 });
  });

  it('says a still camera stands still, and then measures only one pair in 25', async () => {
    const fixed = await cameraOver('fixed.mp4', '100', '50');
    const estimator = await CameraMotionEstimator.create();
    const frames = await estimate(fixed, 25, estimator);
    expect(frames).toHaveLength(50);
    expect(frames.every((f) => f.motion === null)).toBe(true);
    // 10 measured still pairs, then one pair in 25 (frames 23/24 and 48/49): 12 measured, 37 skipped.
    expect(estimator.counts).toEqual({ moving: 0, still: 12, unknown: 0, skipped: 37 });
  });

  it('finds a pan that starts after a still spell, and measures every frame again', async () => {
    // Still for 0.6 s (15 frames), then panning 6 px per frame.
    const late = await cameraOver('late.mp4', 'if(lt(n,15),0,6*(n-15))', '0');
    const estimator = await CameraMotionEstimator.create();
    const frames = await estimate(late, 25, estimator);
    const moving = frames.filter((f) => f.motion !== null).map((f) => f.sourceIndex);
    // Sampling from frame 11 on; the sampled pair (23, 24) catches the pan, then every frame is measured.
    expect(moving[0]).toBe(24);
    expect(moving).toEqual(Array.from({ length: 26 }, (_, i) => 24 + i));
    for (const f of frames.filter((f) => f.motion !== null)) expect(f.motion![2]).toBeCloseTo(-6, 0);
  });

  it('says it cannot tell on a blank picture instead of guessing', async () => {
    const blank = join(dir, 'blank.mp4');
    await run('ffmpeg', [
      ...['-v', 'error', '-y', '-f', 'lavfi', '-i', 'color=c=0x305030:size=320x180:rate=25:duration=1.2'],
      ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', blank],
    ]);
    const estimator = await CameraMotionEstimator.create();
    const frames = await estimate(blank, 25, estimator);
    expect(frames.every((f) => f.motion === null)).toBe(true);
    expect(estimator.counts).toEqual({ moving: 0, still: 0, unknown: frames.length - 1, skipped: 0 });
  });
});

describe('similarityFit', () => {
  it('recovers a zoom, a roll and a shift exactly from point pairs', () => {
    const [s, theta, tx, ty] = [1.05, 0.02, -12.5, 4];
    const truth = [s * Math.cos(theta), -s * Math.sin(theta), tx, s * Math.sin(theta), s * Math.cos(theta), ty];
    const points = [
      [0, 0],
      [100, 20],
      [40, 300],
      [600, 350],
      [320, 180],
    ] as const;
    const pairs = points.map(([x, y]) => {
      const [u, v] = applyCameraMotion(truth as CameraMotion, x, y);
      return [x, y, u, v] as const;
    });
    const fit = similarityFit(pairs);
    for (const [i, value] of fit.entries()) expect(value).toBeCloseTo(truth[i]!, 9);
  });
});
