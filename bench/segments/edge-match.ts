/**
 * A long match recorded by the edge in real time, through the real cluster
 * with the real stages (issue #18, "Done when"): private Redis, PostgreSQL and
 * Kafka (test/chaos ChaosServices), the local multi-process cluster (3 SEs,
 * 2 ingest, 2 orchestrators, 2 workers on the real stages, and the cluster's
 * edge node: 3 synthetic 640×360 cameras looped with ffmpeg `-re`, stitched on
 * the edge, 4 s wall-clock segments uploaded over tus through ingest-1, the
 * end marker when the window closes). Waits for the match job to complete,
 * then a one-segment match through the same pipeline (the baseline).
 *
 * Measures, from PostgreSQL timestamps (job_segments.received_at = upload,
 * job_stages.finished_at of encode = in the EVENT playlist, jobs.finished_at):
 * last upload → completed (also in segments' processing time W), live lag per
 * segment, wall time per stage, CPU seconds per process role
 * (`/proc/<pid>/stat`, ffmpeg children included once reaped) and the CPU
 * real-time factor; checks the outputs read back from the SEs: one match HLS
 * with ENDLIST and every segment (ffprobe duration, no timestamp gap), one
 * set of tracks (segments merged: count, ids that cross a boundary), the
 * match analytics summary.
 *
 * `node bench/segments/edge-match.ts [--minutes 1] [--analysis-fps N] [--fanout-in-flight N] [--services-port 61100]
 *   [--services-dir /tmp/edgematch-svc] [--keep-services] [--timeout-min 40]`
 * Writes bench/results/segments-edge-match[-<name>].json (`--name`).
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs, promisify } from 'node:util';
import type pg from 'pg';
import { mergeSegmentTracks } from '../../core/src/workers/track/merge-segment-tracks.ts';
import type { TracksFile } from '../../core/src/workers/track/tracks-format.ts';
import { EDGE_SEGMENT_DURATION_S } from '../../deploy/src/cluster/topology.ts';
import { uploadCalibration, uploadPanorama } from '../../deploy/src/demo/edge.ts';
import type { PanoramaSegment } from '../../deploy/src/demo/segment-panorama.ts';
import { ChaosCluster, ChaosServices, censusPool, freeBasePort, percentile } from '../../test/chaos/index.ts';
import { CpuSampler, cpuSecondsOf } from './stage-cpu.ts';

const run = promisify(execFile);
const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '1' },
    'services-port': { type: 'string', default: '61100' },
    'services-dir': { type: 'string', default: '/tmp/edgematch-svc' },
    'keep-services': { type: 'boolean', default: false },
    'timeout-min': { type: 'string', default: '40' },
    name: { type: 'string' },
    'analysis-fps': { type: 'string' },
    'fanout-in-flight': { type: 'string' },
  },
});
/**
 * Settings on top of the defaults, when given: detect's analysed frame rate (default: the workers' 10 fps),
 * the orchestrator's fan-out window (default: none).
 */
const stageEnv: Record<string, string> = {
  ...(values['analysis-fps'] ? { DETECT_ANALYSIS_FPS: values['analysis-fps'] } : {}),
  ...(values['fanout-in-flight'] ? { ORCHESTRATOR_MATCH_FANOUT_IN_FLIGHT: values['fanout-in-flight'] } : {}),
};
const matchS = Math.round(Number(values.minutes) * 60);
const segmentS = EDGE_SEGMENT_DURATION_S;
// Ctrl-C or SIGTERM aborts the wait; the finally block still stops the cluster and the services.
const interrupted = new AbortController();
for (const name of ['SIGINT', 'SIGTERM'] as const) {
  process.once(name, () => interrupted.abort(new Error(`interrupted by ${name}`)));
}
const signal = AbortSignal.any([AbortSignal.timeout(Number(values['timeout-min']) * 60_000), interrupted.signal]);
const log = (line: string) => process.stderr.write(`[edge-match ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

/** CPU seconds per cluster process now. */
function cpuSnapshot(cluster: ChaosCluster): Map<string, number> {
  return new Map(cluster.state.processes.map((p) => [p.name, cpuSecondsOf(p.pid) ?? Number.NaN]));
}

/** The cluster's workers: name → pid, for a {@link CpuSampler}. */
function workerPids(cluster: ChaosCluster): Map<string, number> {
  return new Map(cluster.state.processes.filter((p) => p.role === 'worker').map((p) => [p.name, p.pid]));
}

/** Per-stage CPU seconds, rounded. */
function stageCpu(
  sampler: CpuSampler,
  runs: { stage: string; worker_id: string; started_at: Date; finished_at: Date }[],
) {
  const attributed = sampler.attribute(
    runs.map((r) => ({
      stage: r.stage,
      workerId: r.worker_id,
      startedMs: r.started_at.getTime(),
      finishedMs: r.finished_at.getTime(),
    })),
  );
  return Object.fromEntries(Object.entries(attributed).map(([k, v]) => [k, round(v as number)]));
}

/** Summary of a list: p50 / p95 / max, rounded. */
function spread(list: number[]): { p50: number | null; p95: number | null; max: number | null } {
  const sorted = [...list].sort((a, b) => a - b);
  const r = (x: number | null) => (x === null ? null : round(x));
  return { p50: r(percentile(sorted, 50)), p95: r(percentile(sorted, 95)), max: r(sorted.at(-1) ?? null) };
}

/** Waits until the match's one job is completed or failed; returns its id. */
async function waitMatchDone(db: pg.Pool, matchId: string): Promise<{ jobId: string; status: string }> {
  for (;;) {
    signal.throwIfAborted();
    const { rows } = await db.query<{ job_id: string; status: string }>(
      `SELECT job_id, status FROM jobs WHERE match_id = $1 AND kind = 'match'`,
      [matchId],
    );
    if (rows.length > 1) throw new Error(`match ${matchId} has ${rows.length} jobs, not one`);
    const [job] = rows;
    if (job && ['completed', 'failed', 'cancelled'].includes(job.status))
      return { jobId: job.job_id, status: job.status };
    await sleep(1_000);
  }
}

interface CatalogFile {
  output_key: string | null;
  kind: string;
  filename: string;
  storage_id: string;
  object_key: string;
  created_at: Date;
}

async function readSe(cluster: ChaosCluster, file: CatalogFile): Promise<Buffer> {
  const se = cluster.process(file.storage_id);
  const response = await fetch(`${se.url}/api/v1/files/${file.object_key}`, {
    headers: { authorization: `Bearer ${cluster.state.storageToken}` },
  });
  if (response.status !== 200) throw new Error(`${file.storage_id}/${file.object_key}: HTTP ${response.status}`);
  return Buffer.from(await response.arrayBuffer());
}

/** Times of one match job, from its rows. */
async function matchTimes(db: pg.Pool, jobId: string) {
  const job = (
    await db.query<{ finished_at: Date; ended_at: Date | null; ended_by: string | null; created_at: Date }>(
      `SELECT finished_at, ended_at, ended_by, created_at FROM jobs WHERE job_id = $1`,
      [jobId],
    )
  ).rows[0]!;
  const segments = (
    await db.query<{ segment_index: number; state: string; slot: string; duration_s: number; received_at: Date }>(
      `SELECT segment_index, state, slot, duration_s, received_at FROM job_segments WHERE job_id = $1 ORDER BY segment_index`,
      [jobId],
    )
  ).rows;
  const stages = (
    await db.query<{ stage: string; segment_index: number; started_at: Date; finished_at: Date; worker_id: string }>(
      `SELECT stage, segment_index, started_at, finished_at, worker_id FROM job_stages WHERE job_id = $1 AND status = 'completed'`,
      [jobId],
    )
  ).rows;
  return { job, segments, stages };
}

const loadBefore = loadavg();
const services = new ChaosServices({
  workDir: values['services-dir'],
  basePort: Number(values['services-port']),
});
let cluster: ChaosCluster | null = null;
let db: pg.Pool | null = null;
const scratch = await mkdtemp(path.join(tmpdir(), 'edge-match-'));
try {
  log(`services on ${values['services-port']}…`);
  await services.up();
  log(`cluster with an edge recording a ${matchS} s match…`);
  const topicPrefix = `edgematch${Date.now().toString(36)}`;
  cluster = await ChaosCluster.start({
    services: services.env,
    workDir: path.join(scratch, 'cluster'),
    basePort: await freeBasePort(),
    orchestrators: 2,
    ingestReplicas: 2,
    workers: 2,
    edgeMatchDurationS: matchS,
    topicPrefix,
    databaseSchema: topicPrefix,
    env: stageEnv,
    onProgress: (line) => log(line),
  });
  const readyAt = Date.now();
  const cpuStart = cpuSnapshot(cluster);
  const sampler = new CpuSampler(workerPids(cluster));
  db = censusPool(cluster);
  const matchId = cluster.state.edgeMatchId as string;
  log(`edge recording match ${matchId}; waiting for its job…`);
  const done = await waitMatchDone(db, matchId);
  const doneAt = Date.now();
  const cpuEnd = cpuSnapshot(cluster);
  sampler.stop();
  log(`match job ${done.jobId}: ${done.status}`);
  const { job, segments, stages } = await matchTimes(db, done.jobId);
  const received = segments.filter((s) => s.state === 'received');
  const lastUploadMs = Math.max(...received.map((s) => s.received_at.getTime()));
  const encodeAt = new Map(
    stages.filter((s) => s.stage === 'encode').map((s) => [s.segment_index, s.finished_at.getTime()]),
  );
  // A segment's recording ends at its wall-clock slot's end (the last one earlier: the window closed).
  const lag = received.map((s) => {
    const uploadMs = s.received_at.getTime();
    const recordedMs = Math.min((Number(s.slot) + 1) * segmentS * 1000, uploadMs);
    const inPlaylistMs = encodeAt.get(s.segment_index) ?? Number.NaN;
    return {
      segment: s.segment_index,
      record_to_upload_s: round((uploadMs - recordedMs) / 1000),
      upload_to_playlist_s: round((inPlaylistMs - uploadMs) / 1000),
      record_to_playlist_s: round((inPlaylistMs - recordedMs) / 1000),
    };
  });
  // W: one segment's processing time = its stages' wall times summed (median over segments).
  const perSegmentWorkS = received.map((s) =>
    stages
      .filter((r) => r.segment_index === s.segment_index)
      .reduce((t, r) => t + (r.finished_at.getTime() - r.started_at.getTime()) / 1000, 0),
  );
  const wS = percentile(
    [...perSegmentWorkS].sort((a, b) => a - b),
    50,
  ) as number;
  const stageNames = [...new Set(stages.map((s) => s.stage))];
  const stageWallS = Object.fromEntries(
    stageNames.map((name) => [
      name,
      round(
        stages
          .filter((s) => s.stage === name)
          .reduce((t, r) => t + (r.finished_at.getTime() - r.started_at.getTime()) / 1000, 0),
      ),
    ]),
  );
  const totalStageWallS = Object.values(stageWallS).reduce((a, b) => a + b, 0);
  const cpuByRole: Record<string, number> = {};
  for (const p of cluster.state.processes) {
    const used = (cpuEnd.get(p.name) ?? Number.NaN) - (cpuStart.get(p.name) ?? Number.NaN);
    cpuByRole[p.role] = round((cpuByRole[p.role] ?? 0) + used);
  }
  const videoS = received.reduce((t, s) => t + s.duration_s, 0);
  const workerCpuS = cpuByRole.worker ?? Number.NaN;
  const workerCpuPerVideoS = workerCpuS / videoS;

  // Outputs, read back from the SEs.
  const files = (
    await db.query<CatalogFile>(
      `SELECT output_key, kind, filename, storage_id, object_key, created_at FROM files WHERE job_id = $1 AND output_key IS NOT NULL`,
      [done.jobId],
    )
  ).rows;
  const byKey = new Map(files.map((f) => [f.output_key as string, f]));
  const playlists = files.filter((f) => /\/match\/hls\/[^/]+\/index\.m3u8$/.test(f.output_key ?? ''));
  const hls = [];
  for (const playlist of playlists) {
    const text = (await readSe(cluster, playlist)).toString('utf8');
    const dir = path.join(scratch, 'hls', path.posix.basename(path.posix.dirname(playlist.output_key as string)));
    const uris = text.split('\n').filter((l) => l.trim() && !l.startsWith('#'));
    const extinfS = text
      .split('\n')
      .filter((l) => l.startsWith('#EXTINF:'))
      .reduce((t, l) => t + Number.parseFloat(l.slice(8)), 0);
    let missing = 0;
    for (const [i, uri] of uris.entries()) {
      const key = path.posix.normalize(path.posix.join(path.posix.dirname(playlist.output_key as string), uri));
      const file = byKey.get(key);
      if (!file) {
        missing++;
        continue;
      }
      const local = path.join(dir, `${String(i).padStart(5, '0')}${path.extname(uri)}`);
      await mkdir(dir, { recursive: true });
      await writeFile(local, await readSe(cluster, file));
    }
    // The same playlist over local copies: ffprobe reads the whole presentation as one stream.
    let n = 0;
    await writeFile(
      path.join(dir, 'index.m3u8'),
      text
        .split('\n')
        .map((l) => (l.trim() && !l.startsWith('#') ? `${String(n++).padStart(5, '0')}${path.extname(l.trim())}` : l))
        .join('\n'),
    );
    if (!text.includes('#EXT-X-ENDLIST')) {
      hls.push({ rung: path.posix.basename(path.posix.dirname(playlist.output_key as string)), endlist: false });
      continue;
    }
    const probe = await run(
      'ffprobe',
      [
        ...['-v', 'error', '-allowed_extensions', 'ALL', '-select_streams', 'v:0'],
        ...['-show_entries', 'packet=pts_time:format=duration', '-of', 'json', path.join(dir, 'index.m3u8')],
      ],
      { maxBuffer: 512 * 1024 * 1024, timeout: 120_000 }, // without ENDLIST ffprobe would wait for more
    );
    const parsed = JSON.parse(probe.stdout) as { packets?: { pts_time?: string }[]; format?: { duration?: string } };
    const pts = (parsed.packets ?? [])
      .map((p) => Number(p.pts_time))
      .filter(Number.isFinite)
      .sort((a, b) => a - b);
    const steps = pts.slice(1).map((t, i) => t - (pts[i] as number));
    const frameS = percentile(
      [...steps].sort((a, b) => a - b),
      50,
    ) as number;
    hls.push({
      rung: path.posix.basename(path.posix.dirname(playlist.output_key as string)),
      event: text.includes('#EXT-X-PLAYLIST-TYPE:EVENT'),
      endlist: text.includes('#EXT-X-ENDLIST'),
      entries: uris.length,
      entries_missing_on_se: missing,
      extinf_sum_s: round(extinfS),
      ffprobe_duration_s: round(Number(parsed.format?.duration)),
      video_frames: pts.length,
      first_pts_s: round(pts[0] ?? Number.NaN),
      largest_pts_step_s: round(Math.max(...steps), 3),
      frame_interval_s: round(frameS, 3),
      gaps_over_2_frames: steps.filter((s) => s > 2 * frameS + 1e-3).length,
      // Where each gap is (the pts before it) and every entry's duration: a short entry is an edge segment short of its slot.
      gaps: steps.flatMap((s, i) =>
        s > 2 * frameS + 1e-3 ? [{ after_pts_s: round(pts[i] as number), step_s: round(s, 3) }] : [],
      ),
      extinf_s: text
        .split('\n')
        .filter((l) => l.startsWith('#EXTINF:'))
        .map((l) => round(Number.parseFloat(l.slice(8)))),
    });
  }
  const trackFiles = files.filter((f) => /\/track\/.*tracks\.json$/.test(f.output_key ?? ''));
  const perSegmentTracks: TracksFile[] = [];
  for (const f of trackFiles) perSegmentTracks.push(JSON.parse((await readSe(cluster, f)).toString('utf8')));
  const merged = perSegmentTracks.length > 0 ? mergeSegmentTracks(perSegmentTracks) : null;
  const segmentsOfId = new Map<number, Set<number>>();
  for (const t of perSegmentTracks) {
    for (const track of t.tracks) {
      segmentsOfId.set(track.id, (segmentsOfId.get(track.id) ?? new Set()).add(t.segment?.index ?? -1));
    }
  }
  const summaries = files.filter((f) => /\/analyze\/[^/]+\/match\/summary\.json$/.test(f.output_key ?? ''));
  const summary = summaries[0]
    ? (JSON.parse((await readSe(cluster, summaries[0])).toString('utf8')) as Record<string, unknown>)
    : null;

  // Baseline: a one-segment match through the same cluster and uploader (the long match's first panorama).
  log('baseline: a one-segment match…');
  const panoramas = (
    await db.query<CatalogFile>(
      `SELECT output_key, kind, filename, storage_id, object_key, created_at FROM files
       WHERE match_id = $1 AND kind = 'panorama' ORDER BY created_at`,
      [matchId],
    )
  ).rows;
  const venueFile = (
    await db.query<CatalogFile>(
      `SELECT output_key, kind, filename, storage_id, object_key, created_at FROM files
       WHERE match_id = $1 AND filename = 'venue.json' ORDER BY created_at DESC LIMIT 1`,
      [matchId],
    )
  ).rows[0];
  const panoramaPath = path.join(scratch, 'baseline-panorama.mp4');
  await writeFile(panoramaPath, await readSe(cluster, panoramas[1] ?? panoramas[0]!));
  const baselineId = `${matchId}-baseline`;
  const ingestUrl = cluster.process('ingest-1').url as string;
  const edgeAuth = {
    ingestUrl,
    token: cluster.state.edgeToken,
    organizationId: cluster.state.organizationId,
    matchId: baselineId,
    spoolDir: path.join(scratch, 'baseline-spool'),
    signal,
  };
  if (venueFile)
    await uploadCalibration({ ...edgeAuth, venue: JSON.parse((await readSe(cluster, venueFile)).toString()) });
  const slot = Math.floor(Date.now() / 1000 / segmentS);
  const baselineSampler = new CpuSampler(workerPids(cluster));
  await copyFile(panoramaPath, path.join(scratch, 'baseline-segment.mp4'));
  await uploadPanorama({
    ...edgeAuth,
    segments: [{ index: slot, path: path.join(scratch, 'baseline-segment.mp4') } as PanoramaSegment],
    segmentS,
  });
  const baseline = await waitMatchDone(db, baselineId);
  baselineSampler.stop();
  const baselineTimes = await matchTimes(db, baseline.jobId);
  const baselineUploadMs = baselineTimes.segments[0]!.received_at.getTime();
  const baselineMs = baselineTimes.job.finished_at.getTime() - baselineUploadMs;
  const baselineWorkS = baselineTimes.stages.reduce(
    (t, r) => t + (r.finished_at.getTime() - r.started_at.getTime()) / 1000,
    0,
  );

  const afterLastS = (job.finished_at.getTime() - lastUploadMs) / 1000;
  const coresAvailable = 2;
  const result = {
    measured_at: new Date().toISOString(),
    load_average_before: loadBefore.map((l) => round(l)),
    load_average_after: loadavg().map((l) => round(l)),
    settings: {
      match_s: matchS,
      segment_s: segmentS,
      cameras:
        '3 × synthetic 640×360 (synth-match --duration 8 --width 640, looped by ffmpeg -re), stitched on the edge',
      cluster: '3 SEs, 2 ingest, 2 orchestrators, 2 workers on the real stages (defaults), 1 edge',
      env:
        Object.keys(stageEnv).length > 0
          ? stageEnv
          : 'defaults (detect analyses 10 fps, DEFAULT_ANALYSIS_FPS; fan-out window 4 since 2026-11-28)',
    },
    match: {
      match_id: matchId,
      job_id: done.jobId,
      status: done.status,
      ended_by: job.ended_by,
      segments_received: received.length,
      segments_missing: segments.length - received.length,
      video_s: round(videoS),
      cluster_ready_to_done_s: round((doneAt - readyAt) / 1000),
    },
    last_upload_to_completed_s: round(afterLastS),
    end_marker_to_completed_s: job.ended_at ? round((job.finished_at.getTime() - job.ended_at.getTime()) / 1000) : null,
    segment_processing_w_s: round(wS),
    last_upload_to_completed_in_w: round(afterLastS / wS),
    baseline_one_segment_upload_to_completed_s: round(baselineMs / 1000),
    baseline_status: baseline.status,
    baseline_segment_work_s: round(baselineWorkS),
    last_upload_to_completed_in_baseline_w: round(afterLastS / baselineWorkS),
    live_lag_first_last_segment_s: [lag[0]?.record_to_playlist_s ?? null, lag.at(-1)?.record_to_playlist_s ?? null],
    live_lag_s: {
      record_to_upload: spread(lag.map((l) => l.record_to_upload_s)),
      upload_to_playlist: spread(lag.map((l) => l.upload_to_playlist_s)),
      record_to_playlist: spread(lag.map((l) => l.record_to_playlist_s)),
    },
    live_lag_segments_record_to_playlist: spread(lag.map((l) => l.record_to_playlist_s / segmentS)),
    per_segment: lag,
    stage_wall_s: stageWallS,
    stage_cpu_s: stageCpu(sampler, stages),
    baseline_stage_cpu_s: stageCpu(baselineSampler, baselineTimes.stages),
    baseline_stage_wall_s: Object.fromEntries(
      baselineTimes.stages.map((r) => [r.stage, round((r.finished_at.getTime() - r.started_at.getTime()) / 1000)]),
    ),
    stage_wall_share: Object.fromEntries(
      Object.entries(stageWallS).map(([k, v]) => [k, round((100 * v) / totalStageWallS, 1)]),
    ),
    cpu_s_by_role: cpuByRole,
    worker_cpu_s_per_video_s: round(workerCpuPerVideoS),
    cpu_real_time_factor_2_cores: round(workerCpuPerVideoS / coresAvailable),
    whole_cluster_cpu_s_per_video_s: round(Object.values(cpuByRole).reduce((a, b) => a + b, 0) / videoS),
    projection_90_min_cpu: {
      worker_cpu_s: Math.round(5400 * workerCpuPerVideoS),
      hours_on_2_cores: round((5400 * workerCpuPerVideoS) / coresAvailable / 3600),
      last_upload_to_completed_on_2_cores_min: round(
        (Math.max(0, 5400 * (workerCpuPerVideoS / coresAvailable - 1)) + wS) / 60,
        1,
      ),
      cores_to_keep_up: Math.ceil(workerCpuPerVideoS),
    },
    outputs: {
      hls,
      tracks: merged
        ? {
            segment_files: perSegmentTracks.length,
            match_tracks: merged.tracks.length,
            match_frames: merged.frameCount,
            ids_in_more_than_one_segment: [...segmentsOfId.values()].filter((s) => s.size > 1).length,
            longest_track_segments: Math.max(...[...segmentsOfId.values()].map((s) => s.size)),
          }
        : null,
      analytics_summary: summary
        ? { files: summaries.length, final: summary.final ?? null, keys: Object.keys(summary) }
        : null,
      output_files: files.length,
    },
  };
  const out = `bench/results/segments-edge-match${values.name ? `-${values.name}` : ''}.json`;
  await writeFile(out, `${JSON.stringify(result, null, 2)}\n`);
  log(`wrote ${out}`);
  process.stdout.write(`${JSON.stringify({ ...result, per_segment: undefined }, null, 2)}\n`);
} finally {
  await db?.end().catch(() => {});
  if (cluster) await cluster.close().catch((e: unknown) => log(`cluster close: ${(e as Error).message}`));
  if (!values['keep-services'])
    await services.down().catch((e: unknown) => log(`services down: ${(e as Error).message}`));
  await rm(scratch, { recursive: true, force: true });
}
