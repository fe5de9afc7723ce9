/**
 * The detect stage handler on one segment of a synthetic match, for the detect benches
 * (first-pass.ts, ort-spinning.ts): the generator's own panorama of 3 cameras (seed 7, 8 s, cached
 * under `.work/`), cut to a segment (re-encoded, x264 veryfast), in a local artifact store.
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { detectEnvSchema, createStageHandler as detectHandler } from '../../core/src/workers/detect/handler.ts';
import { digestFile, LocalArtifactIo } from '../../core/src/workers/detect/index.ts';
import { type ArtifactRef, generateMatch, loadConfig, type StageTask, silentLogger } from '../../shared/src/index.ts';
import { cpuSeconds } from '../segments/cpu-time.ts';

const run = promisify(execFile);

/** One detect run: CPU seconds (this process + reaped ffmpeg children), wall seconds, what it planned. */
export interface DetectRun {
  cpuS: number;
  wallS: number;
  tiling: Record<string, unknown>;
  /** The person height the run measured (its stats), if it measured one. */
  personHeightPx: number | undefined;
}

/** A detect stage handler as a worker ships it (10 analysed fps, the default model) over a segment. */
export interface SegmentDetect {
  detect(params?: Record<string, unknown>): Promise<DetectRun>;
  close(): Promise<void>;
}

/** The generator's panorama of a 3-camera match with `cameraWidth`-px cameras (16:9), 8 s. */
async function panoramaOf(cameraWidth: number): Promise<string> {
  const dir = join('.work', `bench-synth-7-8s-${cameraWidth}`);
  const done = await stat(join(dir, 'manifest.json')).then(
    () => true,
    () => false,
  );
  if (!done) {
    const heightPx = Math.round((cameraWidth * 9) / 16 / 2) * 2;
    await generateMatch({ outDir: dir, seed: 7, durationS: 8, widthPx: cameraWidth, heightPx, panoramaVideo: true });
  }
  return join(dir, 'panorama.mp4');
}

/**
 * Opens the detect handler (its own variables from `env`, e.g. `DETECT_ORT_SPINNING`) over the first
 * `segmentS` seconds of the panorama of `cameraWidth`-px cameras.
 */
export async function openSegmentDetect(
  cameraWidth: number,
  segmentS: number,
  env: Record<string, string> = {},
): Promise<SegmentDetect> {
  const root = await mkdtemp(join(tmpdir(), 'pv-segment-detect-'));
  const store = join(root, 'store');
  const io = new LocalArtifactIo(store);
  const handler = await detectHandler(
    { env: { WORKER_WORK_DIR: join(root, 'work'), DETECT_ANALYSIS_FPS: '10', ...env } } as never,
    { io },
  );
  const segment = join(root, 'segment.mp4');
  const cut = ['-v', 'error', '-y', '-i', await panoramaOf(cameraWidth), '-t', String(segmentS), '-an'];
  await run('ffmpeg', [...cut, '-c:v', 'libx264', '-preset', 'veryfast', segment]);
  const key = `org/segment-${cameraWidth}/panorama.mp4`;
  await mkdir(join(store, key, '..'), { recursive: true });
  await copyFile(segment, join(store, key));
  const d = await digestFile(segment);
  const ref: ArtifactRef = {
    kind: 'panorama',
    storage_id: 'local',
    object_key: key,
    size_bytes: d.sizeBytes,
    sha256: d.sha256,
  };
  return {
    async detect(params = {}) {
      const task: StageTask = {
        type: 'stage.task',
        message_id: crypto.randomUUID(),
        job_id: 'segment-detect',
        organization_id: 'org',
        match_id: 'segment-detect',
        created_at: new Date().toISOString(),
        stage: 'detect',
        attempt: 1,
        model_version: 'default',
        inputs: [ref],
        params,
      };
      const cpu0 = cpuSeconds();
      const started = performance.now();
      const result = await handler.run({
        task,
        signal: new AbortController().signal,
        reportProgress: () => {},
        logger: silentLogger,
      });
      const wallS = (performance.now() - started) / 1000;
      const cpuS = cpuSeconds() - cpu0;
      const out = result.outputs.find((o) => o.kind === 'detections')!;
      const header = JSON.parse((await readFile(join(store, out.object_key), 'utf8')).split('\n')[0]!);
      return { cpuS, wallS, tiling: header.tiling, personHeightPx: result.stats?.person_height_px };
    },
    async close() {
      await handler.close?.();
      await rm(root, { recursive: true, force: true });
    },
  };
}

/**
 * Runs the detect handler of each variant (its own `DETECT_*` variables; the first is the baseline)
 * on the same segment for each camera width: all open in this process, the first variant's run
 * measures the person height, which every later run is given (as a match's later segments get it),
 * a warm-up each, then `runs` alternating rounds. One row per width and variant: CPU seconds per
 * run, CPU-s per second of video (median) and the ratio to the baseline in the same rounds.
 */
export async function compareSegmentDetect(
  variants: Record<string, Record<string, string>>,
  options: { cameraWidths: readonly number[]; segmentS: number; runs: number },
): Promise<Record<string, unknown>[]> {
  const { segmentS, runs } = options;
  const rows: Record<string, unknown>[] = [];
  for (const width of options.cameraWidths) {
    const open: Record<string, SegmentDetect> = {};
    try {
      for (const [name, env] of Object.entries(variants)) open[name] = await openSegmentDetect(width, segmentS, env);
      const first = await Object.values(open)[0]!.detect(); // measures the person height
      const params = { person_height_px: first.personHeightPx };
      const cpu: Record<string, number[]> = {};
      const plans: Record<string, unknown> = {};
      for (const [name, segment] of Object.entries(open)) {
        await segment.detect(params); // warm-up
        cpu[name] = [];
      }
      for (let r = 0; r < runs; r++)
        for (const [name, segment] of Object.entries(open)) {
          const result = await segment.detect(params);
          cpu[name]!.push(result.cpuS);
          plans[name] = result.tiling;
        }
      const names = Object.keys(open);
      const base = median(cpu[names[0]!]!);
      for (const name of names) {
        const row = {
          camera_width: width,
          variant: name,
          tiling: plans[name],
          person_height_px: first.personHeightPx,
          segment_s: segmentS,
          cpu_s: cpu[name]!.map(round3),
          cpu_s_per_video_s: round3(median(cpu[name]!) / segmentS),
          ratio: round3(median(cpu[name]!) / base),
        };
        rows.push(row);
        process.stdout.write(`${JSON.stringify(row)}\n`);
      }
    } finally {
      for (const segment of Object.values(open)) await segment.close();
    }
  }
  return rows;
}

/**
 * The segment benches' flags: `--camera-width 1280,640` (the demo's and the cluster's panoramas),
 * `--segment-s 4`, `--runs 3`, and a bench's own string flags (`extra`: name → default), returned in `extra`.
 */
export function segmentBenchArgs<K extends string = never>(
  extra: Record<K, string> = {} as Record<K, string>,
): { cameraWidths: number[]; segmentS: number; runs: number; extra: Record<K, string> } {
  const own = Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, { type: 'string', default: v }]));
  const { values } = parseArgs({
    options: {
      'camera-width': { type: 'string', default: '1280,640' },
      'segment-s': { type: 'string', default: '4' },
      runs: { type: 'string', default: '3' },
      ...(own as Record<string, { type: 'string'; default: string }>),
    },
  });
  const v = values as Record<string, string>;
  return {
    cameraWidths: v['camera-width']!.split(',').map(Number),
    segmentS: Number(v['segment-s']),
    runs: Number(v.runs),
    extra: Object.fromEntries(Object.keys(extra).map((k) => [k, v[k]!])) as Record<K, string>,
  };
}

/**
 * Writes a segment bench's result to `bench/results/<file>`: when, the load average before and
 * after, the settings (10 analysed fps and the default model added) and the rows.
 */
export async function writeSegmentBench(
  file: string,
  settings: Record<string, unknown>,
  rows: readonly Record<string, unknown>[],
  loadBefore: readonly number[],
): Promise<void> {
  await mkdir('bench/results', { recursive: true });
  const result = {
    measured_at: new Date().toISOString(),
    load_average_before: loadBefore,
    load_average_after: loadavg(),
    settings: {
      analysis_fps: 10,
      ...settings,
      model: `default (${loadConfig(detectEnvSchema, {}).DETECT_MODEL_VERSION})`,
    },
    rows,
  };
  await writeFile(join('bench/results', file), `${JSON.stringify(result, null, 2)}\n`);
}

/** The median of a non-empty list. */
export const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
export const round3 = (x: number): number => Math.round(x * 1000) / 1000;
