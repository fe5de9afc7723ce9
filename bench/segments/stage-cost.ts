/**
 * CPU cost of each stage per second of video at the demo's settings (issue #18 item 4), measured by
 * running the stage handlers themselves (defaults of their environment, local artifact store) on
 * the synthetic demo clip (seed 7, 20 s, 2880×392 panorama, venue calibration): detect's cost from
 * `track-continuity.ts` (10 fps, default model, `auto` tiling; its JSON), then track → vcam (render +
 * overlay) → analyze → encode (HLS ladder), encode once per x264 preset with SSIM / PSNR of its top
 * rung against the vcam video it encoded. CPU = this process's threads + its reaped children (ffmpeg),
 * `/proc/self/stat`; it does not depend on the host's load the way wall time does.
 *
 *   node bench/segments/track-continuity.ts      # first: caches the detections, measures detect
 *   node bench/segments/stage-cost.ts [--presets veryfast,superfast]
 *
 * Writes bench/results/segments-stage-cost.json.
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { createStageHandler as analyzeHandler } from '../../core/src/workers/analyze/handler.ts';
import { digestFile, LocalArtifactIo } from '../../core/src/workers/detect/index.ts';
import { createStageHandler as encodeHandler } from '../../core/src/workers/encode/handler.ts';
import type { StageHandler } from '../../core/src/workers/runtime/stage-handler.ts';
import { createStageHandler as trackHandler } from '../../core/src/workers/track/handler.ts';
import { createStageHandler as vcamHandler } from '../../core/src/workers/vcam/handler.ts';
import { type ArtifactRef, type Stage, type StageTask, silentLogger } from '../../shared/src/index.ts';
import { syntheticClip } from '../workers/synthetic-clip.ts';
import { cpuSeconds } from './cpu-time.ts';

const { values } = parseArgs({ options: { presets: { type: 'string', default: 'veryfast,superfast' } } });
const run = promisify(execFile);
const loadBefore = loadavg();
const clip = await syntheticClip(7, 20);
const durationS = clip.frameCount / clip.fps;
const continuity = JSON.parse(await readFile('bench/results/segments-track-continuity.json', 'utf8'));
const root = await mkdtemp(join(tmpdir(), 'pv-stage-cost-'));
const store = join(root, 'store');
const io = new LocalArtifactIo(store);

async function put(path: string, key: string, kind: string): Promise<ArtifactRef> {
  await mkdir(join(store, key, '..'), { recursive: true });
  await copyFile(path, join(store, key));
  const d = await digestFile(path);
  return { kind, storage_id: 'local', object_key: key, size_bytes: d.sizeBytes, sha256: d.sha256 };
}

function task(stage: Stage, inputs: ArtifactRef[], version = 'default'): StageTask {
  return {
    type: 'stage.task',
    message_id: crypto.randomUUID(),
    job_id: 'bench',
    organization_id: 'org',
    match_id: 'match',
    created_at: new Date().toISOString(),
    stage,
    attempt: 1,
    model_version: version,
    inputs,
    params: {},
  };
}

async function measure(handler: StageHandler, t: StageTask) {
  const cpu0 = cpuSeconds();
  const wall0 = performance.now();
  const result = await handler.run({
    task: t,
    signal: new AbortController().signal,
    reportProgress: () => {},
    logger: silentLogger,
  });
  const cpu = cpuSeconds() - cpu0;
  return {
    result,
    cost: {
      cpuSeconds: Math.round(cpu * 100) / 100,
      wallSeconds: Math.round((performance.now() - wall0) / 10) / 100,
      cpuSecondsPerVideoSecond: Math.round((cpu / durationS) * 1000) / 1000,
    },
  };
}

try {
  const env = { WORKER_WORK_DIR: join(root, 'work') };
  const context = { env } as never;
  const panorama = await put(clip.panoramaPath, 'org/match/panorama.mp4', 'panorama');
  const venue = await put(join(clip.dir, 'venue.json'), 'org/match/venue.json', 'calibration');
  const detections = await put(join(clip.dir, 'detections-10fps-auto.jsonl'), 'org/match/detect/d.jsonl', 'detections');
  const track = await measure(trackHandler(context, { io }), task('track', [detections, venue, panorama]));
  const tracks = track.result.outputs;
  const vcam = await measure(vcamHandler(context, { io }), task('vcam', [...tracks, panorama, venue, detections]));
  const analyze = await measure(analyzeHandler(context, { io }), task('analyze', [...tracks, panorama, venue]));
  const vcamRef = vcam.result.outputs.find((o) => o.kind === 'vcam')!;
  const encodes = [];
  for (const preset of values.presets!.split(',')) {
    const e = await measure(
      encodeHandler({ env: { ...env, ENCODE_X264_PRESET: preset } } as never, { io }),
      task('encode', [vcamRef], preset),
    );
    const playlist = e.result.outputs.find((o) => o.kind === 'hls-playlist')!; // the top rung comes first
    const rung = join(store, playlist.object_key);
    const height = Number(/\/(\d+)p\//.exec(playlist.object_key)?.[1]);
    const compare = async (filter: 'ssim' | 'psnr') => {
      const { stderr } = await run('ffmpeg', [
        '-v',
        'info',
        '-nostats',
        '-i',
        rung,
        '-i',
        join(store, vcamRef.object_key),
        '-lavfi',
        `[1:v]scale=-2:${height}:flags=bicubic[ref];[0:v][ref]${filter}`,
        '-f',
        'null',
        '-',
      ]);
      const m = filter === 'ssim' ? / All:([\d.]+)/.exec(stderr) : / average:([\d.inf]+)/.exec(stderr);
      return m ? Number(m[1]) : null;
    };
    encodes.push({
      preset,
      rung: playlist.object_key.split('/').at(-2),
      ...e.cost,
      ssim: await compare('ssim'),
      psnrDb: await compare('psnr'),
    });
  }
  const detect = continuity.detect?.cpuSecondsPerVideoSecond ?? null;
  const perStage = {
    detect,
    track: track.cost.cpuSecondsPerVideoSecond,
    vcam: vcam.cost.cpuSecondsPerVideoSecond,
    analyze: analyze.cost.cpuSecondsPerVideoSecond,
    encode: Object.fromEntries(encodes.map((e) => [e.preset, e.cpuSecondsPerVideoSecond])),
  };
  const totalFor = (preset: string) =>
    (detect ?? 0) + perStage.track + perStage.vcam + perStage.analyze + (perStage.encode[preset] ?? 0);
  const result = {
    name: 'segments-stage-cost',
    command: `node bench/segments/stage-cost.ts --presets ${values.presets}`,
    host: {
      cpus: cpus().length,
      model: cpus()[0]?.model,
      loadAverage1m: { before: loadBefore[0], after: loadavg()[0] },
    },
    clip: { durationS, width: clip.width, height: clip.height, fps: clip.fps, analysisFps: 10 },
    detect: continuity.detect,
    track: track.cost,
    vcam: vcam.cost,
    analyze: analyze.cost,
    encode: encodes,
    cpuSecondsPerVideoSecond: perStage,
    total: Object.fromEntries(
      encodes.map((e) => {
        const total = totalFor(e.preset);
        return [
          e.preset,
          {
            cpuSecondsPerVideoSecond: Math.round(total * 100) / 100,
            detectShare: detect ? Math.round((detect / total) * 1000) / 1000 : null,
            realTimeFactorOn2Cores: Math.round((total / 2) * 100) / 100,
          },
        ];
      }),
    ),
  };
  await writeFile('bench/results/segments-stage-cost.json', `${JSON.stringify(result, null, 2)}\n`);
  console.log(JSON.stringify(result, null, 2));
} finally {
  await rm(root, { recursive: true, force: true });
}
