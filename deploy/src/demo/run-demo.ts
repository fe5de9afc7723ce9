import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getJob, type JobView, type StageHandler } from '@polyvision/core';
import { abortableSleep, type Logger, PolyvisionError, silentLogger } from '@polyvision/shared';
import { checkCameraFile } from './check-input.ts';
import { type CollectedOutputs, collectOutputs, type StoredOutput } from './collect.ts';
import { nothingDetectedHint } from './detect-hint.ts';
import { type DetectorSummary, detectorSummaryOf, detectWarningsOf } from './detector-summary.ts';
import { type EdgePanorama, stitchPanorama, type UploadReport, uploadCalibration, uploadPanorama } from './edge.ts';
import { openDemoInfra, type ServiceUrls } from './infra.ts';
import type { DemoOptions } from './options.ts';
import { writeReport } from './report.ts';
import type { ReportCheck } from './report-checks.ts';
import { ensureSample } from './sample.ts';
import { segmentPanorama } from './segment-panorama.ts';
import { type PlacementRecord, startDemoStack } from './stack.ts';
import { fillStorageElement, startDemoStorage } from './storage.ts';

/** The steps the live view shows, in order. */
export const DEMO_STEPS = [
  'sample',
  'start',
  'stitch',
  'upload',
  'detect',
  'track',
  'vcam',
  'analyze',
  'encode',
  'collect',
] as const;
export type DemoStep = (typeof DEMO_STEPS)[number];

/** What the live view is told while the demo runs. */
export interface DemoObserver {
  step?(step: DemoStep, state: 'running' | 'done' | 'failed', progress: number, note?: string): void;
  info?(line: string): void;
}

/** Timing of one step, ms since the demo started. */
export interface StepTiming {
  step: DemoStep;
  startMs: number;
  endMs: number;
  /** Wall time of the step, ms. */
  durationMs: number;
}

/** Everything the summary, the report and the tests need. */
export interface DemoResult {
  matchId: string;
  organizationId: string;
  outDir: string;
  services: { bus: string; database: string; redis: string };
  /** This run's names on the services (unique per run on real services; removed at the end). */
  names: { topicPrefix: string; schema: string; redisKeyPrefix: string };
  placements: PlacementRecord[];
  /**
   * The venue calibration uploaded with the match (`venue.json`, before the
   * panorama): its spool state and SE; `uploadState` null for a one-camera rig without one.
   */
  calibration: { uploadState: string | null; placedOn: string | null };
  /** What the edge's uploader went through (a final 507 would be counted here). */
  upload: UploadReport;
  /** The segments the edge cut the panorama into and uploaded in order (the match job's inputs). */
  segments: Array<{
    index: number;
    durationS: number;
    frameCount: number;
    keyframeAtStart: boolean;
    sizeBytes: number;
  }>;
  /** Their nominal length (`--segment-s`, ingest's `INGEST_SEGMENT_DURATION_S`), seconds. */
  segmentS: number;
  /** SE that holds the first panorama segment, with its datacenter. */
  panoramaPlacement: { storageId: string; location: string; sizeBytes: number } | null;
  job: JobView;
  /** How many times each stage's handler ran. */
  executions: Record<string, number>;
  timings: StepTiming[];
  leaders: { capacityMonitor: string | null; orchestratorPartitions: Record<string, number[]>; workers: string[] };
  opsUrl: string;
  panorama: EdgePanorama;
  outputs: CollectedOutputs;
  /** Where each stage output was placed (SE per file). */
  stored: StoredOutput[];
  analysisFps: number | null;
  /** The detector's model, tile grid and warnings (from the detections header); null without detections. */
  detector: DetectorSummary | null;
  /**
   * Units of the analytics (`summary.json` `unit`): `m` (pitch metres) when the
   * venue calibration travelled with the match, `px` (image pixels) without one; null without analytics.
   */
  analyticsUnit: 'm' | 'px' | null;
  /** `WxH` of the virtual-camera video (from camera-path.json). */
  vcamSize: string | null;
  /** Why the job did not complete (the report shows it); null when it did. */
  failure: { stage: string | null; reason: string } | null;
  /** The report's "check this" list (report-checks.ts), set when the report is written. */
  checks?: ReportCheck[];
  totalMs: number;
}

/**
 * Runs the main job end to end in this process (DESIGN.md "The main job"):
 * sample → storage elements, ingest ×2, orchestrators ×2, worker → the edge
 * stitches and uploads → detect, track, vcam ∥ analyze, encode → `out/<match_id>/`
 * with `report.html`. Real services where `urls` say so, embedded drivers otherwise.
 *
 * @throws PolyvisionError `demo_job_failed` (with the stage's error) when the job fails,
 *   `demo_timeout` when it does not finish within `options.timeoutMs` (after writing
 *   `out/<match_id>/` with what exists and which stage was still running); input errors of the edge.
 */
export async function runDemo(
  options: DemoOptions,
  urls: ServiceUrls,
  observer: DemoObserver = {},
  run: {
    signal?: AbortSignal;
    logger?: Logger;
    /** Called with the result while every service still runs (`--keep`: look at the ops page); cleanup waits for it. */
    hold?: (result: DemoResult) => Promise<void>;
  } = {},
): Promise<DemoResult> {
  const logger = run.logger ?? silentLogger;
  const signal = run.signal;
  const t0 = performance.now();
  const timings: StepTiming[] = [];
  let current: { step: DemoStep; startMs: number } | null = null;
  const begin = (step: DemoStep, note?: string) => {
    current = { step, startMs: performance.now() - t0 };
    observer.step?.(step, 'running', 0, note);
  };
  const end = (note?: string) => {
    if (!current) return;
    const endMs = performance.now() - t0;
    timings.push({ step: current.step, startMs: current.startMs, endMs, durationMs: endMs - current.startMs });
    observer.step?.(current.step, 'done', 1, note);
    current = null;
  };

  const matchId = options.matchId ?? `match-${new Date().toISOString().slice(0, 10)}-${randomBytes(3).toString('hex')}`;
  const organizationId = 'demo-org';
  const workRoot = await mkdtemp(join(tmpdir(), 'polyvision-demo-'));
  const cleanups: Array<() => Promise<void>> = [async () => rm(workRoot, { recursive: true, force: true })];
  try {
    // 1. The footage: the user's cameras, or the cached synthetic match.
    begin('sample');
    let cameraPaths = options.cameras;
    let calibrationPath = options.calibration;
    if (cameraPaths.length === 0) {
      const sample = await ensureSample(options.sample, {
        ...(signal ? { signal } : {}),
        onProgress: (done, total) =>
          observer.step?.('sample', 'running', done / total, 'rendering the synthetic match'),
      });
      cameraPaths = sample.cameraPaths;
      calibrationPath = sample.calibrationPath;
      end(sample.generated ? `generated ${sample.dir}` : `cached ${sample.dir}`);
    } else {
      // A camera file that is not a whole video fails here, naming it, before anything is started.
      for (const path of cameraPaths) await checkCameraFile(path, signal);
      end(`${cameraPaths.length} camera file(s)`);
    }

    // 2. The core site.
    begin('start');
    const infra = await openDemoInfra(urls);
    cleanups.push(() => infra.close());
    const storage = await startDemoStorage(join(workRoot, 'se'), options.storageCapacityBytes);
    cleanups.push(() => storage.close());
    const executions: Record<string, number> = {};
    const stack = await startDemoStack({
      infra,
      storage,
      stageEnv: options.stageEnv,
      organizationId,
      logger,
      segmentDurationS: options.segmentS,
      wrapHandler: (handler: StageHandler): StageHandler => ({
        ...handler,
        run: (context) => {
          executions[handler.stage] = (executions[handler.stage] ?? 0) + 1;
          return handler.run(context);
        },
      }),
    });
    cleanups.push(() => stack.close());
    const opsUrl = `${stack.ingest[0]?.url}/ops`;
    observer.info?.(`ops page: ${opsUrl}  (operator token: ${stack.opsToken})`);
    // The capacity monitor's first poll fills the cache; wait for it.
    await waitUntil(
      async () => {
        const statuses = await Promise.all(stack.ingest.map((i) => i.monitor.status().catch(() => null)));
        return statuses.some((s) => s && s.writable_storage_elements === storage.elements.length);
      },
      30_000,
      'the capacity monitor did not poll every storage element',
      signal,
    );
    end(
      `${storage.elements.length} SEs, ${stack.ingest.length} ingest, ${stack.orchestrators.length} orchestrators, 1 worker`,
    );

    // 3. The edge stitches the cameras into a panorama.
    begin('stitch');
    const edgeDir = join(workRoot, 'edge');
    await mkdir(edgeDir, { recursive: true });
    const panorama = await stitchPanorama(
      { cameraPaths, calibrationPath, pitchPointsPath: options.pitchPoints },
      edgeDir,
      signal,
    );
    const selfCal = panorama.selfCalibration?.venue.quality;
    const pitch = panorama.pitchRegistration;
    // The edge records a match as fixed-length segments: cut the panorama at keyframes every --segment-s.
    const segments = await segmentPanorama(panorama.path, options.segmentS, join(edgeDir, 'segments'), signal);
    end(
      `${
        panorama.stitched
          ? `${panorama.widthPx}x${panorama.heightPx}${selfCal ? `, self-calibrated from the footage in ${((selfCal.calibration_ms ?? 0) / 1000).toFixed(0)} s (seam ${selfCal.seam_error_mean_px?.toFixed(2)} px mean)` : ''}${pitch ? `, pitch registered from ${pitch.points} points (RMS ${pitch.rmsErrorM.toFixed(2)} m)` : ''}`
          : 'one-camera rig: no stitching'
      }; ${segments.length} segments of ${options.segmentS} s`,
    );

    // 4. The edge uploads the venue calibration (so the job gets its pitch frame), a neighbour
    // fills the nearly full SE after the monitor's poll, then the edge uploads the panorama.
    begin('upload');
    const ingestUrl = (stack.ingest[1] ?? stack.ingest[0])?.url as string;
    const calibrationUpload = panorama.venue
      ? await uploadCalibration({
          venue: panorama.venue,
          ingestUrl,
          token: stack.edgeToken,
          organizationId,
          matchId,
          spoolDir: join(edgeDir, 'spool'),
          ...(signal ? { signal } : {}),
        })
      : null;
    // The calibration's own placement is kept apart: `placements` are the panorama's.
    const calibrationPlacements = stack.placements.splice(0);
    const nearlyFull = storage.elements.find((e) => e.nearlyFull);
    if (nearlyFull) {
      const smallest = Math.min(...(await Promise.all(segments.map(async (s) => (await stat(s.path)).size))));
      const booked = await fillStorageElement(nearlyFull, storage.token, Math.floor(smallest / 2));
      observer.info?.(
        `${nearlyFull.storageId} (${nearlyFull.location}) is nearly full: a neighbour booked ${formatBytes(booked)}; the capacity cache does not know yet`,
      );
    }
    // The follower replica takes the upload: it places with the leader's shared capacity cache.
    const upload = await uploadPanorama({
      segments,
      segmentS: options.segmentS,
      ingestUrl,
      token: stack.edgeToken,
      organizationId,
      matchId,
      spoolDir: join(edgeDir, 'spool'),
      ...(signal ? { signal } : {}),
      onProgress: (sent, total) => observer.step?.('upload', 'running', sent / total),
    });
    const placed = stack.placements.find((p) => p.placed);
    const placedOn = placed?.attempts.find((a) => a.outcome === 'reserved')?.storage_id ?? null;
    const placedSe = storage.elements.find((e) => e.storageId === placedOn);
    end(
      `${segments.length} segments + end marker${placedSe ? `; the first on ${placedSe.storageId} (${placedSe.location})` : ''}`,
    );

    // 5. The job runs; the live view follows its stages in the database.
    const { job, timedOut } = await followJob(
      infra.db,
      matchId,
      organizationId,
      observer,
      timings,
      t0,
      options.timeoutMs,
      signal,
    );
    const failedStage = timedOut
      ? job.stages.find((s) => s.status !== 'completed')
      : job.stages.find((s) => s.status === 'failed');
    // A later stage's failure often comes from the detector: say what the detect stage warned about.
    const detectWarnings =
      job.status === 'completed' ? [] : await detectWarningsOf(job, stack.io, workRoot).catch(() => []);
    const failure = timedOut
      ? {
          stage: failedStage?.stage ?? null,
          reason: `job ${job.job_id} still ${job.status} after --timeout ${options.timeoutMs} ms${failedStage ? ` (stage ${failedStage.stage} ${failedStage.status})` : ''}`,
        }
      : job.status === 'completed'
        ? null
        : {
            stage: failedStage?.stage ?? null,
            reason: `job ${job.job_id} ${job.status}${failedStage ? `: stage ${failedStage.stage} failed: ${JSON.stringify(failedStage.error)}` : ''}${detectWarnings.map((w) => `\nWARNING (detect): ${w}`).join('')}${nothingDetectedHint(failedStage?.error, options.stageEnv)}`,
          };

    // 6. Outputs and report (also for a failed job: what exists, and why the rest does not).
    begin('collect');
    const outDir = join(options.outRoot, matchId);
    const collectDir = join(workRoot, 'collect');
    await mkdir(collectDir, { recursive: true });
    const { stored, ...outputs } = await collectOutputs({
      job,
      db: infra.db,
      io: stack.io,
      workDir: collectDir,
      outDir,
      panoramaPath: panorama.path,
      ...(signal ? { signal } : {}),
    });
    const result: DemoResult = {
      matchId,
      organizationId,
      outDir,
      services: { bus: infra.busKind, database: infra.dbKind, redis: infra.redisKind },
      names: { topicPrefix: infra.topicPrefix, schema: infra.schema, redisKeyPrefix: infra.redisKeyPrefix },
      placements: stack.placements,
      calibration: {
        uploadState: calibrationUpload,
        placedOn: calibrationPlacements.at(-1)?.attempts.find((a) => a.outcome === 'reserved')?.storage_id ?? null,
      },
      upload,
      segments: await Promise.all(
        segments.map(async (s) => ({
          index: s.index,
          durationS: s.durationS,
          frameCount: s.frameCount,
          keyframeAtStart: s.keyframeAtStart,
          sizeBytes: (await stat(s.path)).size,
        })),
      ),
      segmentS: options.segmentS,
      panoramaPlacement: placedSe
        ? {
            storageId: placedSe.storageId,
            location: placedSe.location,
            sizeBytes: (await stat(segments[0]?.path as string)).size,
          }
        : null,
      job,
      executions,
      timings,
      leaders: {
        capacityMonitor: stack.ingestIds.find((_, i) => stack.ingest[i]?.monitor.isLeader) ?? null,
        orchestratorPartitions: Object.fromEntries(
          stack.orchestrators.map((o) => [o.tuning.instanceId, [...o.ownedPartitions()].sort((a, b) => a - b)]),
        ),
        workers: [stack.worker.workerId],
      },
      opsUrl,
      panorama,
      outputs,
      stored,
      analyticsUnit: await analyticsUnitOf(outDir, outputs.analytics),
      analysisFps: options.stageEnv.DETECT_ANALYSIS_FPS ? Number(options.stageEnv.DETECT_ANALYSIS_FPS) : null,
      detector: await detectorSummaryOf(outDir, outputs.detections),
      vcamSize: await vcamSizeOf(outDir, outputs.cameraPath),
      failure,
      totalMs: 0,
    };
    end(outDir);
    result.totalMs = performance.now() - t0;
    result.timings = timings;
    await writeReport(result);
    await writeFile(join(outDir, 'demo.json'), `${JSON.stringify(result, null, 2)}\n`);
    if (failure && timedOut) {
      throw new PolyvisionError('demo_timeout', `${failure.reason} (what exists is in ${outDir})`, {
        details: { job, outDir },
      });
    }
    if (failure) {
      throw new PolyvisionError('demo_job_failed', `${failure.reason} (what exists is in ${outDir})`, {
        details: { job, outDir },
      });
    }
    await run.hold?.(result);
    return result;
  } catch (error) {
    if (current) observer.step?.((current as { step: DemoStep }).step, 'failed', 0, (error as Error).message);
    throw error;
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  }
}

/** After `--timeout`, how long the demo still waits for the job of a confirmed upload to appear, in ms. */
const JOB_APPEAR_GRACE_MS = 60_000;

/** Polls `check` every 200 ms until it is true. @throws PolyvisionError `demo_timeout`. */
async function waitUntil(
  check: () => Promise<boolean>,
  timeoutMs: number,
  message: string,
  signal?: AbortSignal,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new PolyvisionError('demo_timeout', `${message} within ${timeoutMs} ms`);
    await abortableSleep(200, signal);
  }
}

/**
 * Follows the match's job in the database (the final word on state) until it
 * ends, reporting each stage's status and progress, and records stage timings
 * from the stages' own `started_at`/`finished_at`.
 */
async function followJob(
  db: Parameters<typeof getJob>[0],
  matchId: string,
  organizationId: string,
  observer: DemoObserver,
  timings: StepTiming[],
  t0: number,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<{ job: JobView; timedOut: boolean }> {
  const deadline = Date.now() + timeoutMs;
  const wallOffset = Date.now() - performance.now();
  let jobId: string | null = null;
  const reported = new Set<string>();
  let lastMatchLine = '';
  let job: JobView | null = null;
  for (;;) {
    if (Date.now() > deadline) {
      // Past --timeout with a job: the caller still writes out/<match_id>/ with what exists.
      if (job) return { job, timedOut: true };
      // The upload is confirmed, so its job appears within seconds: wait that long for it.
      if (Date.now() > deadline + JOB_APPEAR_GRACE_MS)
        throw new PolyvisionError('demo_timeout', `no job for match ${matchId} within ${timeoutMs} ms`);
    }
    if (!jobId) {
      const row = await db.query<{ job_id: string }>(
        'SELECT job_id FROM jobs WHERE organization_id = $1 AND match_id = $2 ORDER BY created_at LIMIT 1',
        [organizationId, matchId],
      );
      jobId = row.rows[0]?.job_id ?? null;
    }
    job = jobId ? await getJob(db, jobId) : null;
    if (job) {
      if (job.match) {
        const m = job.match;
        const failed = m.segments_failed.length
          ? `, ${m.segments_failed.length} failed (${m.segments_failed.join(',')})`
          : '';
        // received_s counts the segments still in the match: with failures the count says more.
        const seconds = failed ? '' : ` (${m.received_s} s)`;
        const line = `match job ${job.job_id}: ${m.segments_received + m.segments_failed.length} segment(s) received${seconds}${failed}${m.live ? ', live' : `, ended by ${m.ended_by}`}`;
        if (line !== lastMatchLine) observer.info?.(line);
        lastMatchLine = line;
      }
      // A match job has one row per stage and segment: a stage is done when every segment went through it.
      const stages = [...new Set(job.stages.map((s) => s.stage))];
      const total = job.match ? (job.match.final_index ?? job.match.segments_received - 1) + 1 : 1;
      for (const stage of stages) {
        const step = stage as DemoStep;
        const rows = job.stages.filter((s) => s.stage === stage);
        const done = rows.filter((s) => s.status === 'completed').length;
        const failed = rows.find((s) => s.status === 'failed');
        const ofSegments = job.match ? `${done}/${total} segments` : undefined;
        if (failed) observer.step?.(step, 'failed', done / total, JSON.stringify(failed.error));
        else if (done >= total && !job.match?.live && !reported.has(stage)) {
          reported.add(stage);
          const started = rows
            .map((s) => (s.started_at ? Date.parse(s.started_at) : Number.NaN))
            .filter(Number.isFinite);
          const finished = rows.map((s) => (s.finished_at ? Date.parse(s.finished_at) : Number.NaN));
          const startMs = started.length > 0 ? Math.min(...started) - wallOffset - t0 : 0;
          const endMs = finished.every(Number.isFinite)
            ? Math.max(...finished) - wallOffset - t0
            : performance.now() - t0;
          timings.push({ step, startMs, endMs, durationMs: endMs - startMs });
          const note = rows.length === 1 ? statsNote(rows[0]?.stats) : ofSegments;
          observer.step?.(step, 'done', 1, note);
        } else if (
          !reported.has(stage) &&
          (done > 0 || rows.some((s) => ['running', 'dispatched'].includes(s.status)))
        ) {
          const running = rows.find((s) => s.status === 'running' || s.status === 'dispatched');
          observer.step?.(step, 'running', Math.min(1, (done + (running?.progress ?? 0)) / total), ofSegments);
        }
      }
      if (['completed', 'failed', 'cancelled'].includes(job.status)) return { job, timedOut: false };
    }
    await abortableSleep(250, signal);
  }
}

function statsNote(stats: unknown): string | undefined {
  if (!stats || typeof stats !== 'object') return undefined;
  return Object.entries(stats as Record<string, number>)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
}

/** `12.3 MiB`. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(unit === 0 ? 0 : 1)} ${units[unit]}`;
}

/** `WxH` of the virtual camera, from the collected camera-path.json (`output`), or null. */
async function vcamSizeOf(outDir: string, cameraPath: string | null): Promise<string | null> {
  if (!cameraPath) return null;
  const path = JSON.parse(await readFile(join(outDir, cameraPath), 'utf8')) as {
    output?: { outputWidth?: number; outputHeight?: number };
  };
  return path.output?.outputWidth ? `${path.output.outputWidth}x${path.output.outputHeight}` : null;
}

/** The `unit` of the collected `summary.json` (`m` or `px`), or null when there is none or it names no known unit. */
async function analyticsUnitOf(outDir: string, analytics: string | null): Promise<'m' | 'px' | null> {
  if (!analytics) return null;
  const summary = JSON.parse(await readFile(join(outDir, analytics), 'utf8')) as { unit?: unknown };
  return summary.unit === 'm' || summary.unit === 'px' ? summary.unit : null;
}
