import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ffprobe } from '@polyvision/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cropResizeBgr,
  measureCameraPath,
  planCameraPath,
  renderVirtualCamera,
  windowAt,
} from '../../../src/workers/vcam/index.ts';
import { childPids, makeClip } from '../support/media.ts';
import { movingTrack, tracksFile } from '../support/tracks.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pv-vcam-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('camera path', () => {
  // A 4000×1000 panorama; a group of players drifts right, the ball runs ahead of them.
  const n = 250;
  const players = Array.from({ length: 6 }, (_, i) =>
    movingTrack(i + 1, 'player', n, (f) => [800 + i * 120 + f * 8 + (((f + i) * 7919) % 61) - 30, 400 + (i % 3) * 100]),
  );
  const ball = movingTrack(7, 'ball', n, (f) => [1400 + f * 9, 500], [10, 10]);
  const tracks = tracksFile([...players, ball], n, 25, 4000, 1000);

  it('follows the play with the ball in the crop, within speed caps, smoothly', () => {
    const path = planCameraPath(tracks);
    expect(path.windows).toHaveLength(n);
    for (const w of path.windows) {
      expect(w.width / w.height).toBeCloseTo(16 / 9, 5);
      expect(w.cx - w.width / 2).toBeGreaterThanOrEqual(-1e-6);
      expect(w.cx + w.width / 2).toBeLessThanOrEqual(4000 + 1e-6);
      expect(w.cy + w.height / 2).toBeLessThanOrEqual(1000 + 1e-6);
    }
    // It pans right with the play.
    expect(path.windows.at(-1)!.cx - path.windows[0]!.cx).toBeGreaterThan(1000);
    const q = measureCameraPath(path, tracks);
    expect(q.framesWithBall).toBe(n);
    expect(q.ballInCropShare).toBeGreaterThan(0.95);
    expect(q.maxPanSpeed).toBeLessThanOrEqual(0.35 + 1e-6);
    // A path that jumps to every raw target is far jerkier than the planned one.
    const jumpy = planCameraPath(tracks, {
      targetSmoothingSeconds: 0,
      deadZoneShare: 0,
      maxPanSpeedShare: 100,
      maxPanAccelerationShare: 10_000,
      responsiveness: 25,
    });
    expect(measureCameraPath(jumpy, tracks).rmsJerk).toBeGreaterThan(q.rmsJerk * 5);
  });

  it('holds still inside the dead zone', () => {
    const still = tracksFile(
      [
        movingTrack(1, 'player', 100, (f) => [2000 + (f % 2) * 10, 500]),
        movingTrack(2, 'player', 100, () => [2400, 500]),
      ],
      100,
      25,
      4000,
      1000,
    );
    const path = planCameraPath(still);
    const xs = path.windows.slice(10).map((w) => w.cx);
    expect(Math.max(...xs) - Math.min(...xs)).toBeLessThan(1);
  });

  it('interpolates windows between analysed frames', () => {
    const path = planCameraPath(tracks);
    const a = path.windows[10]!;
    const b = path.windows[11]!;
    expect(windowAt(path, 420).cx).toBeCloseTo((a.cx + b.cx) / 2, 6);
  });
});

describe('crop and resize', () => {
  it('samples the window exactly (integer 2× upscale of a gradient)', () => {
    const image = { width: 8, height: 4, data: Buffer.alloc(8 * 4 * 3) };
    for (let y = 0; y < 4; y++)
      for (let x = 0; x < 8; x++) image.data.fill(x * 20, (y * 8 + x) * 3, (y * 8 + x) * 3 + 3);
    const out = Buffer.alloc(4 * 2 * 3);
    // Window x ∈ [2, 4), y ∈ [1, 2) → 4×2 output: source x = 2 + (i + 0.5)/2 − 0.5 = 1.75, 2.25, 2.75, 3.25
    cropResizeBgr(image, { cx: 3, cy: 1.5, width: 2, height: 1 }, 4, 2, out);
    expect([out[0], out[3], out[6], out[9]]).toEqual([35, 45, 55, 65]);
  });
});

describe('render', () => {
  it('renders a 1920×1080 H.264 video with the source audio', async () => {
    const input = join(dir, 'pano.mp4');
    const { execFile } = await import('node:child_process');
    await new Promise((resolve, reject) =>
      execFile(
        'ffmpeg',
        [
          '-v',
          'error',
          '-y',
          '-f',
          'lavfi',
          '-i',
          'testsrc2=size=1280x360:rate=25:duration=1.2',
          '-f',
          'lavfi',
          '-i',
          'sine=frequency=440:duration=1.2',
          '-c:v',
          'libx264',
          '-preset',
          'ultrafast',
          '-pix_fmt',
          'yuv420p',
          '-c:a',
          'aac',
          '-shortest',
          input,
        ],
        (e) => (e ? reject(e) : resolve(null)),
      ),
    );
    const n = 30;
    const tracks = tracksFile(
      [
        movingTrack(1, 'player', n, (f) => [300 + f * 20, 180]),
        movingTrack(2, 'player', n, (f) => [500 + f * 20, 200]),
      ],
      n,
      25,
      1280,
      360,
    );
    const path = planCameraPath(tracks);
    const outputPath = join(dir, 'vcam.mp4');
    const summary = await renderVirtualCamera({ inputPath: input, outputPath, path, encoder: 'libx264' });
    expect(summary.frames).toBe(30);
    const probe = await ffprobe(outputPath);
    expect(probe.video).toMatchObject({ width: 1920, height: 1080, codec_name: 'h264' });
    expect(probe.frameCount).toBe(30);
    expect(probe.streams.some((s) => s.codec_type === 'audio')).toBe(true);
    expect((await readdir(dir)).filter((f) => f.includes('.part'))).toEqual([]);
  });

  it('refuses a file that is not a video and stops on abort without leftovers', async () => {
    const notVideo = join(dir, 'x.mp4');
    await writeFile(notVideo, 'nope');
    const path = planCameraPath(tracksFile([movingTrack(1, 'player', 5, () => [10, 10])], 5, 25, 640, 360));
    await expect(renderVirtualCamera({ inputPath: notVideo, outputPath: join(dir, 'y.mp4'), path })).rejects.toEqual(
      expect.objectContaining({ code: 'input_not_video', retriable: false }),
    );
    const clip = await makeClip(join(dir, 'long.mp4'), 'testsrc2=size=640x360:rate=25', 20);
    const controller = new AbortController();
    const outputPath = join(dir, 'aborted.mp4');
    const run = renderVirtualCamera({
      inputPath: clip,
      outputPath,
      path,
      encoder: 'libx264',
      outputWidth: 640,
      outputHeight: 360,
      signal: controller.signal,
      onProgress: (p) => {
        if (p > 0.05) controller.abort(new Error('stop'));
      },
    });
    await expect(run).rejects.toThrow();
    expect(await childPids()).toEqual([]);
    await expect(stat(outputPath)).rejects.toThrow(/ENOENT/);
    expect((await readdir(dir)).filter((f) => f.includes('.part'))).toEqual([]);
  });
});
