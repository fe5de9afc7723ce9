/**
 * Checks the committed detector in onnxruntime-node, the runtime the workers
 * use: it loads, its input is `images` [1, 3, height, width] (symbolic since 2.2; run at its nominal
 * 720 × 1280 here) and its output
 * `output0` is [1, 4 + C, N] (YOLOv8 layout) with N = 90 · 160; then it runs
 * one freshly generated synthetic frame (seed 4242, never used in training)
 * and prints the detections scoring ≥ 0.3 per class against the ground truth.
 *
 * Run: node core/models/player-detector/verify.ts   (exit status 1 on a mismatch)
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateMatch, resolveFfmpegPath, spawnChild } from '@polyvision/shared';
import * as ort from 'onnxruntime-node';

const CLASSES = ['player', 'goalkeeper', 'referee', 'ball'];
const WIDTH = 1280;
const HEIGHT = 720;
const modelPath = join(import.meta.dirname, 'player-detector.onnx');

const session = await ort.InferenceSession.create(modelPath, { executionProviders: ['cpu'] });
console.log(`inputs ${session.inputNames.join(',')} outputs ${session.outputNames.join(',')}`);
if (session.inputNames[0] !== 'images' || session.outputNames[0] !== 'output0') {
  console.error('unexpected input/output names');
  process.exit(1);
}

const dir = await mkdtemp(join(tmpdir(), 'pv-detector-verify-'));
try {
  await generateMatch({
    outDir: dir,
    cameras: 2,
    durationS: 0.04,
    fps: 25,
    widthPx: WIDTH,
    heightPx: HEIGHT,
    seed: 4242,
  });
  const ffmpeg = spawnChild(resolveFfmpegPath(), [
    '-v',
    'error',
    '-i',
    join(dir, 'camera-1.mp4'),
    '-frames:v',
    '1',
    '-f',
    'rawvideo',
    '-pix_fmt',
    'rgb24',
    '-',
  ]);
  const chunks: Buffer[] = [];
  ffmpeg.stdout?.on('data', (c: Buffer) => chunks.push(c));
  await ffmpeg.done;
  const rgb = Buffer.concat(chunks);
  const planar = new Float32Array(3 * WIDTH * HEIGHT);
  for (let i = 0; i < WIDTH * HEIGHT; i++) {
    for (let c = 0; c < 3; c++) planar[c * WIDTH * HEIGHT + i] = (rgb[i * 3 + c] as number) / 255;
  }
  const started = performance.now();
  const result = await session.run({ images: new ort.Tensor('float32', planar, [1, 3, HEIGHT, WIDTH]) });
  const ms = performance.now() - started;
  const out = result.output0;
  if (!out) throw new Error('no output0');
  console.log(`output0 dims [${out.dims.join(', ')}] in ${ms.toFixed(0)} ms`);
  const n = (HEIGHT / 8) * (WIDTH / 8);
  if (out.dims.length !== 3 || out.dims[0] !== 1 || out.dims[1] !== 4 + CLASSES.length || out.dims[2] !== n) {
    console.error(`expected [1, ${4 + CLASSES.length}, ${n}]`);
    process.exit(1);
  }
  const data = out.data as Float32Array;
  const gt = (await readFile(join(dir, 'gt', 'camera-1.mot.txt'), 'utf8')).trim().split('\n');
  for (const [c, name] of CLASSES.entries()) {
    let cells = 0;
    for (let k = 0; k < n; k++) if ((data[(4 + c) * n + k] as number) >= 0.3) cells++;
    const truth = gt.filter((l) => l.split(',')[7] === String(c + 1)).length;
    console.log(`${name}: ${cells} cells ≥ 0.3 (before NMS), ${truth} in the ground truth`);
  }
  session.release();
} finally {
  await rm(dir, { recursive: true, force: true });
}
