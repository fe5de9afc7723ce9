/**
 * What the vcam render benches share (one-decode.ts, overlay-frames.ts): a demo output's panorama,
 * match tracks and output size, with the camera path planned again from the tracks (the ball left
 * out: it does not change the cost); and render variants run alternating, CPU (this process and its
 * reaped ffmpeg children) and wall time per run, one row per variant against the first (the baseline).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { probeVideo } from '../../core/src/workers/detect/index.ts';
import { readTracksFile } from '../../core/src/workers/track/index.ts';
import { planCameraPath } from '../../core/src/workers/vcam/index.ts';
import { cpuSeconds } from '../segments/cpu-time.ts';

/** A demo output `out/<match>` as the vcam stage met it. */
export async function loadDemoRender(outDir: string) {
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
  return { outDir, inputPath, info, tracks, output, scene, render };
}

/**
 * Runs each variant `runs` times, alternating, and returns one row per variant: the median CPU
 * seconds per second of video and its ratio to the first variant's, the median wall time, the runs.
 */
export async function alternateVariants(
  demo: Awaited<ReturnType<typeof loadDemoRender>>,
  variants: Record<string, () => Promise<unknown>>,
  runs: number,
): Promise<Record<string, unknown>[]> {
  const names = Object.keys(variants);
  const cpu: Record<string, number[]> = Object.fromEntries(names.map((k) => [k, []]));
  const wall: Record<string, number[]> = Object.fromEntries(names.map((k) => [k, []]));
  for (let r = 0; r < runs; r++) {
    for (const name of names) {
      const c0 = cpuSeconds();
      const w0 = performance.now();
      await variants[name]!();
      cpu[name]!.push(cpuSeconds() - c0);
      wall[name]!.push((performance.now() - w0) / 1000);
    }
  }
  const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
  const videoS = demo.info.durationMs / 1000;
  const base = median(cpu[names[0]!]!);
  return names.map((name) => {
    const row = {
      clip: demo.outDir,
      panorama: `${demo.info.width}×${demo.info.height}`,
      sourceFps: demo.tracks.detections.source.fps,
      analysisFps: demo.tracks.detections.analysisFps,
      videoS,
      output: `${demo.output.outputWidth}×${demo.output.outputHeight}`,
      variant: name,
      cpuSecondsPerVideoSecond: +(median(cpu[name]!) / videoS).toFixed(3),
      ratio: +(median(cpu[name]!) / base).toFixed(2),
      wallSeconds: +median(wall[name]!).toFixed(1),
      runs: cpu[name]!.map((c) => +c.toFixed(2)),
    };
    console.log(JSON.stringify(row));
    return row;
  });
}

/** Writes a vcam render bench's result to `bench/results/<file>`: the command, the host and its load before and after, the rows. */
export async function writeVcamBench(
  file: string,
  command: string,
  rows: readonly Record<string, unknown>[],
  loadBefore: readonly number[],
): Promise<void> {
  const host = { cpus: cpus().length, model: cpus()[0]?.model, load1m: { before: loadBefore[0], after: loadavg()[0] } };
  await writeFile(join('bench/results', file), `${JSON.stringify({ command, host, rows }, null, 2)}\n`);
}
