import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkCameraFile } from '../src/demo/check-input.ts';

const exec = promisify(execFile);
const ffmpeg = (...args: string[]) => exec('ffmpeg', ['-v', 'error', '-y', ...args]);

describe('checkCameraFile (the demo refuses a camera file that is not a whole video, naming it)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'pv-check-input-'));
    // 50 frames, the MP4 index first (as phones and most tools write it), 2 s of sound beside it.
    await ffmpeg(
      ...['-f', 'lavfi', '-i', 'testsrc2=s=320x180:r=25:d=2', '-f', 'lavfi', '-i', 'sine=d=2'],
      ...['-pix_fmt', 'yuv420p', '-c:a', 'aac', '-movflags', '+faststart', join(dir, 'whole.mp4')],
    );
    await ffmpeg('-i', join(dir, 'whole.mp4'), '-c', 'copy', join(dir, 'whole.mkv'));
    await ffmpeg('-f', 'lavfi', '-i', 'sine=d=2', join(dir, 'sound.m4a'));
    // The same MP4 cut after its index and the first few frames: it still probes, with 50 frames listed.
    const whole = await readFile(join(dir, 'whole.mp4'));
    await writeFile(join(dir, 'cut.mp4'), whole.subarray(0, Math.floor(whole.length / 4)));
    await writeFile(join(dir, 'notes.mp4'), 'not a video\n');
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('passes a whole video, in a container with a frame count (MP4) and without one (Matroska)', async () => {
    expect(await checkCameraFile(join(dir, 'whole.mp4'))).toEqual({ widthPx: 320, heightPx: 180, frames: 50 });
    expect(await checkCameraFile(join(dir, 'whole.mkv'))).toMatchObject({ widthPx: 320, heightPx: 180 });
  });

  it('refuses sound without pictures, a cut file and a file that is no media, each saying what is wrong', async () => {
    await expect(checkCameraFile(join(dir, 'sound.m4a'))).rejects.toMatchObject({
      code: 'demo_input_unreadable',
      retriable: false,
      message: expect.stringMatching(/sound\.m4a has no video stream \(streams: audio\)/),
    });
    await expect(checkCameraFile(join(dir, 'cut.mp4'))).rejects.toMatchObject({
      code: 'demo_input_unreadable',
      message: expect.stringMatching(/cut\.mp4 is truncated: its container lists 50 frames, \d+ are in the file/),
    });
    await expect(checkCameraFile(join(dir, 'notes.mp4'))).rejects.toMatchObject({
      code: 'demo_input_unreadable',
      message: expect.stringMatching(/notes\.mp4 is not a readable video/),
    });
  });
});
