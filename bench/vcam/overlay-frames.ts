/**
 * The vcam stage's render (virtual camera + tracks overlay from one decode) with the overlay drawn on
 * every source frame (before 2026-11-29, evening) against only the analysed frames at the analysis
 * rate (shipped), and without an overlay (reference), in one run, alternating, on demo outputs: each
 * `out/<match>` gives its stitched `panorama.mp4`, its match tracks (`track/tracks.json`) and its
 * output size (`vcam/camera-path.json`); the camera path is planned again from the tracks (the ball
 * left out: it does not change the cost). CPU = this process and its reaped ffmpeg children.
 *
 *   node bench/vcam/overlay-frames.ts out/<synthetic match> out/<tsukuba pair match> [--runs 3]
 *
 * Writes bench/results/vcam-overlay-frames.json.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { probeVideo } from '../../core/src/workers/detect/index.ts';
import { readTracksFile } from '../../core/src/workers/track/index.ts';
import { planCameraPath, planTracksOverlay, renderVirtualCamera } from '../../core/src/workers/vcam/index.ts';
import { cpuSeconds } from '../segments/cpu-time.ts';

const { values, positionals } = parseArgs({
  options: { runs: { type: 'string', default: '3' } },
  allowPositionals: true,
});
if (positionals.length === 0) {
  process.stderr.write('usage: node bench/vcam/overlay-frames.ts out/<match> [out/<match> …] [--runs N]\n');
  process.exit(2);
}
const BASELINE = 'every source frame (before)';
const loadBefore = loadavg();
const work = await mkdtemp(join(tmpdir(), 'pv-overlay-frames-'));
const rows = [];
try {
  for (const outDir of positionals) {
    const inputPath = resolve(outDir, 'panorama.mp4');
    const info = await probeVideo(inputPath);
    const tracks = await readTracksFile(join(outDir, 'track', 'tracks.json'));
    const { output } = JSON.parse(await readFile(join(outDir, 'vcam', 'camera-path.json'), 'utf8'));
    const path = planCameraPath(tracks, {
      aspectRatio: output.outputWidth / output.outputHeight,
      minCropWidthPx: output.minCropWidthPx,
    });
    const scene = { tracks, path, ball: [], pitch: { source: 'none' as const, outline: [], contains: () => true } };
    const render = { inputPath, path, outputWidth: output.outputWidth, outputHeight: output.outputHeight };
    const shipped = planTracksOverlay(scene);
    // The plan as it was: no frame selection, the source's rate.
    const everyFrame = {
      ...shipped,
      filter: (assFile: string) => shipped.filter(assFile).slice(shipped.filter(assFile).indexOf('scale=')),
      codecArgs: shipped.codecArgs.slice(shipped.codecArgs.indexOf('-an')),
      frames: tracks.detections.source.frameCount,
    };
    const variants: Record<string, () => Promise<unknown>> = {
      [BASELINE]: () =>
        renderVirtualCamera({
          ...render,
          outputPath: join(work, 'a-vcam.mp4'),
          overlay: { outputPath: join(work, 'a-overlay.mp4'), plan: everyFrame },
        }),
      'analysed frames only (shipped)': () =>
        renderVirtualCamera({
          ...render,
          outputPath: join(work, 'b-vcam.mp4'),
          overlay: { outputPath: join(work, 'b-overlay.mp4'), plan: shipped },
        }),
      'no overlay (VCAM_OVERLAY=off)': () => renderVirtualCamera({ ...render, outputPath: join(work, 'c-vcam.mp4') }),
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
    const base = median(cpu[BASELINE]!);
    for (const name of Object.keys(variants)) {
      const row = {
        clip: outDir,
        panorama: `${info.width}×${info.height}`,
        sourceFps: tracks.detections.source.fps,
        analysisFps: tracks.detections.analysisFps,
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
  'bench/results/vcam-overlay-frames.json',
  `${JSON.stringify(
    {
      command: `node bench/vcam/overlay-frames.ts ${positionals.join(' ')} --runs ${values.runs}`,
      host: { cpus: cpus().length, model: cpus()[0]?.model, load1m: { before: loadBefore[0], after: loadavg()[0] } },
      rows,
    },
    null,
    2,
  )}\n`,
);
