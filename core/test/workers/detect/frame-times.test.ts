import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  analysisSelectFilter,
  probeVideo,
  readFramesAt,
  readVideoFrames,
} from '../../../src/workers/detect/frames/index.ts';
import { makeClip } from '../support/media.ts';

const run = promisify(execFile);
let dir: string;
let clip: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pv-frame-times-'));
  // 11 s at 25 fps: every frame differs (testsrc2 moves), so a wrong pick cannot match by accident.
  clip = await makeClip(join(dir, 'clip.mp4'), 'testsrc2=size=96x64:rate=25', 11);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Every source frame, decoded by a plain ffmpeg (no filter but the pixel format). */
async function sourceFrames(path: string, frameBytes: number): Promise<Buffer[]> {
  const { stdout } = await run(
    'ffmpeg',
    ['-v', 'error', '-i', path, '-fps_mode', 'passthrough', '-pix_fmt', 'bgr24', '-f', 'rawvideo', 'pipe:1'],
    { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 },
  );
  const frames: Buffer[] = [];
  for (let at = 0; at + frameBytes <= stdout.length; at += frameBytes)
    frames.push(stdout.subarray(at, at + frameBytes));
  return frames;
}

describe('analysed frames are source frames with their own presentation times', () => {
  it('picks source frames by index at 3 fps, byte for byte, with their pts', async () => {
    const info = await probeVideo(clip);
    const source = await sourceFrames(clip, info.width * info.height * 3);
    expect(source).toHaveLength(275);
    const analysed = [];
    for await (const frame of readVideoFrames(clip, { info, fps: 3 })) analysed.push(frame);
    expect(analysed).toHaveLength(33);
    for (const frame of analysed) {
      expect(frame.sourceIndex).toBe(Math.ceil((frame.index * 25) / 3));
      expect(frame.timeMs).toBeCloseTo(frame.sourceIndex * 40, 6);
      expect(frame.data.equals(source[frame.sourceIndex]!)).toBe(true);
    }
    // The frame that ffmpeg's fps=3 labels 10.0 s is source frame 254; ours is frame 250, at 10.000 s.
    expect(analysed[30]).toMatchObject({ sourceIndex: 250, timeMs: 10_000 });
  });

  it('keeps every frame when the analysis rate reaches the source rate', async () => {
    const info = await probeVideo(clip);
    expect(analysisSelectFilter(25, 25)).toBeUndefined();
    let count = 0;
    for await (const frame of readVideoFrames(clip, { info, fps: 30 })) {
      expect(frame.sourceIndex).toBe(count);
      count += 1;
    }
    expect(count).toBe(275);
  });

  it('samples frames at times from a short clip in one decode, the same source frames a seek per time gives', async () => {
    const info = await probeVideo(clip);
    const source = await sourceFrames(clip, info.width * info.height * 3);
    const times = [0, 1375, 5000, 10_990, 20_000];
    const once = await readFramesAt(clip, info, times);
    // The same clip announced as long takes the seek path.
    const seeked = await readFramesAt(clip, { ...info, durationMs: 3_600_000 }, times);
    // 10.99 s is after the last frame (10.96 s): no frame, either way.
    expect(once.map((f) => f.timeMs)).toEqual([0, 1400, 5000]);
    expect(seeked.map((f) => f.timeMs)).toEqual([0, 1375, 5000]);
    for (const [i, frame] of once.entries()) {
      expect(frame.data.equals(source[Math.round(frame.timeMs / 40)]!)).toBe(true);
      expect(frame.data.equals(seeked[i]!.data)).toBe(true);
    }
  });
});
