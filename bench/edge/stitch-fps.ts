/**
 * Stitching speed: frames per second of the edge stitcher (remap + feathered
 * alpha overlay + H.264) on 3×720p and 2×1080p synthetic cameras and,
 * with `--real-seconds N`, the first N seconds of the real tsukuba pair
 * (self-calibrated, 2 × 3072×1728 HEVC), against the floor measured in the
 * same run on the same streams: plain decode, side-by-side `hstack`, and the
 * same encoder settings. A second floor scales the stack to the panorama's
 * size, so both encode the same pixel count. Both stitch graphs are timed,
 * interleaved: `420` (planes warped as decoded, the default) and `444` (every
 * camera converted to yuv444p first, the older graph).
 *
 * Usage: node bench/edge/stitch-fps.ts [--runs 2] [--duration 4] [--real-seconds 3] [--skip-synthetic]
 * Writes bench/results/edge-stitch-fps.json.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createStitcher, selfCalibrate } from '../../edge/src/index.ts';
import { ffprobe, resolveFfmpegPath, spawnChild, type VenueCalibration } from '../../shared/src/index.ts';
import { benchClip } from './clips.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string' },
    duration: { type: 'string' },
    'real-seconds': { type: 'string' },
    'skip-synthetic': { type: 'boolean' },
  },
});
const runs = Number(values.runs ?? 2);
const durationS = Number(values.duration ?? 4);
const ffmpeg = resolveFfmpegPath();

async function timeFfmpeg(args: string[]): Promise<number> {
  const started = performance.now();
  const child = spawnChild(ffmpeg, args, { stdout: 'ignore' });
  await child.done;
  return (performance.now() - started) / 1000;
}

function floorArgs(inputs: string[], out: string, scaleTo: string | null): string[] {
  const n = inputs.length;
  const stack = `${inputs.map((_, i) => `[${i}:v]`).join('')}hstack=inputs=${n}${scaleTo ? `,scale=${scaleTo}` : ''}[out]`;
  return [
    '-hide_banner',
    '-nostdin',
    '-loglevel',
    'error',
    '-y',
    ...inputs.flatMap((p) => ['-i', p]),
    '-filter_complex',
    stack,
    '-map',
    '[out]',
    '-an',
    '-c:v',
    'libx264',
    '-preset',
    'veryfast',
    '-crf',
    '20',
    '-g',
    '50',
    '-pix_fmt',
    'yuv420p',
    '-f',
    'mp4',
    out,
  ];
}

const work = await mkdtemp(join(tmpdir(), 'bench-edge-stitch-'));
const results: Record<string, unknown>[] = [];

/** Times both graphs and both floors on one rig, interleaved run by run. */
async function measure(name: string, venue: VenueCalibration, cameraPaths: string[], frames: number) {
  const stitchers = {
    '420': await createStitcher(venue, { workDir: join(work, name, '420'), encoder: 'libx264', chromaLayout: '420' }),
    '444': await createStitcher(venue, { workDir: join(work, name, '444'), encoder: 'libx264', chromaLayout: '444' }),
  };
  const s420 = stitchers['420'];
  const pano = `${s420.widthPx}x${s420.heightPx}`;
  const times = { s420: [] as number[], s444: [] as number[], floor: [] as number[], floorSamePixels: [] as number[] };
  const inputs = venue.cameras.map((c, i) => ({ cameraId: c.id, path: cameraPaths[i] as string }));
  for (let r = 0; r < runs; r++) {
    // Interleaved, so that load changes on the host hit all four alike.
    for (const layout of ['420', '444'] as const) {
      const t = performance.now();
      await stitchers[layout].stitch(inputs, join(work, `${name}-pano-${layout}.mp4`));
      (layout === '420' ? times.s420 : times.s444).push((performance.now() - t) / 1000);
    }
    times.floor.push(await timeFfmpeg(floorArgs(cameraPaths, join(work, `${name}-floor.mp4`), null)));
    times.floorSamePixels.push(
      await timeFfmpeg(floorArgs(cameraPaths, join(work, `${name}-floor2.mp4`), `${s420.widthPx}:${s420.heightPx}`)),
    );
  }
  const best = (xs: number[]) => Math.min(...xs);
  const row = {
    input: name,
    frames,
    panorama: pano,
    load_1min: loadavg()[0],
    maps_prepare_s: Number((s420.prepareMs / 1000).toFixed(2)),
    stitch_420_s: times.s420,
    stitch_444_s: times.s444,
    floor_s: times.floor,
    floor_same_pixels_s: times.floorSamePixels,
    stitch_420_fps: Number((frames / best(times.s420)).toFixed(1)),
    stitch_444_fps: Number((frames / best(times.s444)).toFixed(1)),
    floor_fps: Number((frames / best(times.floor)).toFixed(1)),
    floor_same_pixels_fps: Number((frames / best(times.floorSamePixels)).toFixed(1)),
    ratio_420_vs_floor: Number((best(times.s420) / best(times.floor)).toFixed(2)),
    ratio_444_vs_floor: Number((best(times.s444) / best(times.floor)).toFixed(2)),
    ratio_420_vs_floor_same_pixels: Number((best(times.s420) / best(times.floorSamePixels)).toFixed(2)),
    ratio_444_vs_floor_same_pixels: Number((best(times.s444) / best(times.floorSamePixels)).toFixed(2)),
  };
  results.push(row);
  process.stdout.write(`${JSON.stringify(row)}\n`);
}

try {
  if (!values['skip-synthetic']) {
    for (const spec of [
      { name: '3x720p', cameras: 3, widthPx: 1280, heightPx: 720 },
      { name: '2x1080p', cameras: 2, widthPx: 1920, heightPx: 1080 },
    ]) {
      const clip = await benchClip({ ...spec, durationS });
      await measure(spec.name, clip.venue, clip.cameraPaths, clip.frames);
    }
  }
  const realS = Number(values['real-seconds'] ?? 0);
  const real = ['../shared/footage/tsukuba-left.mp4', '../shared/footage/tsukuba-right.mp4'];
  if (realS > 0 && real.every((p) => existsSync(p))) {
    const venue = (await selfCalibrate(real)).venue;
    // The first seconds, stream-copied (the clips start on a keyframe).
    const cut = await Promise.all(
      real.map(async (p, i) => {
        const out = join(work, `real-${i}.mp4`);
        await timeFfmpeg([
          '-hide_banner',
          '-nostdin',
          '-loglevel',
          'error',
          '-y',
          '-i',
          p,
          '-t',
          String(realS),
          '-c',
          'copy',
          out,
        ]);
        return out;
      }),
    );
    const probe = await ffprobe(cut[0] as string);
    await measure(`tsukuba ${realS} s`, venue, cut, probe.frameCount ?? Math.round(realS * 25));
  }
  await writeFile(
    join(import.meta.dirname, '../results/edge-stitch-fps.json'),
    `${JSON.stringify({ measured_at: new Date().toISOString(), encoder: 'libx264 veryfast crf 20', runs, duration_s: durationS, results }, null, 2)}\n`,
  );
} finally {
  await rm(work, { recursive: true, force: true });
}
