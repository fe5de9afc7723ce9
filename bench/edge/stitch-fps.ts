/**
 * Stitching speed: frames per second of the edge stitcher (remap + feathered
 * maskedmerge + H.264) on 3×720p and 2×1080p synthetic cameras, against the
 * floor measured in the same run on the same streams: plain decode,
 * side-by-side `hstack`, and the same encoder settings. A second floor scales
 * the stack to the panorama's size, so both encode the same pixel count.
 *
 * Usage: node bench/edge/stitch-fps.ts [--runs 2] [--duration 4]
 * Writes bench/results/edge-stitch-fps.json.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createStitcher } from '../../edge/src/index.ts';
import { resolveFfmpegPath, spawnChild } from '../../shared/src/index.ts';
import { benchClip } from './clips.ts';

const { values } = parseArgs({ options: { runs: { type: 'string' }, duration: { type: 'string' } } });
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
try {
  for (const spec of [
    { name: '3x720p', cameras: 3, widthPx: 1280, heightPx: 720 },
    { name: '2x1080p', cameras: 2, widthPx: 1920, heightPx: 1080 },
  ]) {
    const clip = await benchClip({ ...spec, durationS });
    const stitcher = await createStitcher(clip.venue, { workDir: join(work, spec.name), encoder: 'libx264' });
    const pano = `${stitcher.widthPx}x${stitcher.heightPx}`;
    const times = { stitch: [] as number[], floor: [] as number[], floorSamePixels: [] as number[] };
    for (let r = 0; r < runs; r++) {
      // Interleaved, so that load changes on the host hit all three alike.
      let t = performance.now();
      await stitcher.stitch(
        clip.venue.cameras.map((c, i) => ({ cameraId: c.id, path: clip.cameraPaths[i] as string })),
        join(work, `${spec.name}-pano.mp4`),
      );
      times.stitch.push((performance.now() - t) / 1000);
      times.floor.push(await timeFfmpeg(floorArgs(clip.cameraPaths, join(work, `${spec.name}-floor.mp4`), null)));
      t = performance.now();
      times.floorSamePixels.push(
        await timeFfmpeg(
          floorArgs(
            clip.cameraPaths,
            join(work, `${spec.name}-floor2.mp4`),
            `${stitcher.widthPx}:${stitcher.heightPx}`,
          ),
        ),
      );
    }
    const best = (xs: number[]) => Math.min(...xs);
    const row = {
      input: spec.name,
      frames: clip.frames,
      panorama: pano,
      hstack: `${spec.cameras * spec.widthPx}x${spec.heightPx}`,
      maps_prepare_s: Number((stitcher.prepareMs / 1000).toFixed(2)),
      stitch_s: times.stitch,
      floor_s: times.floor,
      floor_same_pixels_s: times.floorSamePixels,
      stitch_fps: Number((clip.frames / best(times.stitch)).toFixed(1)),
      floor_fps: Number((clip.frames / best(times.floor)).toFixed(1)),
      floor_same_pixels_fps: Number((clip.frames / best(times.floorSamePixels)).toFixed(1)),
      ratio_vs_floor: Number((best(times.stitch) / best(times.floor)).toFixed(2)),
      ratio_vs_floor_same_pixels: Number((best(times.stitch) / best(times.floorSamePixels)).toFixed(2)),
    };
    results.push(row);
    process.stdout.write(`${JSON.stringify(row)}\n`);
  }
  await writeFile(
    join(import.meta.dirname, '../results/edge-stitch-fps.json'),
    `${JSON.stringify({ measured_at: new Date().toISOString(), encoder: 'libx264 veryfast crf 20', runs, duration_s: durationS, results }, null, 2)}\n`,
  );
} finally {
  await rm(work, { recursive: true, force: true });
}
