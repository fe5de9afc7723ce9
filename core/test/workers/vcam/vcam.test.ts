import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ffprobe } from '@polyvision/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ballFromTracks,
  type CameraPath,
  chooseVcamSizing,
  measureCameraPath,
  overlayAss,
  pitchRegionFromImage,
  planCameraPath,
  planTracksOverlay,
  pointInPolygon,
  readBallTrack,
  renderTracksOverlay,
  renderVirtualCamera,
  windowAt,
} from '../../../src/workers/vcam/index.ts';
import { childPids, makeClip } from '../support/media.ts';
import { detectionsHeader, movingTrack, tracksFile } from '../support/tracks.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pv-vcam-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Runs a command, rejecting on failure. */
function run(command: string, args: string[]): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    execFile(command, args, { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 }, (e, stdout) =>
      e ? reject(e) : resolve(stdout),
    ),
  );
}

/** Frame `k` of a video as packed RGB, after an optional filter chain (ffmpeg). */
function rgbFrame(file: string, k: number, filter: string | null): Promise<Buffer> {
  const vf = [`select=eq(n\\,${k})`, ...(filter ? [filter] : [])].join(',');
  return run('ffmpeg', [
    '-v',
    'error',
    '-i',
    file,
    '-vf',
    vf,
    '-frames:v',
    '1',
    '-f',
    'rawvideo',
    '-pix_fmt',
    'rgb24',
    '-',
  ]);
}

function meanAbsDiff(a: Buffer, b: Buffer): number {
  expect(a.length).toBe(b.length);
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += Math.abs(a[i]! - b[i]!);
  return sum / a.length;
}

describe('camera path', () => {
  // A 4000×1000 panorama; a group of players drifts right, the ball 300 px ahead of their centre.
  const n = 250;
  const players = Array.from({ length: 6 }, (_, i) =>
    movingTrack(i + 1, 'player', n, (f) => [800 + i * 120 + f * 8 + (((f + i) * 7919) % 61) - 30, 400 + (i % 3) * 100]),
  );
  const ball = movingTrack(7, 'ball', n, (f) => [1400 + f * 8, 500], [10, 10]);
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
    const q = measureCameraPath(path, ballFromTracks(tracks));
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
    expect(measureCameraPath(jumpy, ballFromTracks(tracks)).rmsJerk).toBeGreaterThan(q.rmsJerk * 5);
  });

  it('starts inside the walls: play at the edge does not fling the camera at its first frames', () => {
    // The play starts against the left edge: its window (≥ a quarter of the width) would stick out.
    const edge = Array.from({ length: 4 }, (_, i) =>
      movingTrack(i + 1, 'player', 60, (f) => [40 + i * 30 + f * 2, 500 + i * 20]),
    );
    const path = planCameraPath(tracksFile(edge, 60, 25, 4000, 1000));
    const steps = path.windows.slice(1).map((w, f) => Math.abs(w.cx - path.windows[f]!.cx));
    // The pan speed cap: 0.35 source widths per second, 56 px per frame at 25 fps.
    expect(Math.max(...steps)).toBeLessThanOrEqual(0.35 * 4000 * (1 / 25) + 1e-6);
    expect(measureCameraPath(path, []).maxPanSpeed).toBeLessThanOrEqual(0.35 + 1e-6);
    expect(path.windows[0]!.cx - path.windows[0]!.width / 2).toBeGreaterThanOrEqual(-1e-6);
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

describe('who the camera follows', () => {
  const n = 100;
  it('starts on the play: frames before the first tracks take the first target, not a wide shot', () => {
    // Nobody is seen for the first 40 frames; then a group plays around x = 3000.
    const late = [1, 2, 3].map((id) => {
      const t = movingTrack(id, 'player', n, () => [2900 + id * 60, 500]);
      return { ...t, frames: t.frames.filter((f) => f.frame >= 40) };
    });
    const path = planCameraPath(tracksFile(late, n, 25, 4000, 1000), { minCropWidthPx: 800 });
    expect(path.follow.firstObservedFrame).toBe(40);
    expect(path.windows[0]!.cx).toBeGreaterThan(2800);
    expect(path.windows[0]!.width).toBeLessThan(1200);
  });

  it('counts only people on the pitch: a bench outside the pitch polygon does not pull the camera', () => {
    const pitch = {
      source: 'calibration' as const,
      outline: [
        [0, 300],
        [4000, 300],
        [4000, 1000],
        [0, 1000],
      ] as [number, number][],
      contains: (x: number, y: number) => pointInPolygon(pitch.outline, x, y),
    };
    const players = [1, 2, 3, 4].map((id) => movingTrack(id, 'player', n, () => [3000 + id * 50, 700]));
    const bench = [5, 6, 7, 8, 9, 10].map((id) => movingTrack(id, 'player', n, () => [400 + id * 30, 150]));
    const tracks = tracksFile([...players, ...bench], n, 25, 4000, 1000);
    const withPitch = planCameraPath(tracks, { pitch, minCropWidthPx: 800 });
    const without = planCameraPath(tracks, { minCropWidthPx: 800 });
    expect(withPitch.people).toEqual({ onPitch: 4 * n, total: 10 * n, pitchSource: 'calibration' });
    expect(withPitch.windows.at(-1)!.cx).toBeGreaterThan(2800);
    expect(without.windows.at(-1)!.cx).toBeLessThan(2500);
    expect(measureCameraPath(withPitch, [], pitch).cropOnPitchShare).toBeGreaterThan(0.6);
  });

  it('finds the pitch from the image without calibration: the largest grass area of the median frame', async () => {
    // Grey stands above, a green pitch with a white line below; a small green banner in the stands.
    const clip = join(dir, 'grass.mp4');
    await run('ffmpeg', [
      '-v',
      'error',
      '-y',
      '-f',
      'lavfi',
      '-i',
      'color=c=0x808080:size=640x360:rate=25:duration=1,drawbox=x=40:y=150:w=560:h=200:color=0x2E8B3A:t=fill,drawbox=x=318:y=150:w=4:h=200:color=white:t=fill,drawbox=x=20:y=20:w=60:h=20:color=0x2E8B3A:t=fill',
      '-c:v',
      'libx264',
      '-preset',
      'ultrafast',
      '-pix_fmt',
      'yuv420p',
      clip,
    ]);
    const region = await pitchRegionFromImage({ inputPath: clip, sourceWidth: 640, sourceHeight: 360, frameCount: 25 });
    expect(region?.source).toBe('grass');
    expect(region!.contains(320, 250)).toBe(true); // on the white line, inside the pitch
    expect(region!.contains(100, 340)).toBe(true);
    expect(region!.contains(320, 80)).toBe(false); // stands
    expect(region!.contains(50, 30)).toBe(false); // the green banner is not the largest component
    expect(region!.contains(10, 250)).toBe(false);
  });

  it('takes the centre of play from detections when given: a tracker that keeps one stray track does not steer it', () => {
    const stray = movingTrack(1, 'player', n, () => [500, 500]);
    const crowd = Array.from({ length: n }, () =>
      Array.from({ length: 12 }, (_, i) => [2900 + i * 20, 480, 2910 + i * 20, 520]),
    );
    const tracks = tracksFile([stray], n, 25, 4000, 1000);
    expect(planCameraPath(tracks, { minCropWidthPx: 800 }).windows[50]!.cx).toBeLessThan(1000);
    const path = planCameraPath(tracks, { minCropWidthPx: 800, peopleBoxes: crowd });
    expect(path.windows[50]!.cx).toBeGreaterThan(2800);
    expect(path.people.total).toBe(12 * n);
  });

  it("reads the track stage's ball-track.json (one entry per analysed frame; lost frames give no position)", async () => {
    const file = join(dir, 'ball-track.json');
    await writeFile(
      file,
      JSON.stringify({
        format: 'polyvision.ball-track',
        version: 1,
        source: { width: 4000, height: 1000 },
        analysisFps: 25,
        frames: [
          { frame: 0, t: 0, x: 100, y: 200, state: 'detected', score: 0.4 },
          { frame: 1, t: 0.04, x: 110, y: 201, state: 'interpolated', score: 0 },
          { frame: 2, t: 0.08, x: null, y: null, state: 'lost', score: 0 },
        ],
        summary: {},
        options: {},
      }),
    );
    const ball = await readBallTrack(file, tracksFile([], 3, 25, 4000, 1000));
    expect(ball).toEqual([{ x: 100, y: 200, state: 'detected' }, { x: 110, y: 201, state: 'interpolated' }, undefined]);
    await writeFile(file, '{"frames": 3}');
    await expect(readBallTrack(file, tracksFile([], 3))).rejects.toMatchObject({ code: 'ball_track_invalid' });
  });

  it('follows the ball track when there is one, keeping it in the crop', () => {
    // Three players chase the ball, which runs 300 px ahead of them.
    const players = [1, 2, 3].map((id) => movingTrack(id, 'player', n, (f) => [700 + f * 25 + id * 40, 500]));
    const ball = Array.from({ length: n }, (_, f) => ({ x: 1080 + f * 25, y: 500, state: 'detected' as const }));
    const path = planCameraPath(tracksFile(players, n, 25, 4000, 1000), { ball, minCropWidthPx: 800 });
    expect(path.follow.ballFrames).toBe(n);
    expect(measureCameraPath(path, ball).ballInCropShare).toBeGreaterThan(0.95);
  });

  it('does not follow a "ball" out of play: one outside the players\' window keeps the camera on them', () => {
    // The play stays around x = 1080; the ball tracker follows something at x = 3200 (a sock, a line
    // mark) for the whole clip. Following it would show no player; the players' window is kept instead.
    const players = [1, 2, 3].map((id) => movingTrack(id, 'player', n, () => [1000 + id * 40, 500]));
    const tracks = tracksFile(players, n, 25, 4000, 1000);
    const falseBall = Array.from({ length: n }, () => ({ x: 3200, y: 500, state: 'detected' as const }));
    const path = planCameraPath(tracks, { ball: falseBall, minCropWidthPx: 800 });
    expect(path.follow).toMatchObject({ ballFrames: 0, playerFrames: n, ballOutOfPlayFrames: n });
    const centre = windowAt(path, ((n - 1) / 25) * 1000);
    expect(Math.abs(centre.cx - 1080)).toBeLessThan(100);
    // Always following it (`ballInPlayShare: Infinity`, the former behaviour) loses the players.
    const dragged = planCameraPath(tracks, {
      ball: falseBall,
      minCropWidthPx: 800,
      ballInPlayShare: Number.POSITIVE_INFINITY,
    });
    const last = windowAt(dragged, ((n - 1) / 25) * 1000);
    expect(Math.abs(last.cx - 1080)).toBeGreaterThan(last.width / 2);
  });
});

describe('output size and upscale cap', () => {
  it('follows the source and never upscales a crop more than the limit', () => {
    const auto = chooseVcamSizing({ sourceWidth: 2880, sourceHeight: 392 });
    expect(auto).toMatchObject({ outputWidth: 696, outputHeight: 392, sizeSource: 'auto', warning: null });
    expect(auto.minCropWidthPx).toBeCloseTo(464, 0);
    expect(chooseVcamSizing({ sourceWidth: 7680, sourceHeight: 2160 })).toMatchObject({
      outputWidth: 1920,
      outputHeight: 1080,
      minCropWidthPx: 1280,
    });
    // The planner honours the narrowest crop: no window is upscaled more than 1.5×.
    const n = 60;
    const tracks = tracksFile([movingTrack(1, 'player', n, (f) => [1000 + f * 5, 200])], n, 25, 2880, 392);
    const path = planCameraPath(tracks, { minCropWidthPx: auto.minCropWidthPx, aspectRatio: 696 / 392 });
    for (const w of path.windows) expect(auto.outputWidth / w.width).toBeLessThanOrEqual(1.5 + 1e-9);
    expect(Math.min(...path.windows.map((w) => w.width))).toBeCloseTo(464, 0);
  });

  it('keeps a configured 1080p output from a 392-pixel panorama but says so', () => {
    const forced = chooseVcamSizing({ sourceWidth: 2880, sourceHeight: 392, outputWidth: 1920, outputHeight: 1080 });
    expect(forced.sizeSource).toBe('configured');
    expect(forced.worstUpscale).toBeGreaterThan(2.7);
    expect(forced.warning).toMatch(/upscales/);
    expect(chooseVcamSizing({ sourceWidth: 2880, sourceHeight: 392, maxUpscale: 2 }).minCropWidthPx).toBeCloseTo(
      348,
      0,
    );
  });
});

describe('render', () => {
  it('renders a 1920×1080 H.264 video with the source audio', async () => {
    const input = join(dir, 'pano.mp4');
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

  it('renders a path whose crop never moves (no crop commands: ffmpeg refuses an empty sendcmd script)', async () => {
    const input = await makeClip(join(dir, 'still.mp4'), 'testsrc2=size=640x360:rate=25', 1.2);
    // Nobody to follow: the planner holds one window for the whole clip.
    const path = planCameraPath(tracksFile([], 30, 25, 640, 360));
    const summary = await renderVirtualCamera({
      inputPath: input,
      outputPath: join(dir, 'still-vcam.mp4'),
      path,
      encoder: 'libx264',
      outputWidth: 320,
      outputHeight: 180,
    });
    expect(summary.cropCommands).toBe(0);
    expect(summary.frames).toBe(30);
    expect((await ffprobe(join(dir, 'still-vcam.mp4'))).video).toMatchObject({ width: 320, height: 180 });
  });

  it('renders exactly the planned crop of every frame (checked against ffmpeg crops of the source)', async () => {
    // A lossless noisy source: any wrong frame or shifted crop shows as a large difference.
    const input = join(dir, 'pattern.mp4');
    await run('ffmpeg', [
      '-v',
      'error',
      '-y',
      '-f',
      'lavfi',
      '-i',
      'testsrc2=size=1280x720:rate=25:duration=1.2,noise=alls=60:allf=t',
      '-c:v',
      'libx264',
      '-preset',
      'ultrafast',
      '-qp',
      '0',
      '-pix_fmt',
      'yuv420p',
      input,
    ]);
    // A zooming, panning path with integer windows: frame k crops (480 − 16k + 2k, 270 − 9k, 320 + 32k, 180 + 18k).
    const windows = Array.from({ length: 30 }, (_, k) => ({
      cx: 640 + 2 * k,
      cy: 360,
      width: 320 + 32 * k,
      height: 180 + 18 * k,
    }));
    const path: CameraPath = {
      fps: 25,
      sourceWidth: 1280,
      sourceHeight: 720,
      windows,
      follow: { ballFrames: 0, playerFrames: 30, heldFrames: 0, firstObservedFrame: 0, ballOutOfPlayFrames: 0 },
      people: { onPitch: 0, total: 0, pitchSource: 'none' },
    };
    const outputPath = join(dir, 'exact.mp4');
    const summary = await renderVirtualCamera({
      inputPath: input,
      outputPath,
      path,
      encoder: 'libx264',
      quality: 0,
      outputWidth: 640,
      outputHeight: 360,
    });
    expect(summary.frames).toBe(30);
    const frame = (file: string, k: number, crop?: [number, number, number, number]) =>
      rgbFrame(
        file,
        k,
        crop
          ? `crop=${crop[2]}:${crop[3]}:${crop[0]}:${crop[1]}:exact=1,format=yuv420p,scale=640:360:flags=bicubic,format=yuv420p`
          : null,
      );
    for (const k of [0, 12, 27]) {
      const rect: [number, number, number, number] = [480 - 14 * k, 270 - 9 * k, 320 + 32 * k, 180 + 18 * k];
      const rendered = await frame(outputPath, k);
      expect(meanAbsDiff(rendered, await frame(input, k, rect))).toBeLessThan(2);
      // The neighbour frame's crop, or a crop 8 px off, is clearly different.
      expect(meanAbsDiff(rendered, await frame(input, k + 1, rect))).toBeGreaterThan(10);
      expect(meanAbsDiff(rendered, await frame(input, k, [rect[0] - 8, rect[1], rect[2], rect[3]]))).toBeGreaterThan(
        10,
      );
    }
  }, 240_000);

  it('renders the tracks overlay (boxes, ids, crop window) on a downscaled panorama', async () => {
    const input = await makeClip(join(dir, 'wide.mp4'), 'color=c=0x206020:size=2560x360:rate=25', 1);
    const n = 25;
    const tracks = tracksFile([movingTrack(7, 'player', n, (f) => [800 + f * 10, 200], [60, 120])], n, 25, 2560, 360);
    const path = planCameraPath(tracks, { minCropWidthPx: 400 });
    const ass = overlayAss({
      width: 1280,
      height: 180,
      scale: 0.5,
      tracks: tracks.tracks,
      fps: 25,
      frameCount: n,
      path,
      ball: [],
      pitch: { source: 'none', outline: [], contains: () => true },
    });
    expect(ass).toContain('PlayResX: 1280');
    expect(ass.match(/\\p1/g)?.length).toBe(2 * n);
    const outputPath = join(dir, 'overlay.mp4');
    const size = await renderTracksOverlay({
      inputPath: input,
      outputPath,
      tracks,
      path,
      ball: [],
      pitch: { source: 'none', outline: [], contains: () => true },
      maxWidth: 1280,
    });
    expect(size).toEqual({ width: 1280, height: 180 });
    const probe = await ffprobe(outputPath);
    expect(probe.video).toMatchObject({ width: 1280, height: 180 });
    // The crop window's red border is drawn: some pixels are strongly red on a green source.
    const rgb = await rgbFrame(outputPath, 5, null);
    let red = 0;
    for (let i = 0; i < rgb.length; i += 3) if (rgb[i]! > 180 && rgb[i + 1]! < 90) red += 1;
    expect(red).toBeGreaterThan(100);
  });

  it("writes the overlay from the virtual camera's own decode, the same pictures as rendered alone", async () => {
    const input = await makeClip(join(dir, 'wide2.mp4'), 'testsrc2=size=2560x360:rate=25', 1);
    const n = 25;
    const tracks = tracksFile([movingTrack(7, 'player', n, (f) => [800 + f * 10, 200], [60, 120])], n, 25, 2560, 360);
    const path = planCameraPath(tracks, { minCropWidthPx: 400 });
    const scene = { tracks, path, ball: [], pitch: { source: 'none' as const, outline: [], contains: () => true } };
    const plan = planTracksOverlay({ ...scene, maxWidth: 1280 });
    const together = join(dir, 'overlay-together.mp4');
    const vcamPath = join(dir, 'vcam-together.mp4');
    const summary = await renderVirtualCamera({
      inputPath: input,
      outputPath: vcamPath,
      path,
      outputWidth: 640,
      outputHeight: 360,
      encoder: 'libx264',
      overlay: { outputPath: together, plan },
    });
    expect(summary.frames).toBe(n);
    const alone = join(dir, 'overlay-alone.mp4');
    await renderTracksOverlay({ inputPath: input, outputPath: alone, ...scene, maxWidth: 1280 });
    expect((await ffprobe(together)).video).toMatchObject({ width: 1280, height: 180 });
    expect((await ffprobe(vcamPath)).video).toMatchObject({ width: 640, height: 360 });
    const frameHashes = (file: string) => run('ffmpeg', ['-v', 'error', '-i', file, '-f', 'framemd5', '-']);
    const hashes = (await frameHashes(together))
      .toString()
      .split('\n')
      .filter((l) => /^\d/.test(l));
    expect(hashes).toHaveLength(n);
    expect(hashes).toEqual(
      (await frameHashes(alone))
        .toString()
        .split('\n')
        .filter((l) => /^\d/.test(l)),
    );
    expect((await readdir(dir)).filter((f) => f.includes('.part.') || f.endsWith('.ass'))).toEqual([]);
  });

  it('draws only the analysed source frames, at the analysis rate, when the tracks were analysed below the source rate', async () => {
    const input = await makeClip(join(dir, 'wide3.mp4'), 'testsrc2=size=2560x360:rate=25', 1);
    const analysed = 10; // analysed at 10 fps from the 25 fps clip: source frames ⌈k · 2.5⌉
    const track = movingTrack(7, 'player', analysed, (f) => [800 + f * 25, 200], [60, 120]);
    const tracks = {
      ...tracksFile([track], analysed, 25, 2560, 360),
      detections: detectionsHeader(25, 25, 2560, 360, 10),
    };
    const path = planCameraPath(tracks, { minCropWidthPx: 400 });
    const pitch = { source: 'none' as const, outline: [], contains: () => true };
    const plan = planTracksOverlay({ tracks, path, ball: [], pitch, maxWidth: 1280 });
    expect(plan.frames).toBe(analysed);
    const outputPath = join(dir, 'overlay-analysed.mp4');
    await renderTracksOverlay({ inputPath: input, outputPath, tracks, path, ball: [], pitch, maxWidth: 1280 });
    const times = (
      await run('ffprobe', [
        '-v',
        'error',
        '-select_streams',
        'v',
        '-show_entries',
        'frame=pts_time',
        '-of',
        'csv=p=0',
        outputPath,
      ])
    )
      .toString()
      .split('\n')
      .filter((line) => /^\d/.test(line)) // a frame's side data comes on lines of its own
      .map((line) => Number(line.split(',')[0]));
    const sourceFrames = Array.from({ length: analysed }, (_, k) => Math.ceil((k * 25) / 10));
    expect(times).toEqual(sourceFrames.map((_, k) => k / 10)); // constant rate: segments join end to end
    expect((await ffprobe(outputPath)).durationSeconds).toBeCloseTo(1, 3);
    // Each overlay frame is its source frame, not a neighbour (testsrc2 changes every frame; the boxes and
    // the encoding add the same noise to every comparison).
    const scaled = 'scale=1280:180';
    for (const k of [1, 4, 9]) {
      const drawn = await rgbFrame(outputPath, k, null);
      const n = sourceFrames[k]!;
      const own = meanAbsDiff(drawn, await rgbFrame(input, n, scaled));
      expect(own, `k ${k}`).toBeLessThan(meanAbsDiff(drawn, await rgbFrame(input, n + 1, scaled)));
      expect(own, `k ${k}`).toBeLessThan(meanAbsDiff(drawn, await rgbFrame(input, n - 1, scaled)));
    }
  });

  it('refuses a file that is not a video and stops on abort without leftovers', async () => {
    const notVideo = join(dir, 'x.mp4');
    await writeFile(notVideo, 'nope');
    const tracks = tracksFile([movingTrack(1, 'player', 5, () => [10, 10])], 5, 25, 640, 360);
    const path = planCameraPath(tracks);
    await expect(renderVirtualCamera({ inputPath: notVideo, outputPath: join(dir, 'y.mp4'), path })).rejects.toEqual(
      expect.objectContaining({ code: 'input_not_video', retriable: false }),
    );
    const clip = await makeClip(join(dir, 'long.mp4'), 'testsrc2=size=640x360:rate=25', 20);
    const controller = new AbortController();
    const outputPath = join(dir, 'aborted.mp4');
    const overlayPath = join(dir, 'aborted-overlay.mp4');
    const pitch = { source: 'none' as const, outline: [], contains: () => true };
    const run = renderVirtualCamera({
      inputPath: clip,
      outputPath,
      path,
      encoder: 'libx264',
      outputWidth: 640,
      outputHeight: 360,
      overlay: { outputPath: overlayPath, plan: planTracksOverlay({ tracks, path, ball: [], pitch }) },
      signal: controller.signal,
      onProgress: (p) => {
        if (p > 0.05) controller.abort(new Error('stop'));
      },
    });
    await expect(run).rejects.toThrow();
    expect(await childPids()).toEqual([]);
    await expect(stat(outputPath)).rejects.toThrow(/ENOENT/);
    await expect(stat(overlayPath)).rejects.toThrow(/ENOENT/);
    expect((await readdir(dir)).filter((f) => f.includes('.part') || f.endsWith('.ass'))).toEqual([]);
  });
});
