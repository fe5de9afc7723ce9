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
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { planTracksOverlay, renderTracksOverlay, renderVirtualCamera } from '../../core/src/workers/vcam/index.ts';
import { alternateVariants, loadDemoRender, writeVcamBench } from './demo-render.ts';

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
    const demo = await loadDemoRender(outDir);
    const { inputPath, scene, render } = demo;
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
    rows.push(...(await alternateVariants(demo, variants, Number(values.runs))));
  }
} finally {
  await rm(work, { recursive: true, force: true });
}
await writeVcamBench(
  'vcam-one-decode.json',
  `node bench/vcam/one-decode.ts ${positionals.join(' ')} --runs ${values.runs}`,
  rows,
  loadBefore,
);
