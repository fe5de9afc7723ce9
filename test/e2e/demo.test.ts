/**
 * End to end: `pnpm demo` (deploy/src/cli/commands/demo.ts) as a child
 * process on a short synthetic clip, once embedded (no service URLs) and once
 * on the real Redis, PostgreSQL and Kafka of the global setup. The edge uploads
 * the clip as a match of several segments (issue #18): one match job, every
 * stage once per segment. Checks the outputs with ffprobe (match HLS with
 * ENDLIST, the joined vcam), track ids across a segment boundary, the 507 met
 * and retried elsewhere, and that report.html links every output.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ffprobe } from '@polyvision/shared';
import { Redis } from 'ioredis';
import { Kafka } from 'kafkajs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceUrl, spawnTracked, uniqueName } from '../support/index.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = join(repoRoot, 'deploy', 'src', 'cli', 'main.ts');
const DEFAULT_MODEL = join(repoRoot, 'core', 'models', 'player-detector', 'player-detector.onnx');
const SHARED_MODEL = resolve(repoRoot, '..', 'shared', 'models', 'yolox_nano.onnx');
/** The repository's detector when it is there, else the pretrained YOLOX-nano beside the repository. */
const modelArgs = existsSync(DEFAULT_MODEL)
  ? []
  : existsSync(SHARED_MODEL)
    ? ['--model', SHARED_MODEL, '--model-layout', 'yolox']
    : null;

const DURATION_S = 6;
/** `--segment-s`: the edge uploads DURATION_S / SEGMENT_S segments. */
const SEGMENT_S = 2;
const SEGMENTS = DURATION_S / SEGMENT_S;
const FPS = 25;
const FRAMES = DURATION_S * FPS;
const STAGES = ['detect', 'track', 'vcam', 'analyze', 'encode'];

interface DemoJson {
  matchId: string;
  outDir: string;
  services: { bus: string; database: string; redis: string };
  names: { topicPrefix: string; schema: string; redisKeyPrefix: string };
  upload: { state: string; insufficientStorageResponses: number };
  calibration: { uploadState: string | null; placedOn: string | null };
  analyticsUnit: 'm' | 'px' | null;
  stored: Array<{ path: string; storageId: string; sizeBytes: number }>;
  placements: Array<{ attempts: Array<{ storage_id: string; outcome: string }>; placed: boolean; replica: string }>;
  panoramaPlacement: { storageId: string; location: string } | null;
  segments: Array<{ index: number; durationS: number; frameCount: number; keyframeAtStart: boolean }>;
  segmentS: number;
  job: {
    status: string;
    kind: string;
    match: {
      live: boolean;
      ended_by: string | null;
      final_index: number | null;
      segments_received: number;
      gaps: number[];
      processed: Record<string, number>;
    } | null;
    stages: Array<{ stage: string; segment_index: number | null; status: string; attempt: number }>;
  };
  executions: Record<string, number>;
  timings: Array<{ step: string; durationMs: number }>;
  leaders: { capacityMonitor: string | null; orchestratorPartitions: Record<string, number[]> };
  outputs: {
    panorama: string;
    vcam: string | null;
    hlsMaster: string | null;
    hlsPlaylists: string[];
    detections: string | null;
    tracks: string | null;
    ballTrack: string | null;
    analytics: string | null;
    heatmaps: string[];
    segments: number;
    joined: string[];
    files: string[];
  };
}

interface TracksJson {
  frameCount: number;
  segment?: { index: number; firstMatchFrame: number };
  tracks: Array<{ id: number; frames: Array<{ frame: number }> }>;
}

/** Runs the demo CLI; resolves with its exit status and output. */
function runDemoCli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  const child = spawnTracked(process.execPath, [CLI, 'demo', ...args], { cwd: repoRoot, env });
  let output = '';
  child.stdout?.on('data', (b: Buffer) => {
    output += b.toString();
  });
  child.stderr?.on('data', (b: Buffer) => {
    output += b.toString();
  });
  return new Promise((resolvePromise) => child.once('exit', (code) => resolvePromise({ code, output })));
}

/** Sum of `#EXTINF` durations of a media playlist, seconds. */
function playlistSeconds(text: string): number {
  return [...text.matchAll(/#EXTINF:([\d.]+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
}

async function checkOutputs(demo: DemoJson, output: string): Promise<void> {
  const out = demo.outDir;
  // The edge cut the clip into SEGMENTS segments, each from a keyframe, durations adding up to the clip.
  expect(demo.segmentS).toBe(SEGMENT_S);
  expect(demo.segments.map((s) => s.index)).toEqual([...Array(SEGMENTS).keys()]);
  for (const s of demo.segments) expect(s.keyframeAtStart, `segment ${s.index}`).toBe(true);
  expect(demo.segments.reduce((sum, s) => sum + s.frameCount, 0)).toBe(FRAMES);
  expect(demo.segments.reduce((sum, s) => sum + s.durationS, 0)).toBeCloseTo(DURATION_S, 0);
  // One match job, closed by the edge's marker after its last segment, every segment received.
  expect(demo.job.status).toBe('completed');
  expect(demo.job.kind).toBe('match');
  expect(demo.job.match).toMatchObject({
    live: false,
    ended_by: 'marker',
    final_index: SEGMENTS - 1,
    segments_received: SEGMENTS,
    gaps: [],
  });
  expect(output).toContain(`the match as one job`);
  expect(output).toContain(`${SEGMENTS} segments of ${SEGMENT_S} s uploaded by the edge`);
  // Every stage completed for every segment, first attempt; each handler ran once per segment.
  expect([...new Set(demo.job.stages.map((s) => s.stage))].sort()).toEqual([...STAGES].sort());
  expect(demo.job.stages).toHaveLength(STAGES.length * SEGMENTS);
  for (const stage of STAGES) {
    const rows = demo.job.stages.filter((s) => s.stage === stage);
    expect(rows.map((s) => s.segment_index).sort(), stage).toEqual([...Array(SEGMENTS).keys()]);
    expect(demo.job.match?.processed[stage], `processed by ${stage}`).toBe(SEGMENTS);
    expect(demo.executions[stage], `executions of ${stage}`).toBe(SEGMENTS);
  }
  for (const s of demo.job.stages) {
    expect(s.status, `${s.stage} ${s.segment_index}`).toBe('completed');
    expect(s.attempt, `${s.stage} ${s.segment_index}`).toBe(1);
  }
  // A 507 met on the nearly full SE by the first segment, then placed elsewhere by the same placement;
  // every segment placed (and the end marker).
  const placed = demo.placements.filter((p) => p.placed);
  expect(placed.length).toBeGreaterThanOrEqual(SEGMENTS);
  // The segments, uploaded one after the other, are the first placements (the tiny end marker after them may fit
  // in what the neighbour left on se-5).
  for (const p of placed.slice(0, SEGMENTS)) expect(p.attempts.at(-1)?.storage_id).not.toBe('se-5-dc-north');
  const attempts = placed[0]?.attempts ?? [];
  expect(attempts[0]).toMatchObject({ storage_id: 'se-5-dc-north', outcome: 'insufficient_storage' });
  expect(attempts.at(-1)?.outcome).toBe('reserved');
  expect(demo.panoramaPlacement?.storageId).not.toBe('se-5-dc-north');
  expect(demo.panoramaPlacement?.storageId).toBe(attempts.at(-1)?.storage_id);
  expect(output).toMatch(/507 from se-5-dc-north .* placed on se-[1-4]-dc-(east|west)/);
  // The edge's spool saw the panorama confirmed by the core (then deleted it); no final 507 reached the edge.
  expect(['confirmed', 'deleted']).toContain(demo.upload.state);
  expect(demo.upload.insufficientStorageResponses).toBe(0);
  // Every stage output lives on a storage element with room (never the filled one) and came back from there;
  // the demo joined the match's vcam, overlay, tracks, ball track and detections from the segments' outputs.
  expect(demo.outputs.joined.sort()).toEqual([
    'detect/detections.jsonl',
    'track/ball-track.json',
    'track/tracks.json',
    'vcam/camera-path.json',
    'vcam/overlay.mp4',
    'vcam/vcam.mp4',
  ]);
  expect(demo.outputs.segments).toBe(SEGMENTS);
  expect(demo.stored.map((o) => o.path).sort()).toEqual(
    demo.outputs.files.filter((f) => f !== 'panorama.mp4' && !demo.outputs.joined.includes(f)),
  );
  for (const o of demo.stored) expect(o.storageId, o.path).toMatch(/^se-[1-4]-dc-(east|west)$/);
  // Leaders: one capacity monitor, two orchestrators sharing the 12 partitions.
  expect(['ingest-1', 'ingest-2']).toContain(demo.leaders.capacityMonitor);
  const partitions = Object.values(demo.leaders.orchestratorPartitions);
  expect(partitions).toHaveLength(2);
  expect(partitions.flat().sort((a, b) => a - b)).toEqual([...Array(12).keys()]);
  for (const p of partitions) expect(p.length).toBeGreaterThan(0);

  // Videos: expected duration and frame count.
  const panorama = await ffprobe(join(out, 'panorama.mp4'));
  expect(panorama.frameCount).toBe(FRAMES);
  expect(panorama.durationSeconds).toBeCloseTo(DURATION_S, 0);
  expect(demo.outputs.vcam).toBe('vcam/vcam.mp4');
  const vcam = await ffprobe(join(out, 'vcam', 'vcam.mp4'));
  expect(vcam.frameCount).toBe(FRAMES);
  expect(vcam.video?.width).toBe(640);
  expect(vcam.video?.height).toBe(360);
  expect(vcam.durationSeconds).toBeCloseTo(DURATION_S, 0);
  // HLS of the match: the master lists renditions that exist; each is one finished EVENT playlist
  // covering the whole clip with media segments from every match segment.
  expect(demo.outputs.hlsMaster).toBe('encode/match/hls/master.m3u8');
  const master = await readFile(join(out, 'encode', 'match', 'hls', 'master.m3u8'), 'utf8');
  const listed = master.split('\n').filter((l) => l.endsWith('.m3u8'));
  expect(listed.length).toBeGreaterThan(0);
  for (const playlist of listed) {
    const text = await readFile(join(out, 'encode', 'match', 'hls', playlist), 'utf8');
    expect(text).toContain('#EXT-X-PLAYLIST-TYPE:EVENT');
    expect(text.trimEnd().endsWith('#EXT-X-ENDLIST')).toBe(true);
    expect(playlistSeconds(text)).toBeCloseTo(DURATION_S, 0);
    const media = text.split('\n').filter((l) => l.endsWith('.ts'));
    for (let k = 0; k < SEGMENTS; k++) {
      expect(
        media.some((m) => m.includes(`segment-00000${k}/`)),
        `media of segment ${k}`,
      ).toBe(true);
    }
    for (const m of media) {
      const path = join(out, 'encode', 'match', 'hls', dirname(playlist), m);
      expect(existsSync(path), m).toBe(true);
    }
    const probe = await ffprobe(join(out, 'encode', 'match', 'hls', dirname(playlist), media[0] as string));
    expect(probe.video?.height).toBeLessThanOrEqual(360);
  }
  // Detections of every segment, on the match clock.
  const detections = (await readFile(join(out, 'detect', 'detections.jsonl'), 'utf8')).split('\n').filter(Boolean);
  expect(detections.length).toBeGreaterThan(SEGMENTS);
  const lastDetection = JSON.parse(detections.at(-1) as string) as { tMs: number };
  expect(lastDetection.tMs).toBeGreaterThan((DURATION_S - SEGMENT_S) * 1000);
  // Tracks of the match: ids hold across a segment boundary (the track stage carries its tracker).
  const tracks = JSON.parse(await readFile(join(out, 'track', 'tracks.json'), 'utf8')) as TracksJson;
  expect(tracks.tracks.length).toBeGreaterThan(0);
  const first = JSON.parse(await readFile(join(out, 'track', 'segment-000000', 'tracks.json'), 'utf8')) as TracksJson;
  const second = JSON.parse(await readFile(join(out, 'track', 'segment-000001', 'tracks.json'), 'utf8')) as TracksJson;
  const boundary = second.segment?.firstMatchFrame as number;
  expect(boundary).toBeGreaterThan(0);
  const secondIds = new Set(second.tracks.map((t) => t.id));
  const across = first.tracks.filter((t) => secondIds.has(t.id)).map((t) => t.id);
  expect(across.length, 'track ids in segments 0 and 1').toBeGreaterThan(0);
  // In the merged file such a track runs through the boundary on the match clock.
  const through = tracks.tracks.filter(
    (t) =>
      across.includes(t.id) && t.frames.some((f) => f.frame < boundary) && t.frames.some((f) => f.frame >= boundary),
  );
  expect(through.length).toBeGreaterThan(0);
  // The match's ball track: one frame per analysed frame of the match, on the match clock.
  expect(demo.outputs.ballTrack).toBe('track/ball-track.json');
  const ball = JSON.parse(await readFile(join(out, 'track', 'ball-track.json'), 'utf8')) as {
    frames: Array<{ frame: number; t: number }>;
  };
  expect(ball.frames.map((f) => f.frame)).toEqual(Array.from({ length: tracks.frameCount }, (_, k) => k));
  expect(ball.frames.at(-1)!.t).toBeGreaterThan(DURATION_S - SEGMENT_S);
  // The virtual camera does not jump at a boundary: the window's step from one segment's last frame to the
  // next segment's first is no larger than twice the largest step inside a segment.
  const windows: Array<Array<{ cx: number; cy: number }>> = [];
  for (let k = 0; k < SEGMENTS; k++) {
    const path = JSON.parse(await readFile(join(out, 'vcam', `segment-00000${k}`, 'camera-path.json'), 'utf8')) as {
      windows: Array<{ cx: number; cy: number }>;
    };
    windows.push(path.windows);
  }
  const step = (a: { cx: number; cy: number }, b: { cx: number; cy: number }) => Math.hypot(a.cx - b.cx, a.cy - b.cy);
  const inner = Math.max(...windows.flatMap((w) => w.slice(1).map((v, i) => step(w[i] as typeof v, v))));
  for (let k = 1; k < SEGMENTS; k++) {
    const jump = step(
      windows[k - 1]?.at(-1) as { cx: number; cy: number },
      windows[k]?.[0] as { cx: number; cy: number },
    );
    expect(jump, `camera step at the boundary before segment ${k}`).toBeLessThanOrEqual(Math.max(2 * inner, 2));
  }
  // The venue calibration travelled with the match (venue.json uploaded by the edge before the panorama,
  // handed to the job by ingest), so the analytics are in pitch metres with plausible distances.
  expect(['confirmed', 'deleted']).toContain(demo.calibration.uploadState);
  expect(demo.analyticsUnit).toBe('m');
  expect(output).toContain('in pitch metres: the venue calibration (venue.json) travelled with the match');
  expect(demo.outputs.analytics).toBe('analyze/match/summary.json');
  const analytics = JSON.parse(await readFile(join(out, 'analyze', 'match', 'summary.json'), 'utf8')) as {
    unit: string;
    durationSeconds: number;
    segments: number;
    final: boolean;
    players: Array<{ distance: number }>;
  };
  expect(analytics.unit).toBe('m');
  expect(analytics).toMatchObject({ segments: SEGMENTS, final: true });
  expect(analytics.durationSeconds).toBeCloseTo(DURATION_S, 0);
  expect(analytics.players.length).toBeGreaterThan(0);
  for (const player of analytics.players) {
    expect(player.distance).toBeGreaterThanOrEqual(0);
    expect(player.distance).toBeLessThan(12 * DURATION_S); // nobody runs faster than 12 m/s
  }
  expect(Math.max(...analytics.players.map((p) => p.distance))).toBeGreaterThan(0);
  expect(demo.outputs.heatmaps.length).toBeGreaterThan(0);
  for (const h of demo.outputs.heatmaps) expect(h.startsWith('analyze/match/heatmaps/'), h).toBe(true);
  // The report links every output with a relative path that exists.
  const report = await readFile(join(out, 'report.html'), 'utf8');
  const links = [...report.matchAll(/(?:href|src)="([^"]+)"/g)].map((m) => m[1] as string);
  for (const file of demo.outputs.files) expect(links, file).toContain(file);
  for (const link of links) {
    expect(link.startsWith('/') || link.includes('://'), link).toBe(false);
    expect(existsSync(join(out, link)), link).toBe(true);
  }
  for (const section of [
    'checks',
    'match',
    'vcam',
    'overlay',
    'panorama',
    'hls',
    'detections',
    'analytics',
    'heatmaps',
    'placement',
    'timings',
    'leaders',
  ]) {
    expect(report).toContain(`id="${section}"`);
  }
  expect(report).toContain('se-5-dc-north');
}

describe.skipIf(modelArgs === null)('pnpm demo end to end', () => {
  let outRoot: string;
  const args = (matchId: string) => [
    '--duration',
    String(DURATION_S),
    '--segment-s',
    String(SEGMENT_S),
    '--size',
    '640x360',
    '--fps',
    String(FPS),
    '--vcam-size',
    '640x360',
    '--plain',
    '--out',
    outRoot,
    '--match-id',
    matchId,
    ...(modelArgs ?? []),
  ];

  beforeAll(async () => {
    outRoot = await mkdtemp(join(tmpdir(), 'pv-demo-e2e-'));
  });
  afterAll(async () => {
    await rm(outRoot, { recursive: true, force: true });
  });

  it('runs embedded: a 507 met and moved, every stage once, videos and report complete', {
    timeout: 900_000,
  }, async () => {
    const matchId = uniqueName('embedded');
    const env = { ...process.env };
    delete env.REDIS_URL;
    delete env.DATABASE_URL;
    delete env.KAFKA_BROKERS;
    const { code, output } = await runDemoCli(args(matchId), env);
    expect(code, output).toBe(0);
    const demo = JSON.parse(await readFile(join(outRoot, matchId, 'demo.json'), 'utf8')) as DemoJson;
    expect(demo.services).toEqual({ bus: 'memory', database: 'pglite', redis: 'memory' });
    expect(output).toContain('embedded (in-memory Redis and bus, PGlite)');
    await checkOutputs(demo, output);
  });

  it('runs on the real Redis, PostgreSQL and Kafka', { timeout: 900_000 }, async () => {
    const matchId = uniqueName('real');
    const env = {
      ...process.env,
      REDIS_URL: serviceUrl('REDIS_URL'),
      DATABASE_URL: serviceUrl('DATABASE_URL'),
      KAFKA_BROKERS: serviceUrl('KAFKA_BROKERS'),
    };
    const { code, output } = await runDemoCli(args(matchId), env);
    expect(code, output).toBe(0);
    const demo = JSON.parse(await readFile(join(outRoot, matchId, 'demo.json'), 'utf8')) as DemoJson;
    expect(demo.services).toEqual({ bus: 'kafka', database: 'pg', redis: 'redis' });
    await checkOutputs(demo, output);
    // The run's own names, none of them left behind.
    expect(demo.names.topicPrefix).toMatch(/^demo-[0-9a-f]{8}$/);
    expect(demo.names.schema).toMatch(/^demo_[0-9a-f]{8}$/);
    expect(demo.names.redisKeyPrefix).toMatch(/^demo:[0-9a-f]{8}:$/);
    const client = new pg.Client({ connectionString: env.DATABASE_URL });
    await client.connect();
    const schemas = await client.query('SELECT 1 FROM information_schema.schemata WHERE schema_name = $1', [
      demo.names.schema,
    ]);
    await client.end();
    expect(schemas.rowCount).toBe(0);
    const redis = new Redis(env.REDIS_URL);
    const keys = await redis.keys(`${demo.names.redisKeyPrefix}*`);
    redis.disconnect();
    expect(keys).toEqual([]);
    const admin = new Kafka({ brokers: env.KAFKA_BROKERS.split(','), logLevel: 0 }).admin();
    await admin.connect();
    const topics = await admin.listTopics();
    await admin.disconnect();
    expect(topics.filter((t) => t.startsWith(`${demo.names.topicPrefix}.`))).toEqual([]);
  });

  it('past --timeout still writes out/<match_id>/ with what exists and the stage it waited on', {
    timeout: 900_000,
  }, async () => {
    const matchId = uniqueName('timeout');
    const env = { ...process.env };
    delete env.REDIS_URL;
    delete env.DATABASE_URL;
    delete env.KAFKA_BROKERS;
    const { code, output } = await runDemoCli([...args(matchId), '--timeout', '0.001'], env);
    expect(code, output).not.toBe(0);
    expect(output).toContain('after --timeout 1 ms');
    const demo = JSON.parse(await readFile(join(outRoot, matchId, 'demo.json'), 'utf8')) as DemoJson & {
      failure: { stage: string | null; reason: string } | null;
    };
    expect(demo.failure?.reason).toContain('still');
    expect(demo.failure?.stage).not.toBeNull();
    expect(existsSync(join(outRoot, matchId, 'report.html'))).toBe(true);
  });

  it('refuses bad input with a clear error and exit status 2', async () => {
    const missing = await runDemoCli(['--cameras', '/nonexistent/a.mp4'], process.env);
    expect(missing.code).toBe(2);
    expect(missing.output).toContain('--cameras: /nonexistent/a.mp4 does not exist');
    // Two cameras without a calibration are self-calibrated; three need one.
    const three = await runDemoCli(['--cameras', `${CLI},${CLI},${CLI}`], process.env);
    expect(three.code).toBe(2);
    expect(three.output).toContain('3 cameras need --calibration');
    const size = await runDemoCli(['--size', 'big'], process.env);
    expect(size.code).toBe(2);
    expect(size.output).toContain('--size big: expected WIDTHxHEIGHT');
  });
});
