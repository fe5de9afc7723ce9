/**
 * The detector's letterbox (resize a tile into the NCHW float input) as the detect stage runs it, at
 * the tile plans the shipped detector makes for the demo's panorama (2880×392, people ~19 px) and for
 * the cluster bench's (1440×196, people ~10 px): the per-pixel 2×2 bilinear blend it used before
 * 2026-11-29 (baseline: that commit's letterbox.ts, read with `git show`) against the shipped
 * separable one (`letterboxInto`), the same
 * geometry and scale, alternating, `--frames` frames × the plan's tiles per round. Pixel content does
 * not change the cost (random bytes). Main-thread CPU time = wall time here (no threads, no I/O).
 *
 *   node bench/detect/letterbox.ts [--frames 40] [--rounds 6]
 *
 * Writes bench/results/detect-letterbox.json.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { detectEnvSchema, detectOptionsFromEnv } from '../../core/src/workers/detect/handler.ts';
import { type BgrImage, Detector, letterboxInto, type Region } from '../../core/src/workers/detect/index.ts';
import type { InputSpec } from '../../core/src/workers/detect/letterbox.ts';

const { values } = parseArgs({
  options: { frames: { type: 'string', default: '40' }, rounds: { type: 'string', default: '6' } },
});
const frames = Number(values.frames);
const rounds = Number(values.rounds);

/** The last commit whose `letterboxInto` blended 2×2 source pixels per output pixel: the baseline, run as it was. */
const BASELINE_COMMIT = '64d34a2';
const baselineDir = await mkdtemp(join(tmpdir(), 'pv-letterbox-'));
const baselineFile = join(baselineDir, 'letterbox-before.ts');
await writeFile(
  baselineFile,
  execFileSync('git', ['show', `${BASELINE_COMMIT}:core/src/workers/detect/letterbox.ts`], { encoding: 'utf8' }),
);
const { letterboxInto: letterboxPerPixel } = (await import(baselineFile)) as { letterboxInto: typeof letterboxInto };

const detector = await Detector.open(await detectOptionsFromEnv(detectEnvSchema.parse({})));
const cases = [
  { name: "demo's panorama", width: 2880, height: 392, personHeightPx: 19 },
  { name: "cluster bench's panorama", width: 1440, height: 196, personHeightPx: 10 },
];
const loadBefore = loadavg();
const rows = [];
try {
  for (const c of cases) {
    const plan = detector.plan(c.width, c.height, c.personHeightPx);
    const W = plan.inputWidth;
    const H = plan.inputHeight;
    // The default model's input: Ultralytics (RGB planes, 0–1, pad 114, centred).
    const spec: InputSpec = {
      inputWidth: W,
      inputHeight: H,
      channelOrder: 'rgb',
      valueScale: 1 / 255,
      padValue: 114,
      placement: 'center',
    };
    const image: BgrImage = {
      width: plan.decodeWidth,
      height: plan.decodeHeight,
      data: new Uint8Array(plan.decodeWidth * plan.decodeHeight * 3),
    };
    for (let i = 0; i < image.data.length; i++) image.data[i] = (i * 2654435761) >>> 24;
    const out = new Float32Array(plan.tiles.length * 3 * W * H);
    // The scale the stage uses for each tile: what its own prepare() letterboxed them at.
    const scales = detector.prepare([image], plan).flatMap((batch) => batch.items.map((item) => item.transform.scale));
    const variants = {
      'per-pixel 2×2 blend (before)': (region: Region, k: number) =>
        letterboxPerPixel(image, region, spec, out, k * 3 * W * H, scales[k]!),
      'separable (shipped)': (region: Region, k: number) =>
        letterboxInto(image, region, spec, out, k * 3 * W * H, scales[k]!),
    };
    const ms: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((v) => [v, []]));
    for (let r = 0; r < rounds; r++)
      for (const [name, run] of Object.entries(variants)) {
        const t0 = performance.now();
        for (let f = 0; f < frames; f++) plan.tiles.forEach(run);
        ms[name]!.push(performance.now() - t0);
      }
    const median = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1]!;
    const base = median(ms['per-pixel 2×2 blend (before)']!);
    for (const [name, v] of Object.entries(ms)) {
      const row = {
        case: c.name,
        panorama: `${c.width}×${c.height}`,
        tiles: `${plan.grid.columns}×${plan.grid.rows}`,
        input: `${W}×${H}`,
        scale: +scales[0]!.toFixed(3),
        variant: name,
        msPerFrame: +(median(v) / frames).toFixed(2),
        // At the shipped 10 analysed frames per second.
        cpuSecondsPerVideoSecond: +(((median(v) / frames) * 10) / 1000).toFixed(3),
        ratio: +(median(v) / base).toFixed(2),
        roundsMs: v.map((x) => Math.round(x)),
      };
      console.log(JSON.stringify(row));
      rows.push(row);
    }
  }
} finally {
  await detector.close();
  await rm(baselineDir, { recursive: true, force: true });
}
await writeFile(
  'bench/results/detect-letterbox.json',
  `${JSON.stringify({ command: `node bench/detect/letterbox.ts --frames ${frames} --rounds ${rounds}`, host: { cpus: cpus().length, model: cpus()[0]?.model, load1m: { before: loadBefore[0], after: loadavg()[0] } }, rows }, null, 2)}\n`,
);
