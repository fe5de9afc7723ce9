/**
 * CPU cost of every analysis stage as a match job runs it — per segment, with the carries — against
 * the same stages on the whole clip in one job (the baseline), in one run (issue #18 item 4: the
 * per-segment overheads a whole-clip figure hides).
 *
 * The stage handlers themselves, configured as a worker ships them (their variables' defaults; the
 * demo's analysed rate unless `--analysis-fps` says otherwise), on the synthetic demo clip (seed 7,
 * 20 s, 2880×392 panorama, venue calibration), local artifact store. Segments are cut as the demo's
 * edge cuts them (`segmentPanorama`: one re-encode, a keyframe at each cut); each stage's task gets
 * what the orchestrator passes (`match-dispatch.ts`): the segment's panorama, the venue, the
 * segment's upstream outputs and the stage's carry from the previous segment. The whole-clip
 * baseline runs on the same re-encoded clip. CPU = this process's threads + its reaped children
 * (ffmpeg), `/proc/self/stat`, which the host's load does not change the way it changes wall time.
 * `analyze (decoded colours)`: the analyze stage again on the same tracks without the header's
 * `torsoColour` (as tracks from detections files before 2026-11-29: the panorama decoded for the
 * jersey colours), its own carries — the baseline of the stored colours, not counted in the total.
 *
 *   node bench/segments/segment-cost.ts [--segment-s 5,4] [--analysis-fps 10] [--precision auto|fp32|int8]
 *
 * `--precision`: the detector's (`DETECT_PRECISION`; auto, shipped, runs the int8 rendition on the CPU).
 *
 * Writes bench/results/segments-segment-cost.json.
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { createStageHandler as analyzeHandler } from '../../core/src/workers/analyze/handler.ts';
import { createStageHandler as detectHandler } from '../../core/src/workers/detect/handler.ts';
import { digestFile, LocalArtifactIo } from '../../core/src/workers/detect/index.ts';
import { createStageHandler as encodeHandler } from '../../core/src/workers/encode/handler.ts';
import type { StageHandler } from '../../core/src/workers/runtime/stage-handler.ts';
import { createStageHandler as trackHandler } from '../../core/src/workers/track/handler.ts';
import { createStageHandler as vcamHandler } from '../../core/src/workers/vcam/handler.ts';
import { segmentPanorama } from '../../deploy/src/demo/segment-panorama.ts';
import {
  type ArtifactRef,
  carryKind,
  type SegmentRef,
  type Stage,
  type StageTask,
  silentLogger,
} from '../../shared/src/index.ts';
import { syntheticClip } from '../workers/synthetic-clip.ts';
import { cpuSeconds } from './cpu-time.ts';

const { values } = parseArgs({
  options: {
    'segment-s': { type: 'string', default: '5,4' },
    'analysis-fps': { type: 'string', default: '10' },
    precision: { type: 'string', default: 'auto' },
  },
});
const STAGES = ['detect', 'track', 'vcam', 'analyze', 'encode'] as const satisfies readonly Stage[];
const DECODED = 'analyze (decoded colours)';
const run = promisify(execFile);
const loadBefore = loadavg();
const clip = await syntheticClip(7, 20);
const root = await mkdtemp(join(tmpdir(), 'pv-segment-cost-'));
const store = join(root, 'store');
const io = new LocalArtifactIo(store);
const env = {
  WORKER_WORK_DIR: join(root, 'work'),
  DETECT_ANALYSIS_FPS: values['analysis-fps']!,
  DETECT_PRECISION: values.precision!,
};
const context = { env } as never;
const handlers: Record<(typeof STAGES)[number], StageHandler> = {
  detect: await detectHandler(context, { io }),
  track: trackHandler(context, { io }),
  vcam: vcamHandler(context, { io }),
  analyze: analyzeHandler(context, { io }),
  encode: encodeHandler(context, { io }),
};

async function put(path: string, key: string, kind: string): Promise<ArtifactRef> {
  await mkdir(join(store, key, '..'), { recursive: true });
  await copyFile(path, join(store, key));
  const d = await digestFile(path);
  return { kind, storage_id: 'local', object_key: key, size_bytes: d.sizeBytes, sha256: d.sha256 };
}

function task(
  stage: Stage,
  matchId: string,
  inputs: ArtifactRef[],
  segment?: SegmentRef,
  modelVersion = 'default',
): StageTask {
  return {
    type: 'stage.task',
    message_id: crypto.randomUUID(),
    job_id: matchId,
    organization_id: 'org',
    match_id: matchId,
    created_at: new Date().toISOString(),
    stage,
    attempt: 1,
    model_version: modelVersion,
    inputs,
    params: {},
    ...(segment ? { segment } : {}),
  };
}

/** Runs one stage task; `used` = CPU seconds of this process and its reaped children meanwhile. */
async function timed(handler: StageHandler, stageTask: StageTask) {
  const cpu0 = cpuSeconds();
  const result = await handler.run({
    task: stageTask,
    signal: new AbortController().signal,
    reportProgress: () => {},
    logger: silentLogger,
  });
  return { result, used: cpuSeconds() - cpu0 };
}

async function durationOf(path: string): Promise<number> {
  const { stdout } = await run('ffprobe', ['-v', 'error', '-show_entries', 'format=duration', '-of', 'csv=p=0', path]);
  return Number(stdout.trim());
}

/**
 * Runs the five stages over `parts` (one part = a whole-file job) in match order, as the
 * orchestrator would with one worker; returns CPU seconds per stage, summed over the parts.
 */
async function runMatch(name: string, parts: string[], segmentS: number | null, venue: ArtifactRef) {
  const cpu: Record<string, number> = Object.fromEntries([...STAGES, DECODED].map((s) => [s, 0]));
  const perSegment: Record<string, number>[] = [];
  const carries = new Map<string, ArtifactRef>();
  for (const [k, part] of parts.entries()) {
    const segment: SegmentRef | undefined =
      segmentS === null
        ? undefined
        : { index: k, start_s: k * segmentS, duration_s: segmentS, final: k === parts.length - 1 };
    const panorama = await put(part, `org/${name}/segment-${k}/panorama.mp4`, 'panorama');
    const upstream: ArtifactRef[] = [];
    const row: Record<string, number> = {};
    for (const stage of STAGES) {
      const carry = carries.get(stage);
      const inputs = [panorama, venue, ...upstream, ...(carry ? [carry] : [])];
      const { result, used } = await timed(handlers[stage], task(stage, name, inputs, segment));
      cpu[stage]! += used;
      row[stage] = Math.round(used * 100) / 100;
      const next = result.outputs.find((o) => o.kind === carryKind(stage));
      if (next) carries.set(stage, next);
      upstream.push(...result.outputs.filter((o) => !o.kind.endsWith('-carry')));
      if (stage === 'analyze') {
        // The baseline: the same tracks without the stored colours' header word, decoded.
        const tracksRef = upstream.find((o) => o.kind === 'tracks')!;
        const file = JSON.parse(await readFile(join(store, tracksRef.object_key), 'utf8'));
        delete file.detections.torsoColour;
        const stripped = join(root, `${name}-${k}-tracks-decoded.json`);
        await writeFile(stripped, JSON.stringify(file));
        const tracksDecoded = await put(stripped, `org/${name}/segment-${k}/decoded/tracks.json`, 'tracks');
        const carried = carries.get(DECODED);
        const decodedInputs = [panorama, venue, tracksDecoded, ...(carried ? [carried] : [])];
        const { result: again, used: decodedCpu } = await timed(
          handlers.analyze,
          task('analyze', name, decodedInputs, segment, 'decoded-colours'),
        );
        cpu[DECODED]! += decodedCpu;
        row[DECODED] = Math.round(decodedCpu * 100) / 100;
        const decodedCarry = again.outputs.find((o) => o.kind === carryKind('analyze'));
        if (decodedCarry) carries.set(DECODED, decodedCarry);
      }
    }
    perSegment.push(row);
    process.stderr.write(`${name}: part ${k + 1}/${parts.length} ${JSON.stringify(row)}\n`);
  }
  return { cpu, perSegment };
}

try {
  const venue = await put(join(clip.dir, 'venue.json'), 'org/venue.json', 'calibration');
  const whole = await segmentPanorama(clip.panoramaPath, 3600, join(root, 'whole'));
  const videoS = await durationOf(whole[0]!.path);
  const perVideoSecond = (cpu: Record<string, number>) => {
    const stages = Object.fromEntries(
      [...STAGES, DECODED].map((s) => [s, Math.round((cpu[s]! / videoS) * 1000) / 1000]),
    );
    const total = STAGES.reduce((sum, s) => sum + cpu[s]!, 0) / videoS;
    return {
      stages,
      total: Math.round(total * 1000) / 1000,
      realTimeFactorOn2Cores: Math.round((total / 2) * 100) / 100,
    };
  };
  const baseline = await runMatch('whole', [whole[0]!.path], null, venue);
  const runs = [];
  for (const segmentS of values['segment-s']!.split(',').map(Number)) {
    const segments = await segmentPanorama(clip.panoramaPath, segmentS, join(root, `seg-${segmentS}`));
    const measured = await runMatch(
      `seg${segmentS}`,
      segments.map((s) => s.path),
      segmentS,
      venue,
    );
    runs.push({
      segmentS,
      segments: segments.length,
      cpuSecondsPerVideoSecond: perVideoSecond(measured.cpu),
      perSegmentCpuSeconds: measured.perSegment,
    });
  }
  const result = {
    name: 'segments-segment-cost',
    command: `node bench/segments/segment-cost.ts --segment-s ${values['segment-s']} --analysis-fps ${values['analysis-fps']}`,
    host: {
      cpus: cpus().length,
      model: cpus()[0]?.model,
      loadAverage1m: { before: loadBefore[0], after: loadavg()[0] },
    },
    clip: { durationS: videoS, width: clip.width, height: clip.height, fps: clip.fps },
    settings: {
      analysisFps: Number(values['analysis-fps']),
      precision: values.precision,
      stages: 'handler defaults (as a worker ships them)',
    },
    wholeClip: { cpuSecondsPerVideoSecond: perVideoSecond(baseline.cpu) },
    segmented: runs,
  };
  await writeFile('bench/results/segments-segment-cost.json', `${JSON.stringify(result, null, 2)}\n`);
  console.log(
    JSON.stringify(
      { wholeClip: result.wholeClip, segmented: runs.map(({ perSegmentCpuSeconds, ...r }) => r) },
      null,
      2,
    ),
  );
} finally {
  await Promise.all(Object.values(handlers).map((h) => h.close?.()));
  await rm(root, { recursive: true, force: true });
}
