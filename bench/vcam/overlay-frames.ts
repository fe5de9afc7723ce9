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
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { planTracksOverlay, renderVirtualCamera } from '../../core/src/workers/vcam/index.ts';
import { alternateVariants, loadDemoRender, writeVcamBench } from './demo-render.ts';

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
    const demo = await loadDemoRender(outDir);
    const { tracks, scene, render } = demo;
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
    rows.push(...(await alternateVariants(demo, variants, Number(values.runs))));
  }
} finally {
  await rm(work, { recursive: true, force: true });
}
await writeVcamBench(
  'vcam-overlay-frames.json',
  `node bench/vcam/overlay-frames.ts ${positionals.join(' ')} --runs ${values.runs}`,
  rows,
  loadBefore,
);
