/**
 * What detect's first pass costs a match segment, and what handing the match's measured person
 * height to later segments saves (issue #18 item 4; `matchPersonHeight` in
 * core/src/orchestrator/state/match-dispatch.ts).
 *
 * The detect stage handler as a worker ships it (10 analysed fps, the default model, auto tiling), on
 * one segment of a synthetic match's panorama (seed 7, the generator's own panorama of 3 cameras at
 * `--camera-width`: 1280 = the demo's 2880×392, 640 = the cluster bench's 1440×196), cut to
 * `--segment-s` seconds (re-encoded, x264 veryfast). Alternating in one process, `--runs` times each:
 * `measured` (no hint: the first pass decodes 4 frames by seeking and detects them at the native scale,
 * then the main pass) and `given` (task `params.person_height_px` = what the measured run found: the
 * main pass only). CPU = this process's threads + its reaped ffmpeg children (`/proc/self/stat`).
 *
 *   node bench/detect/first-pass.ts [--camera-width 1280,640] [--segment-s 4] [--runs 3]
 *
 * Writes bench/results/detect-first-pass.json.
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { createStageHandler as detectHandler } from '../../core/src/workers/detect/handler.ts';
import { digestFile, LocalArtifactIo } from '../../core/src/workers/detect/index.ts';
import { type ArtifactRef, generateMatch, type StageTask, silentLogger } from '../../shared/src/index.ts';
import { cpuSeconds } from '../segments/cpu-time.ts';

const { values } = parseArgs({
  options: {
    'camera-width': { type: 'string', default: '1280,640' },
    'segment-s': { type: 'string', default: '4' },
    runs: { type: 'string', default: '3' },
  },
});
const run = promisify(execFile);
const segmentS = Number(values['segment-s']);
const runs = Number(values.runs);
const loadBefore = loadavg();
const root = await mkdtemp(join(tmpdir(), 'pv-first-pass-'));
const store = join(root, 'store');
const io = new LocalArtifactIo(store);
const handler = await detectHandler(
  { env: { WORKER_WORK_DIR: join(root, 'work'), DETECT_ANALYSIS_FPS: '10' } } as never,
  {
    io,
  },
);

/** The generator's panorama of a 3-camera match at `width` px cameras, 8 s (cached under .work/). */
async function panoramaOf(width: number): Promise<string> {
  const dir = join('.work', `bench-synth-7-8s-${width}`);
  const done = await stat(join(dir, 'manifest.json')).then(
    () => true,
    () => false,
  );
  if (!done) {
    const heightPx = Math.round((width * 9) / 16 / 2) * 2;
    await generateMatch({ outDir: dir, seed: 7, durationS: 8, widthPx: width, heightPx, panoramaVideo: true });
  }
  return join(dir, 'panorama.mp4');
}

async function detectOnce(ref: ArtifactRef, params: Record<string, unknown>) {
  const task: StageTask = {
    type: 'stage.task',
    message_id: crypto.randomUUID(),
    job_id: 'first-pass',
    organization_id: 'org',
    match_id: 'first-pass',
    created_at: new Date().toISOString(),
    stage: 'detect',
    attempt: 1,
    model_version: 'default',
    inputs: [ref],
    params,
  };
  const cpu0 = cpuSeconds();
  const result = await handler.run({
    task,
    signal: new AbortController().signal,
    reportProgress: () => {},
    logger: silentLogger,
  });
  const cpuS = cpuSeconds() - cpu0;
  const out = result.outputs.find((o) => o.kind === 'detections')!;
  const header = JSON.parse((await readFile(join(store, out.object_key), 'utf8')).split('\n')[0]!);
  return { cpuS, tiling: header.tiling, personHeightPx: result.stats?.person_height_px };
}

const rows: Record<string, unknown>[] = [];
try {
  for (const width of values['camera-width']!.split(',').map(Number)) {
    const segment = join(root, `segment-${width}.mp4`);
    const args = ['-v', 'error', '-y', '-i', await panoramaOf(width), '-t', String(segmentS)];
    await run('ffmpeg', [...args, '-c:v', 'libx264', '-preset', 'veryfast', '-an', segment]);
    const key = `org/first-pass-${width}/panorama.mp4`;
    await mkdir(join(store, key, '..'), { recursive: true });
    await copyFile(segment, join(store, key));
    const d = await digestFile(segment);
    const ref = { kind: 'panorama', storage_id: 'local', object_key: key, size_bytes: d.sizeBytes, sha256: d.sha256 };
    await detectOnce(ref, {}); // warm-up: the session's first inferences, ffmpeg in the page cache
    const measured: number[] = [];
    const given: number[] = [];
    let tiling: unknown;
    let personHeightPx: number | undefined;
    for (let r = 0; r < runs; r++) {
      const m = await detectOnce(ref, {});
      measured.push(m.cpuS);
      personHeightPx = m.personHeightPx;
      tiling = m.tiling;
      const g = await detectOnce(ref, { person_height_px: personHeightPx });
      given.push(g.cpuS);
      if (JSON.stringify({ ...g.tiling, source: 'x' }) !== JSON.stringify({ ...m.tiling, source: 'x' })) {
        throw new Error(
          `the given height planned other tiles: ${JSON.stringify(g.tiling)} vs ${JSON.stringify(m.tiling)}`,
        );
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
    const row = {
      camera_width: width,
      tiling,
      person_height_px: personHeightPx,
      segment_s: segmentS,
      measured_cpu_s: measured.map((x) => Math.round(x * 100) / 100),
      given_cpu_s: given.map((x) => Math.round(x * 100) / 100),
      measured_cpu_s_per_video_s: Math.round((median(measured) / segmentS) * 1000) / 1000,
      given_cpu_s_per_video_s: Math.round((median(given) / segmentS) * 1000) / 1000,
      ratio: Math.round((median(given) / median(measured)) * 1000) / 1000,
    };
    rows.push(row);
    process.stdout.write(`${JSON.stringify(row)}\n`);
  }
} finally {
  await handler.close?.();
  await rm(root, { recursive: true, force: true });
}
const result = {
  measured_at: new Date().toISOString(),
  load_average_before: loadBefore,
  load_average_after: loadavg(),
  settings: { analysis_fps: 10, segment_s: segmentS, runs, model: 'default (player-detector-2.2)' },
  rows,
};
await mkdir('bench/results', { recursive: true });
await writeFile('bench/results/detect-first-pass.json', `${JSON.stringify(result, null, 2)}\n`);
