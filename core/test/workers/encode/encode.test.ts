import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ffprobe } from '@polyvision/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeHls } from '../../../src/workers/encode/index.ts';
import { childPids } from '../support/media.ts';

let dir: string;
let input: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pv-encode-'));
  input = join(dir, 'vcam.mp4');
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
        'testsrc2=size=1280x720:rate=25:duration=5',
        '-f',
        'lavfi',
        '-i',
        'sine=frequency=440:duration=5',
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
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('HLS encode', () => {
  it('writes renditions no taller than the source, playlists and a poster', async () => {
    const outputDir = join(dir, 'hls');
    let progress = 0;
    const summary = await encodeHls({
      inputPath: input,
      outputDir,
      segmentSeconds: 2,
      encoder: 'libx264',
      onProgress: (p) => {
        progress = p;
      },
    });
    expect(progress).toBe(1);
    expect(summary.renditions.map((r) => [r.name, r.width, r.height])).toEqual([
      ['720p', 1280, 720],
      ['480p', 854, 480],
    ]);
    const master = await readFile(join(outputDir, 'master.m3u8'), 'utf8');
    expect(master).toMatch(/^#EXTM3U/);
    expect(master).toMatch(/RESOLUTION=1280x720/);
    expect(master).toMatch(/RESOLUTION=854x480/);
    expect(master).toMatch(/720p\/index\.m3u8/);
    for (const r of summary.renditions) {
      const media = await readFile(join(outputDir, r.playlist), 'utf8');
      expect(media).toMatch(/#EXT-X-PLAYLIST-TYPE:VOD/);
      expect(media).toMatch(/#EXT-X-ENDLIST/);
      expect(r.segments).toBeGreaterThanOrEqual(2);
      const first = await ffprobe(join(outputDir, r.name, 'segment_00000.ts'));
      expect(first.video).toMatchObject({ height: r.height, codec_name: 'h264' });
      expect(first.streams.some((s) => s.codec_type === 'audio')).toBe(true);
    }
    const poster = await readFile(join(outputDir, 'poster.jpg'));
    expect([poster[0], poster[1]]).toEqual([0xff, 0xd8]);
  });

  it('refuses a non-video and an existing output folder, leaving nothing behind', async () => {
    const bad = join(dir, 'bad.mp4');
    await writeFile(bad, 'not a video');
    await expect(encodeHls({ inputPath: bad, outputDir: join(dir, 'bad-hls') })).rejects.toEqual(
      expect.objectContaining({ code: 'input_not_video', retriable: false }),
    );
    await expect(encodeHls({ inputPath: input, outputDir: dir })).rejects.toEqual(
      expect.objectContaining({ code: 'output_exists' }),
    );
    expect((await readdir(dir)).filter((f) => f.includes('.part'))).toEqual([]);
    expect(await childPids()).toEqual([]);
  });
});
