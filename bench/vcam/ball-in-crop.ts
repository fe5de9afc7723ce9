/**
 * Ball inside the virtual camera, judged against the synthetic match's ground
 * truth: the share of source frames whose true ball centre (class 4 of
 * `gt/panorama.mot.txt`, panorama pixels) lies inside the crop window of the
 * collected `camera-path.json` at that frame's time (as the renderer uses it).
 *
 *   node bench/vcam/ball-in-crop.ts out/<match> .cache/demo/synthetic-1280x720-20s-25fps-seed7
 *
 * Run it on the folder `pnpm demo` wrote (the demo's own settings). Writes
 * bench/results/vcam-ball-in-crop.json.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type CameraPath, windowAt } from '../../core/src/workers/vcam/index.ts';

const [outDir, sampleDir] = process.argv.slice(2);
if (!outDir || !sampleDir) {
  process.stderr.write('usage: node bench/vcam/ball-in-crop.ts <out/match> <sample dir>\n');
  process.exit(2);
}
const path = JSON.parse(await readFile(join(outDir, 'vcam', 'camera-path.json'), 'utf8')) as CameraPath & {
  quality: unknown;
  output: unknown;
  ballSource: string;
};
const manifest = JSON.parse(await readFile(join(sampleDir, 'manifest.json'), 'utf8')) as { fps: number };
const mot = await readFile(join(sampleDir, 'gt', 'panorama.mot.txt'), 'utf8');
let frames = 0;
let inside = 0;
for (const line of mot.split('\n')) {
  const f = line.split(',').map(Number);
  if (f.length < 9 || f[7] !== 4 || !(f[8]! > 0)) continue;
  const frame = f[0]! - 1;
  const x = f[2]! + f[4]! / 2;
  const y = f[3]! + f[5]! / 2;
  const w = windowAt(path, (frame / manifest.fps) * 1000);
  frames += 1;
  if (Math.abs(x - w.cx) <= w.width / 2 && Math.abs(y - w.cy) <= w.height / 2) inside += 1;
}
const result = {
  date: new Date().toISOString(),
  outDir,
  sampleDir,
  ballSource: path.ballSource,
  output: path.output,
  framesWithVisibleBall: frames,
  ballInCropShare: frames > 0 ? inside / frames : null,
  stageQuality: path.quality,
};
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
await writeFile(
  join(import.meta.dirname, '..', 'results', 'vcam-ball-in-crop.json'),
  `${JSON.stringify(result, null, 2)}\n`,
);
