/**
 * onnxruntime's intra-op threads spinning (busy-waiting between operators, onnxruntime's own default)
 * against sleeping (`DETECT_ORT_SPINNING=off`, the stage's default since 2026-11-29), for the detect
 * stage on a match segment (segment-detect.ts: the demo's 2880×392 panorama, 4 s, 10 analysed fps,
 * the person height given as a match's later segments get it).
 *
 * - `alone`: one process, `--runs` detect runs after a warm-up; CPU (process + ffmpeg children) and
 *   wall per run, medians. The variants alternate, each in its own process.
 * - `two at once`: two such processes started together, as the cluster's two workers share 2 cores;
 *   the wall time until both are done.
 *
 *   node bench/detect/ort-spinning.ts [--runs 3] [--rounds 2]
 *
 * Writes bench/results/detect-ort-spinning.json.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { spawnChild } from '../../shared/src/index.ts';
import { median, openSegmentDetect, round3 } from './segment-detect.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '2' },
    child: { type: 'string' },
  },
});
const runs = Number(values.runs);
const SEGMENT_S = 4;

if (values.child) {
  // A child: detect `runs` times with DETECT_ORT_SPINNING = --child, print the runs as JSON.
  const segment = await openSegmentDetect(1280, SEGMENT_S, { DETECT_ORT_SPINNING: values.child });
  try {
    const first = await segment.detect();
    const out = [];
    for (let r = 0; r < runs; r++) out.push(await segment.detect({ person_height_px: first.personHeightPx }));
    process.stdout.write(`${JSON.stringify(out.map((r) => ({ cpuS: r.cpuS, wallS: r.wallS })))}\n`);
  } finally {
    await segment.close();
  }
  process.exit(0);
}

/** Runs `count` children with `spinning` at once (they die with this process); their runs and the wall time until all are done. */
async function children(spinning: 'on' | 'off', count: number) {
  const started = performance.now();
  const outputs = await Promise.all(
    Array.from({ length: count }, async () => {
      const child = spawnChild(process.execPath, [
        fileURLToPath(import.meta.url),
        '--child',
        spinning,
        '--runs',
        String(runs),
      ]);
      let text = '';
      child.stdout?.on('data', (c: Buffer) => {
        text += c.toString();
      });
      await child.done;
      return JSON.parse(text.trim().split('\n').at(-1)!) as { cpuS: number; wallS: number }[];
    }),
  );
  return { runs: outputs.flat(), wallS: (performance.now() - started) / 1000 };
}

const loadBefore = loadavg();
const alone: Record<string, { cpuS: number[]; wallS: number[] }> = {
  on: { cpuS: [], wallS: [] },
  off: { cpuS: [], wallS: [] },
};
const together: Record<string, number[]> = { on: [], off: [] };
for (let round = 0; round < Number(values.rounds); round++) {
  for (const spinning of ['on', 'off'] as const) {
    const one = await children(spinning, 1);
    alone[spinning]!.cpuS.push(...one.runs.map((r) => r.cpuS));
    alone[spinning]!.wallS.push(...one.runs.map((r) => r.wallS));
    together[spinning]!.push((await children(spinning, 2)).wallS);
    process.stderr.write(`round ${round + 1}, spinning ${spinning}: done\n`);
  }
}
const summary = Object.fromEntries(
  (['on', 'off'] as const).map((s) => [
    s,
    {
      alone_cpu_s_per_video_s: round3(median(alone[s]!.cpuS) / SEGMENT_S),
      alone_wall_s_per_segment: round3(median(alone[s]!.wallS)),
      two_at_once_wall_s: together[s]!.map(round3),
      two_at_once_wall_s_median: round3(median(together[s]!)),
    },
  ]),
);
const result = {
  measured_at: new Date().toISOString(),
  load_average_before: loadBefore,
  load_average_after: loadavg(),
  settings: {
    panorama: '2880×392 (seed 7)',
    segment_s: SEGMENT_S,
    analysis_fps: 10,
    runs_per_process: runs,
    rounds: Number(values.rounds),
  },
  spinning: summary,
  ratio_off_on: {
    alone_cpu: round3(summary.off!.alone_cpu_s_per_video_s / summary.on!.alone_cpu_s_per_video_s),
    alone_wall: round3(summary.off!.alone_wall_s_per_segment / summary.on!.alone_wall_s_per_segment),
    two_at_once_wall: round3(summary.off!.two_at_once_wall_s_median / summary.on!.two_at_once_wall_s_median),
  },
};
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
await mkdir('bench/results', { recursive: true });
await writeFile('bench/results/detect-ort-spinning.json', `${JSON.stringify(result, null, 2)}\n`);
