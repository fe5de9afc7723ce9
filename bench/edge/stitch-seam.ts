/**
 * The seam of the real two-camera rig before and after seam alignment
 * (edge/src/calibration/self/seam-alignment.ts): self-calibrates the tsukuba
 * pair once (with the alignment; "before" is the same venue without
 * `panorama_warp` and `seam_x_px`), stitches one frame with each, and writes a
 * crop around the seam, before above after, to docs/stitch-tsukuba-seam.jpg.
 * Also records the calibration's step times (where the calibration time goes).
 *
 * Usage: node bench/edge/stitch-seam.ts [--at-s 2] [--crop-width 1200]
 * Writes bench/results/edge-stitch-seam.json and docs/stitch-tsukuba-seam.jpg.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createStitcher, selfCalibrate } from '../../edge/src/index.ts';
import type { VenueCalibration } from '../../shared/src/index.ts';

import { oneFrameClips, runFfmpeg, tsukubaPairOrSkip } from './tsukuba-pair.ts';

const { values } = parseArgs({
  options: { 'at-s': { type: 'string', default: '2' }, 'crop-width': { type: 'string', default: '1200' } },
});
const cams = tsukubaPairOrSkip();
const work = await mkdtemp(join(tmpdir(), 'bench-seam-'));
try {
  const steps: Record<string, number> = {};
  const t0 = performance.now();
  let last = t0;
  let lastName = '';
  const cal = await selfCalibrate(cams, {
    onStep: (s) => {
      const now = performance.now();
      if (lastName) steps[lastName] = (now - last) / 1000;
      last = now;
      lastName = s;
      process.stderr.write(`${((now - t0) / 1000).toFixed(1)} s ${s}\n`);
    },
  });
  steps[lastName] = (performance.now() - last) / 1000;
  const calibrationS = (performance.now() - t0) / 1000;
  const after = cal.venue;
  const before: VenueCalibration = JSON.parse(JSON.stringify(after));
  for (const c of before.cameras) delete c.panorama_warp;
  delete before.panorama.seam_x_px;
  delete before.panorama.seam_feather_px;
  await writeFile(join(work, 'venue.json'), JSON.stringify(after));

  const frames = await oneFrameClips(cams, work, Number(values['at-s']));
  const seam = after.panorama.seam_x_px ?? [];
  const seamMid = seam.length ? [...seam].sort((a, b) => a - b)[seam.length >> 1]! : after.panorama.width_px / 2;
  const cropW = Number(values['crop-width']);
  const cropX = Math.max(0, Math.min(after.panorama.width_px - cropW, Math.round(seamMid - cropW / 2)));
  const crops: string[] = [];
  const mapsS: Record<string, number> = {};
  for (const [name, venue] of [
    ['before', before],
    ['after', after],
  ] as const) {
    const m0 = performance.now();
    const stitcher = await createStitcher(venue, { workDir: join(work, name), encoder: 'libx264', quality: 12 });
    mapsS[name] = (performance.now() - m0) / 1000;
    const pano = join(work, `${name}.mp4`);
    await stitcher.stitch(frames, pano);
    const crop = join(work, `${name}.png`);
    await runFfmpeg([
      '-i',
      pano,
      '-frames:v',
      '1',
      '-vf',
      `crop=${cropW}:${after.panorama.height_px}:${cropX}:0,drawtext=text='${name}':x=20:y=20:fontsize=48:fontcolor=yellow:box=1:boxcolor=black`,
      crop,
    ]).catch(() =>
      // drawtext needs a font; without one the crop is written unlabelled.
      runFfmpeg(['-i', pano, '-frames:v', '1', '-vf', `crop=${cropW}:${after.panorama.height_px}:${cropX}:0`, crop]),
    );
    crops.push(crop);
  }
  await runFfmpeg([
    '-i',
    crops[0]!,
    '-i',
    crops[1]!,
    '-filter_complex',
    '[0:v][1:v]hstack=inputs=2,scale=1600:-2',
    '-q:v',
    '3',
    'docs/stitch-tsukuba-seam.jpg',
  ]);
  const result = {
    date: new Date().toISOString(),
    host_load_1min: loadavg()[0],
    calibration_s: calibrationS,
    steps_s: steps,
    maps_s: mapsS,
    panorama: `${after.panorama.width_px}x${after.panorama.height_px}`,
    crop: { x: cropX, width: cropW },
    quality: after.quality,
    seam_alignment: cal.seamAlignment,
  };
  process.stderr.write(`${JSON.stringify(result, null, 1)}\n`);
  await writeFile('bench/results/edge-stitch-seam.json', `${JSON.stringify(result, null, 2)}\n`);
} finally {
  await rm(work, { recursive: true, force: true });
}
