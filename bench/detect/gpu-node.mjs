// The default detector through onnxruntime-node (the binding the detect stage uses) on the CUDA execution
// provider, with the session options of core/src/workers/detect/model/open-session.ts. A plain ES module
// with no workspace imports, so that it runs with only `node` and `onnxruntime-node` on a GPU machine.
//
//   node bench/detect/gpu-node.mjs MODEL.onnx FRAME.f32 OUT.json [ORT_NODE_DIR]
//
// FRAME.f32: a letterboxed 1×3×720×1280 float32 frame (little-endian), e.g. written by bench/detect/gpu.py's
// `letterbox`. Prints and writes: ms per `session.run` (median of 5 repeats of 200 calls after 20 warm-ups)
// on CUDA and on the CPU at 1280×720 and 1280×480, and the CUDA output against the CPU's on the frame.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';

const [model, framePath, outPath, ortDir = 'onnxruntime-node'] = process.argv.slice(2);
const ort = createRequire(import.meta.url)(ortDir);
const HIGH = 0.561;
const base = {
  graphOptimizationLevel: 'all',
  logSeverityLevel: 3,
  extra: { session: { intra_op: { allow_spinning: '0' } } },
};

function input(height, width) {
  const data = new Float32Array(3 * height * width);
  let s = 1;
  for (let i = 0; i < data.length; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    data[i] = (s >>> 8) / 16777216;
  }
  return new ort.Tensor('float32', data, [1, 3, height, width]);
}

async function timed(session, feeds, warmup = 20, iters = 200, repeats = 5) {
  for (let i = 0; i < warmup; i++) await session.run(feeds);
  const per = [];
  for (let r = 0; r < repeats; r++) {
    const t0 = performance.now();
    for (let i = 0; i < iters; i++) await session.run(feeds);
    per.push((performance.now() - t0) / iters);
  }
  per.sort((a, b) => a - b);
  return per[Math.floor(per.length / 2)];
}

function people(out) {
  const [, rows, n] = out.dims;
  let count = 0;
  for (let j = 0; j < n; j++) {
    const p = Math.max(out.data[4 * n + j], out.data[5 * n + j], out.data[6 * n + j]);
    if (p >= HIGH) count++;
  }
  return { rows, count };
}

const result = { node: process.version, ort: ort.env?.versions?.common ?? null, rows: [], checks: {} };
const raw = readFileSync(framePath);
const frame = new ort.Tensor(
  'float32',
  new Float32Array(raw.buffer, raw.byteOffset, raw.length / 4),
  [1, 3, 720, 1280],
);
const sessions = {};
for (const ep of ['cuda', 'cpu']) {
  try {
    sessions[ep] = await ort.InferenceSession.create(model, { ...base, executionProviders: [ep] });
  } catch (err) {
    result.checks[ep] = `failed to open: ${String(err).slice(0, 400)}`;
  }
}
const outputs = {};
for (const [ep, session] of Object.entries(sessions)) {
  outputs[ep] = (await session.run({ images: frame })).output0;
  for (const [height, width] of [
    [720, 1280],
    [480, 1280],
  ]) {
    const ms = await timed(session, { images: input(height, width) });
    const row = { runtime: `onnxruntime-node-${ep}`, batch: 1, height, width, ms_per_call_with_copies: +ms.toFixed(3) };
    console.log(JSON.stringify(row));
    result.rows.push(row);
  }
}
if (outputs.cuda && outputs.cpu) {
  let maxScore = 0;
  const n = outputs.cpu.dims[2];
  for (let i = 4 * n; i < outputs.cpu.data.length; i++) {
    maxScore = Math.max(maxScore, Math.abs(outputs.cuda.data[i] - outputs.cpu.data[i]));
  }
  result.checks.cuda_vs_cpu = { max_abs_score_diff: maxScore, cuda: people(outputs.cuda), cpu: people(outputs.cpu) };
}
console.log(JSON.stringify(result.checks));
writeFileSync(outPath, JSON.stringify(result, null, 2));
