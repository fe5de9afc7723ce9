/**
 * The virtual camera and the tracks overlay from one decode of the panorama (one ffmpeg, a `split`:
 * what the vcam stage does since 2026-11-29) against two ffmpeg processes each decoding it (before),
 * in one run, alternating, on demo outputs: each `out/<match>` gives its stitched `panorama.mp4`, its
 * match tracks (`track/tracks.json`) and its output size (`vcam/camera-path.json`); the camera path
 * is planned again from the tracks (the ball left out: it does not change the cost). CPU = this
 * process and its reaped ffmpeg children (`/proc/self/stat`).
 *
 *   node bench/vcam/one-decode.ts out/<synthetic match> out/<tsukuba pair match> [--runs 2]
 *
 * Writes bench/results/vcam-one-decode.json.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { probeVideo } from '../../core/src/workers/detect/index.ts';
import { readTracksFile } from '../../core/src/workers/track/index.ts';
import {
  planCameraPath,
  planTracksOverlay,
  renderTracksOverlay,
  renderVirtualCamera,
} from '../../core/src/workers/vcam/index.ts';
import { cpuSeconds } from '../segments/cpu-time.ts';

const { values, positionals } = parseArgs({
  options: { runs: { type: 'string', default: '2' } },
  allowPositionals: true,
});
if (positionals.length === 0) {
  process.stderr.write('usage: node bench/vcam/one-decode.ts out/<match> [out/<match> …] [--runs N]\n');
  process.exit(2);
}
const loadBefore = loadavg();
const work = await mkdtemp(join(tmpdir(), 'pv-one-decode-'));
const rows = [];
try {
  for (const outDir of positionals) {
    const inputPath = resolve(outDir, 'panorama.mp4'); // ffmpeg runs in the output's folder
    const info = await probeVideo(inputPath);
    const tracks = await readTracksFile(join(outDir, 'track', 'tracks.json'));
    const { output } = JSON.parse(await readFile(join(outDir, 'vcam', 'camera-path.json'), 'utf8'));
    const path = planCameraPath(tracks, {
      aspectRatio: output.outputWidth / output.outputHeight,
      minCropWidthPx: output.minCropWidthPx,
    });
    const scene = { tracks, path, ball: [], pitch: { source: 'none' as const, outline: [], contains: () => true } };
    const render = { inputPath, path, outputWidth: output.outputWidth, outputHeight: output.outputHeight };
    const variants = {
      'two decodes (before)': async () => {
        await renderVirtualCamera({ ...render, outputPath: join(work, 'a-vcam.mp4') });
        await renderTracksOverlay({ ...scene, inputPath, outputPath: join(work, 'a-overlay.mp4') });
      },
      'one decode (shipped)': async () => {
        const plan = planTracksOverlay(scene);
        await renderVirtualCamera({
          ...render,
          outputPath: join(work, 'b-vcam.mp4'),
          overlay: { outputPath: join(work, 'b-overlay.mp4'), plan },
        });
      },
    };
    const cpu: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
    const wall: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
    for (let r = 0; r < Number(values.runs); r++) {
      for (const [name, run] of Object.entries(variants)) {
        const c0 = cpuSeconds();
        const w0 = performance.now();
        await run();
        cpu[name]!.push(cpuSeconds() - c0);
        wall[name]!.push((performance.now() - w0) / 1000);
      }
    }
    const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
    const videoS = info.durationMs / 1000;
    const base = median(cpu['two decodes (before)']!);
    for (const name of Object.keys(variants)) {
      const row = {
        clip: outDir,
        panorama: `${info.width}×${info.height}`,
        videoS,
        output: `${output.outputWidth}×${output.outputHeight}`,
        variant: name,
        cpuSecondsPerVideoSecond: +(median(cpu[name]!) / videoS).toFixed(3),
        ratio: +(median(cpu[name]!) / base).toFixed(2),
        wallSeconds: +median(wall[name]!).toFixed(1),
        runs: cpu[name]!.map((c) => +c.toFixed(2)),
      };
      console.log(JSON.stringify(row));
      rows.push(row);
    }
  }
} finally {
  await rm(work, { recursive: true, force: true });
}
await writeFile(
  'bench/results/vcam-one-decode.json',
  `${JSON.stringify(
    {
      command: `node bench/vcam/one-decode.ts ${positionals.join(' ')} --runs ${values.runs}`,
      host: { cpus: cpus().length, model: cpus()[0]?.model, load1m: { before: loadBefore[0], after: loadavg()[0] } },
      rows,
    },
    null,
    2,
  )}\n`,
);
