import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  canEncode,
  detectH264Encoder,
  ffprobe,
  readFrames,
  resolveFfmpeg,
  resolveFfmpegPath,
  resolveFfprobe,
  resolveFfprobePath,
  spawnChild,
} from '../src/index.ts';

let dir: string;
let clip: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'polyvision-media-'));
  clip = join(dir, 'clip.mp4');
  // 2 s of a 25 fps test pattern: exactly 50 frames.
  await spawnChild(
    resolveFfmpegPath(),
    [
      '-hide_banner',
      '-nostdin',
      '-loglevel',
      'error',
      '-f',
      'lavfi',
      '-i',
      'testsrc=size=64x48:rate=25:duration=2',
      '-c:v',
      'libx264',
      '-pix_fmt',
      'yuv420p',
      '-y',
      clip,
    ],
    { stdout: 'ignore' },
  ).done;
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('resolveFfmpegPath / resolveFfprobePath', () => {
  it('prefers FFMPEG_PATH / FFPROBE_PATH', () => {
    const ffmpeg = resolveFfmpeg({ ...process.env, FFMPEG_PATH: '/usr/bin/ffmpeg' });
    expect(ffmpeg).toEqual({ path: '/usr/bin/ffmpeg', source: 'env' });
    expect(resolveFfprobe({ ...process.env, FFPROBE_PATH: '/usr/bin/ffprobe' }).source).toBe('env');
  });

  it('refuses an FFMPEG_PATH that is not an executable, naming it', () => {
    expect(() => resolveFfmpeg({ FFMPEG_PATH: '/nonexistent/ffmpeg' })).toThrow(/FFMPEG_PATH=\/nonexistent\/ffmpeg/);
    expect(() => resolveFfprobe({ FFPROBE_PATH: '/etc/passwd' })).toThrow(
      expect.objectContaining({ code: 'ffprobe_not_found' }),
    );
  });

  it('falls back to ffmpeg-static when its binary exists, else to PATH', () => {
    const staticBinary = join(import.meta.dirname, '..', 'node_modules', 'ffmpeg-static', 'ffmpeg');
    const found = resolveFfmpeg({ PATH: process.env.PATH });
    expect(found.source).toBe(existsSync(staticBinary) ? 'ffmpeg-static' : 'PATH');
    expect(existsSync(found.path)).toBe(true);
    expect(existsSync(resolveFfprobePath())).toBe(true);
  });

  it('says ffmpeg_not_found with where it looked when nothing is there', () => {
    const staticBinary = join(import.meta.dirname, '..', 'node_modules', 'ffmpeg-static', 'ffmpeg');
    if (existsSync(staticBinary)) return; // a downloaded static binary is always found
    expect(() => resolveFfmpeg({ PATH: '/nonexistent' })).toThrow(
      expect.objectContaining({
        code: 'ffmpeg_not_found',
        message: expect.stringMatching(/FFMPEG_PATH.*ffmpeg-static.*PATH/),
      }),
    );
  });
});

describe('ffprobe', () => {
  it('reports streams, duration and the counted frames', async () => {
    const probe = await ffprobe(clip);
    expect(probe.frameCount).toBe(50);
    expect(probe.video).toMatchObject({ codec_name: 'h264', width: 64, height: 48, fps: 25 });
    expect(probe.durationSeconds).toBeCloseTo(2, 1);
    expect(probe.sizeBytes).toBeGreaterThan(0);
    expect(probe.formatName).toMatch(/mp4/);
  });

  it('fails with probe_failed on a file that is not media, or missing', async () => {
    const junk = join(dir, 'junk.mp4');
    await writeFile(junk, 'not a video at all');
    await expect(ffprobe(junk)).rejects.toMatchObject({ code: 'probe_failed' });
    await expect(ffprobe(join(dir, 'missing.mp4'))).rejects.toMatchObject({
      code: 'probe_failed',
      message: expect.stringMatching(/No such file/),
    });
  });

  it('treats a leading dash as a file name, not an option', async () => {
    await expect(ffprobe('-version')).rejects.toMatchObject({ code: 'probe_failed' });
  });
});

describe('H.264 encoder detection', () => {
  it('finds libx264 working and a bogus encoder not', async () => {
    expect(await canEncode('libx264')).toBe(true);
    expect(await canEncode('polyvision_no_such_encoder')).toBe(false);
  });

  it('picks h264_nvenc exactly when its test encode works, once per process', async () => {
    const nvencWorks = await canEncode('h264_nvenc');
    const first = detectH264Encoder({ refresh: true });
    expect(detectH264Encoder()).toBe(first);
    expect(await first).toBe(nvencWorks ? 'h264_nvenc' : 'libx264');
  });
});

describe('raw frames through ffmpeg', () => {
  it('round-trips gray frames byte for byte through stdin and stdout', async () => {
    const width = 64;
    const height = 48;
    const frameBytes = width * height;
    const frames = Array.from({ length: 10 }, (_, i) => Buffer.alloc(frameBytes, i * 20));
    const run = spawnChild(
      resolveFfmpegPath(),
      [
        '-hide_banner',
        '-loglevel',
        'error',
        '-f',
        'rawvideo',
        '-pix_fmt',
        'gray',
        '-s',
        `${width}x${height}`,
        '-r',
        '25',
        '-i',
        '-',
        '-f',
        'rawvideo',
        '-pix_fmt',
        'gray',
        '-',
      ],
      { stdin: 'pipe' },
    );
    const received: Buffer[] = [];
    const reading = (async () => {
      for await (const frame of readFrames(run.stdout!, frameBytes)) received.push(frame);
    })();
    for (const frame of frames) await run.write(frame);
    await run.end();
    await Promise.all([reading, run.done]);
    expect(received).toHaveLength(10);
    expect(received.map((f) => f[0])).toEqual(frames.map((f) => f[0]));
    expect(Buffer.concat(received).equals(Buffer.concat(frames))).toBe(true);
  });
});
