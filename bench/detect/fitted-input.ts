/**
 * The detect stage with its input fitted to the tiles (player-detector 2.2's symbolic input: each tile
 * inferred at its letterboxed size rounded up to 32 px) against the same detector fed the nominal
 * 1280×720 letterbox (`fitInputToTiles: false`, the baseline), interleaved in one run, on the synthetic
 * demo clip (seed 7, 20 s, the demo's 2880×392 panorama: 3 tiles at scale 1.2, 1280×470 px of picture
 * each), as a worker opens the detector (`detectOptionsFromEnv` defaults) at the demo's 10 analysed fps.
 *
 * Per variant: CPU seconds of this process and its reaped ffmpeg children (`/proc/self/stat`, which the
 * host's load changes less than wall time), wall time, the bare onnxruntime run per tile at the plan's
 * tensor size; then the tracks the track stage makes from each variant's detections (card thresholds,
 * pitch region, stored torso colours, whole clip) scored with `polyvision eval tracks` (HOTA / IDF1).
 *
 *   node bench/detect/fitted-input.ts [--runs 3] [--seed 7] [--seconds 20]
 *
 * Writes bench/results/detect-fitted-input.json.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { DEFAULT_MODEL_PATH, detectEnvSchema, detectOptionsFromEnv } from '../../core/src/workers/detect/handler.ts';
import { Detector, readDetectionsFile, runDetect } from '../../core/src/workers/detect/index.ts';
import {
  modelCardThresholds,
  pitchRegionOf,
  storedAppearanceFeatures,
  trackClip,
} from '../../core/src/workers/track/index.ts';
import { cpuSeconds } from '../segments/cpu-time.ts';
import { syntheticClip } from '../workers/synthetic-clip.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    seed: { type: 'string', default: '7' },
    seconds: { type: 'string', default: '20' },
  },
});
const exec = promisify(execFile);
const root = new URL('../..', import.meta.url).pathname;
const clip = await syntheticClip(Number(values.seed), Number(values.seconds));
const work = await mkdtemp(join(tmpdir(), 'pv-fitted-input-'));
const baseOptions = await detectOptionsFromEnv(detectEnvSchema.parse({}));
const ANALYSIS_FPS = 10;
const variants = [
  { name: 'nominal 1280×720 letterbox (baseline)', fitInputToTiles: false },
  { name: 'input fitted to the tiles (shipped)', fitInputToTiles: true },
] as const;
interface RunResult {
  cpuSeconds: number;
  wallSeconds: number;
}
const runs: Record<string, RunResult[]> = {};
const loadBefore = loadavg();

try {
  for (let r = 0; r < Number(values.runs); r++) {
    for (const v of variants) {
      const detector = await Detector.open({ ...baseOptions, fitInputToTiles: v.fitInputToTiles });
      const cpu0 = cpuSeconds();
      const wall0 = performance.now();
      try {
        await runDetect({
          inputPath: clip.panoramaPath,
          outputPath: join(work, `${v.fitInputToTiles ? 'fitted' : 'nominal'}.jsonl`),
          detector,
          analysisFps: ANALYSIS_FPS,
        });
      } finally {
        await detector.close();
      }
      const list = runs[v.name] ?? [];
      list.push({ cpuSeconds: cpuSeconds() - cpu0, wallSeconds: (performance.now() - wall0) / 1000 });
      runs[v.name] = list;
      process.stdout.write(`run ${r + 1} ${v.name}: ${runs[v.name]!.at(-1)!.cpuSeconds.toFixed(1)} CPU-s\n`);
    }
  }

  const rows = [];
  for (const v of variants) {
    const file = join(work, `${v.fitInputToTiles ? 'fitted' : 'nominal'}.jsonl`);
    const detections = await readDetectionsFile(file);
    // The bare session per tile at this variant's tensor size (20 runs after 2 warm-ups).
    const detector = await Detector.open({ ...baseOptions, fitInputToTiles: v.fitInputToTiles });
    const plan = detector.plan(
      clip.width,
      clip.height,
      detections.header.tiling?.personHeightPx,
      detections.header.tiling?.source === 'estimated',
    );
    // One tile's tensor, as the stage prepares it (a grey frame: the timing does not depend on the pixels).
    const frame = {
      width: plan.decodeWidth,
      height: plan.decodeHeight,
      data: new Uint8Array(plan.decodeWidth * plan.decodeHeight * 3).fill(114),
    };
    const tensor = detector.prepare([frame], { ...plan, tiles: plan.tiles.slice(0, 1) })[0]!.tensor;
    for (let i = 0; i < 2; i++) await detector.runRaw(tensor);
    const t0 = performance.now();
    for (let i = 0; i < 20; i++) await detector.runRaw(tensor);
    const msPerTile = (performance.now() - t0) / 20;
    await detector.close();
    // Tracks as the track stage makes them from these detections (whole clip).
    const card = await modelCardThresholds(DEFAULT_MODEL_PATH, detections.header.model);
    const pitchRegion = pitchRegionOf(clip.venue, clip.width, clip.height);
    const appearance = storedAppearanceFeatures(detections);
    const tracks = trackClip(detections, {
      lostTrackBufferAt30Fps: 30,
      interpolateGapFrames: 20,
      ...(card ? { modelCardThresholds: { high: card.high, low: card.low } } : {}),
      ...(card?.ball !== undefined ? { ball: { minScore: card.ball } } : {}),
      ...(pitchRegion ? { pitchRegion } : {}),
      ...(appearance ? { appearance } : {}),
    }).tracks;
    const tracksPath = join(work, `${v.fitInputToTiles ? 'fitted' : 'nominal'}-tracks.json`);
    await writeFile(tracksPath, JSON.stringify(tracks));
    const { stdout } = await exec(join(root, 'polyvision'), [
      'eval',
      'tracks',
      '--gt',
      join(clip.dir, 'gt', 'panorama.mot.txt'),
      '--pred',
      tracksPath,
      '--json',
    ]);
    const metrics = JSON.parse(stdout);
    const r = runs[v.name]!;
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const frames = detections.frames.length;
    const people = detections.frames.reduce(
      (n, f) => n + f.detections.filter((d) => d.class !== 'ball' && d.score >= (card?.high ?? 0.5)).length,
      0,
    );
    rows.push({
      variant: v.name,
      tiles: plan.tiles.length,
      tensor: `${plan.inputWidth}×${plan.inputHeight}`,
      cpuSecondsMedian: median(r.map((x) => x.cpuSeconds)),
      cpuSecondsPerVideoSecond: median(r.map((x) => x.cpuSeconds)) / Number(values.seconds),
      wallSecondsMedian: median(r.map((x) => x.wallSeconds)),
      runs: r,
      bareMsPerTile: msPerTile,
      framesAnalysed: frames,
      confidentPeoplePerFrame: people / frames,
      HOTA: metrics.HOTA,
      IDF1: metrics.IDF1,
      MOTA: metrics.MOTA,
      IDSW: metrics.IDSW,
    });
  }
  const base = rows[0]!;
  const result = {
    command: `node bench/detect/fitted-input.ts --runs ${values.runs} --seed ${values.seed} --seconds ${values.seconds}`,
    clip: { seed: Number(values.seed), seconds: Number(values.seconds), width: clip.width, height: clip.height },
    analysisFps: ANALYSIS_FPS,
    host: { cpus: cpus().length, loadBefore, loadAfter: loadavg() },
    rows: rows.map((row) => ({ ...row, cpuRatioToBaseline: row.cpuSecondsMedian / base.cpuSecondsMedian })),
  };
  await writeFile(join(root, 'bench', 'results', 'detect-fitted-input.json'), `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(
    '| variant | tensor | detect CPU-s per s of video | ratio | wall s | bare ms per tile | confident people per frame | HOTA | IDF1 | IDSW |\n|---|---|---|---|---|---|---|---|---|---|\n',
  );
  for (const row of result.rows) {
    process.stdout.write(
      `| ${row.variant} | ${row.tiles} × ${row.tensor} | ${row.cpuSecondsPerVideoSecond.toFixed(3)} | ${row.cpuRatioToBaseline.toFixed(2)} | ${row.wallSecondsMedian.toFixed(1)} | ${row.bareMsPerTile.toFixed(1)} | ${row.confidentPeoplePerFrame.toFixed(1)} | ${(100 * row.HOTA).toFixed(1)} | ${(100 * row.IDF1).toFixed(1)} | ${row.IDSW} |\n`,
    );
  }
} finally {
  await rm(work, { recursive: true, force: true });
}
