/**
 * `pnpm polyvision cluster`: the local multi-process cluster on the real
 * services. It starts (3 SEs in 3 datacenters, 2 orchestrators, 2 ingest, 1
 * worker, 1 edge on synthetic cameras), takes one short synthetic panorama
 * through a real tus 1.0.0 upload on an ingest replica and the edge's own
 * recorded match through the edge's uploader; the jobs run through the
 * orchestrators and the worker to `completed`, and `down` leaves no process
 * behind.
 *
 * The first cluster's worker runs the counting test double of each stage
 * (`--test-stages`); a second, edge-less cluster runs the REAL stages on a
 * 3 s synthetic panorama: inputs read from the storage elements, outputs
 * written back to them and to the file catalog (core/src/workers/artifacts).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { resolveFfmpegPath } from '@polyvision/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestRedis,
  createTestSchema,
  deleteKafkaPrefix,
  type TestRedis,
  type TestSchema,
  uniqueName,
  waitFor,
} from '../../test/support/index.ts';
import {
  type ClusterOptions,
  type ClusterState,
  clusterDown,
  clusterStatus,
  clusterUp,
  findProcessesInFolder,
} from '../src/cluster/index.ts';
import { repoRoot } from '../src/services/paths.ts';

const run = promisify(execFile);

async function portFree(port: number): Promise<boolean> {
  const server = net.createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A base port whose 3 SE, 2 ingest and 2 orchestrator ports are all free now. */
async function freeBasePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    // Below the ephemeral port range (32768–60999), where outgoing connections take ports.
    const base = 20_000 + Math.floor(Math.random() * 120) * 100;
    const ports = [1, 2, 3, 101, 102, 201, 202].map((offset) => base + offset);
    if ((await Promise.all(ports.map(portFree))).every(Boolean)) return base;
  }
  throw new Error('no free port range');
}

/** tus `Upload-Metadata`: comma-separated `key base64(value)` pairs (tus 1.0.0, Creation extension). */
function uploadMetadata(fields: Record<string, string>): string {
  return Object.entries(fields)
    .map(([key, value]) => `${key} ${Buffer.from(value).toString('base64')}`)
    .join(',');
}

/**
 * Polls the orchestrator's `GET /api/v1/jobs/:id` until the job is completed
 * or failed and returns it. @throws the waitFor timeout error.
 */
async function finishedJob<T extends { status: string }>(
  orchestratorUrl: string | null | undefined,
  jobId: string,
  token: string,
  options: { timeoutMs: number; intervalMs: number },
): Promise<T | undefined> {
  let job: T | undefined;
  await waitFor(async () => {
    const response = await fetch(`${orchestratorUrl}/api/v1/jobs/${jobId}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    if (response.status !== 200) return false;
    job = (await response.json()) as T;
    return job.status === 'completed' || job.status === 'failed';
  }, options);
  return job;
}

describe('local cluster', () => {
  let options: Partial<ClusterOptions>;
  let schema: TestSchema;
  let redis: TestRedis;
  let state: ClusterState;
  const progress: string[] = [];
  const topicPrefix = uniqueName('cluster');

  beforeAll(async () => {
    schema = await createTestSchema('cluster');
    redis = await createTestRedis('cluster');
    options = {
      workDir: path.join(tmpdir(), uniqueName('cluster')),
      basePort: await freeBasePort(),
      testStages: true,
      edge: true,
      edgeMatchDurationS: 8,
      topicPrefix,
      databaseSchema: schema.schema,
      redisKeyPrefix: redis.prefix,
      storageCapacityLimitBytes: 256 * 1024 ** 2,
      onProgress: (line) => progress.push(line),
    };
  });

  afterAll(async () => {
    if (options) await clusterDown(options, { purge: true }).catch(() => {});
    await deleteKafkaPrefix(topicPrefix);
    await redis?.close();
    await schema?.close();
  });

  it('starts 3 SEs, 2 orchestrators, 2 ingest, 1 worker and 1 edge, all ready; a second up keeps them', async () => {
    const up = await clusterUp(options);
    state = up.state;
    expect(up.outcome).toBe('started');
    expect(state.processes.map((p) => p.name)).toEqual([
      'se-1-dc-east',
      'se-2-dc-west',
      'se-3-dc-north',
      'orchestrator-1',
      'orchestrator-2',
      'ingest-1',
      'ingest-2',
      'worker-1',
      'edge-1',
    ]);
    expect(state.edgeToken).toMatch(/\S{20,}/);
    const status = await clusterStatus(options);
    expect(status?.processes.map((p) => [p.name, p.alive, p.ready])).toEqual(
      state.processes.map((p) => [p.name, true, true]),
    );
    // Each SE reports its own datacenter.
    const locations = await Promise.all(
      state.processes
        .filter((p) => p.role === 'storage-element')
        .map(async (p) => {
          const response = await fetch(`${p.url}/api/v1/capacity`, {
            headers: { authorization: `Bearer ${state.storageToken}` },
          });
          return ((await response.json()) as { location: string }).location;
        }),
    );
    expect(locations).toEqual(['dc-east', 'dc-west', 'dc-north']);

    const again = await clusterUp(options);
    expect(again.outcome).toBe('running');
    expect(again.state.processes.map((p) => p.pid)).toEqual(state.processes.map((p) => p.pid));
  }, 240_000);

  it('takes a synthetic panorama uploaded with tus through the orchestrators and the worker to a completed job', async () => {
    const file = path.join(options.workDir as string, 'panorama.mp4');
    await run(resolveFfmpegPath(), [
      ...['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc2=size=640x160:rate=10:duration=2'],
      ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-y', file],
    ]);
    const body = await readFile(file);
    const sha256 = createHash('sha256').update(body).digest('hex');
    const matchId = uniqueName('match');
    const ingest = state.processes.filter((p) => p.role === 'ingest');
    const auth = { authorization: `Bearer ${state.edgeToken}`, 'tus-resumable': '1.0.0' };

    const created = await fetch(`${ingest[0]?.url}/api/v1/uploads`, {
      method: 'POST',
      headers: {
        ...auth,
        'upload-length': String(body.length),
        'upload-metadata': uploadMetadata({
          organization_id: state.organizationId,
          match_id: matchId,
          kind: 'panorama',
          filename: 'panorama.mp4',
          sha256,
        }),
      },
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const location = created.headers.get('location') as string;
    const uploadId = location.split('/').at(-1) as string;
    // The bytes go to the OTHER replica: uploads are not tied to the replica that created them.
    const patched = await fetch(new URL(location, `${ingest[1]?.url}/api/v1/uploads/`), {
      method: 'PATCH',
      headers: { ...auth, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
      body,
    });
    expect(patched.status, await patched.clone().text()).toBe(204);
    expect(patched.headers.get('upload-offset')).toBe(String(body.length));

    const { rows } = await schema.pool.query<{ storage_id: string; size_bytes: string; sha256: string }>(
      'SELECT storage_id, size_bytes, sha256 FROM files WHERE match_id = $1',
      [matchId],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ size_bytes: String(body.length), sha256 });
    expect(['se-1-dc-east', 'se-2-dc-west', 'se-3-dc-north']).toContain(rows[0]?.storage_id);

    const jobId = `job-${uploadId}`;
    const orchestrator = state.processes.find((p) => p.role === 'orchestrator');
    const job = await finishedJob<{ status: string; stages: { stage: string; status: string }[] }>(
      orchestrator?.url,
      jobId,
      state.edgeToken,
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    expect(job?.status, JSON.stringify(job)).toBe('completed');
    expect(job?.stages.length).toBeGreaterThan(0);
    expect(job?.stages.every((s) => s.status === 'completed')).toBe(true);
    // The counting test double ran every stage of the job, in the worker of this cluster.
    const executions = await schema.pool.query<{ n: string }>(
      'SELECT count(DISTINCT stage) AS n FROM test_stage_executions WHERE job_id = $1',
      [jobId],
    );
    expect(Number(executions.rows[0]?.n)).toBe(job?.stages.length);
  }, 180_000);

  it('the edge records its match from synthetic cameras, stitches, uploads, and the match completes as one job', async () => {
    const matchId = state.edgeMatchId as string;
    expect(matchId).toMatch(/^cluster-/);
    const orchestrator = state.processes.find((p) => p.role === 'orchestrator');
    type MatchJob = {
      job_id: string;
      status: string;
      kind: string;
      match: { live: boolean; ended_by: string | null; segments_received: number; gaps: number[] } | null;
    };
    let jobs: MatchJob[] = [];
    // 8 s of match in 4 s wall-clock-aligned segments: two or three panoramas, one match job, closed by the
    // edge's end marker. First the edge finishes recording and uploading, then the match job finishes.
    const edge = state.processes.find((p) => p.role === 'edge');
    await waitFor(
      async () => {
        const status = (await (
          await fetch(`${edge?.url}/api/v1/status`, { headers: { authorization: `Bearer ${state.operatorToken}` } })
        ).json()) as {
          recording: { match_id: string | null; panorama_segments: number };
          upload: { state: string };
          schedule: { recording_until: string }[];
        };
        const until = Date.parse(status.schedule[0]?.recording_until ?? '');
        return (
          Date.now() > until &&
          status.recording.match_id === null &&
          status.recording.panorama_segments >= 2 &&
          status.upload.state === 'idle'
        );
      },
      { timeoutMs: 120_000, intervalMs: 1_000 },
    );
    let files = 0;
    await waitFor(
      async () => {
        const { rows } = await schema.pool.query<{ n: string }>(
          "SELECT count(*) AS n FROM files WHERE match_id = $1 AND kind = 'panorama'",
          [matchId],
        );
        files = Number(rows[0]?.n);
        const response = await fetch(`${orchestrator?.url}/api/v1/jobs?match_id=${matchId}`, {
          headers: { authorization: `Bearer ${state.edgeToken}` },
        });
        jobs = ((await response.json()) as { jobs: MatchJob[] }).jobs;
        return files >= 2 && jobs.length > 0 && jobs.every((j) => j.status === 'completed' || j.status === 'failed');
      },
      { timeoutMs: 120_000, intervalMs: 1_000 },
    );
    expect(jobs).toHaveLength(1);
    const [job] = jobs as [MatchJob];
    expect(job.status).toBe('completed');
    expect(job.kind).toBe('match');
    expect(job.match).toMatchObject({ live: false, ended_by: 'marker', segments_received: files, gaps: [] });
  }, 240_000);

  it('a start that fails (a port taken) says why and leaves nothing running', async () => {
    const failing = {
      ...options,
      workDir: path.join(tmpdir(), uniqueName('cluster-fail')),
      basePort: await freeBasePort(),
      edge: false,
    };
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen((failing.basePort as number) + 2, '127.0.0.1', resolve));
    try {
      await expect(clusterUp(failing)).rejects.toMatchObject({
        code: 'cluster_port_in_use',
        message: expect.stringContaining(`se-2-dc-west: port ${(failing.basePort as number) + 2}`),
      });
      expect(await findProcessesInFolder(failing.workDir)).toEqual([]);
      expect(await clusterStatus(failing)).toBeNull();
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
      await rm(failing.workDir, { recursive: true, force: true });
    }
  }, 60_000);

  it('down stops every process and leaves nothing running in the cluster folder', async () => {
    const pids = state.processes.map((p) => p.pid);
    const down = await clusterDown(options);
    expect(Object.keys(down.stopped).sort()).toEqual(state.processes.map((p) => p.name).sort());
    for (const [name, outcome] of Object.entries(down.stopped))
      expect(outcome, `${name}\n${progress.join('\n')}`).toBe('stopped');
    expect(down.leftoversKilled).toEqual([]);
    for (const pid of pids) {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
      expect(stat === null || stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z'), `pid ${pid}`).toBe(true);
    }
    expect(await findProcessesInFolder(options.workDir as string)).toEqual([]);
    for (const p of state.processes) if (p.port !== null) expect(await portFree(p.port), p.name).toBe(true);
    expect(await clusterStatus(options)).toBeNull();
    await rm(options.workDir as string, { recursive: true, force: true });
  }, 120_000);
});

describe('local cluster with the real stages', () => {
  let options: Partial<ClusterOptions>;
  let schema: TestSchema;
  let redis: TestRedis;
  let state: ClusterState;
  const topicPrefix = uniqueName('cluster-real');
  const savedFps = process.env.DETECT_ANALYSIS_FPS;

  beforeAll(async () => {
    schema = await createTestSchema('cluster_real');
    redis = await createTestRedis('cluster-real');
    // The workers inherit the environment of `cluster up`: a low analysis rate keeps detect short on 2 cores.
    process.env.DETECT_ANALYSIS_FPS = '5';
    options = {
      workDir: path.join(tmpdir(), uniqueName('cluster-real')),
      basePort: await freeBasePort(),
      testStages: false,
      edge: false,
      topicPrefix,
      databaseSchema: schema.schema,
      redisKeyPrefix: redis.prefix,
      storageCapacityLimitBytes: 256 * 1024 ** 2,
    };
  });

  afterAll(async () => {
    if (savedFps === undefined) delete process.env.DETECT_ANALYSIS_FPS;
    else process.env.DETECT_ANALYSIS_FPS = savedFps;
    if (options) {
      await clusterDown(options, { purge: true }).catch(() => {});
      expect(await findProcessesInFolder(options.workDir as string)).toEqual([]);
    }
    await deleteKafkaPrefix(topicPrefix);
    await redis?.close();
    await schema?.close();
  }, 120_000);

  it('a synthetic panorama goes through detect, track, vcam, analyze and encode; every output is on an SE and in the catalog once', async () => {
    const up = await clusterUp(options);
    state = up.state;
    const clip = path.join(options.workDir as string, 'synthetic');
    await run(process.execPath, [
      path.join(repoRoot, 'deploy', 'src', 'cli', 'main.ts'),
      ...['synth-match', '--out', clip, '--cameras', '3', '--duration', '3', '--fps', '10'],
      ...['--width', '640', '--height', '360', '--panorama', '--quiet'],
    ]);
    const body = await readFile(path.join(clip, 'panorama.mp4'));
    const sha256 = createHash('sha256').update(body).digest('hex');
    const ingest = state.processes.find((p) => p.role === 'ingest');
    const auth = { authorization: `Bearer ${state.edgeToken}`, 'tus-resumable': '1.0.0' };
    const created = await fetch(`${ingest?.url}/api/v1/uploads`, {
      method: 'POST',
      headers: {
        ...auth,
        'upload-length': String(body.length),
        'upload-metadata': uploadMetadata({
          organization_id: state.organizationId,
          match_id: uniqueName('match'),
          kind: 'panorama',
          filename: 'panorama.mp4',
          sha256,
        }),
      },
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const location = created.headers.get('location') as string;
    const patched = await fetch(new URL(location, `${ingest?.url}/api/v1/uploads/`), {
      method: 'PATCH',
      headers: { ...auth, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
      body,
    });
    expect(patched.status, await patched.clone().text()).toBe(204);

    const jobId = `job-${location.split('/').at(-1)}`;
    const orchestrator = state.processes.find((p) => p.role === 'orchestrator');
    type Ref = { kind: string; storage_id: string; object_key: string; size_bytes: number; sha256: string };
    const job = await finishedJob<{ status: string; stages: { stage: string; status: string; outputs: Ref[] }[] }>(
      orchestrator?.url,
      jobId,
      state.edgeToken,
      { timeoutMs: 240_000, intervalMs: 1_000 },
    );
    expect(job?.status, JSON.stringify(job?.stages.map((s) => [s.stage, s.status]))).toBe('completed');
    expect(job?.stages.map((s) => s.stage).sort()).toEqual(['analyze', 'detect', 'encode', 'track', 'vcam']);
    const ses = new Map(state.processes.filter((p) => p.role === 'storage-element').map((p) => [p.name, p.url]));
    const outputs = job?.stages.flatMap((s) => s.outputs) ?? [];
    expect(outputs.length).toBeGreaterThanOrEqual(5);
    for (const ref of outputs) {
      // On an SE of the cluster, with the bytes the ref promises.
      const response = await fetch(`${ses.get(ref.storage_id)}/api/v1/files/${ref.object_key}`, {
        method: 'HEAD',
        headers: { authorization: `Bearer ${state.storageToken}` },
      });
      expect(response.status, `${ref.kind} ${ref.storage_id}/${ref.object_key}`).toBe(200);
      expect(response.headers.get('x-content-sha256')).toBe(ref.sha256);
    }
    // The catalog holds each output of the job once (HLS segments included), where the refs say.
    const { rows } = await schema.pool.query<{ file_id: string; storage_id: string; n: string }>(
      'SELECT file_id, storage_id, count(*) OVER (PARTITION BY output_key) AS n FROM files WHERE job_id = $1',
      [jobId],
    );
    expect(rows.every((r) => r.n === '1')).toBe(true);
    const catalogued = new Map(rows.map((r) => [r.file_id, r.storage_id]));
    for (const ref of outputs) expect(catalogued.get(ref.object_key)).toBe(ref.storage_id);
    const detections = outputs.find((r) => r.kind === 'detections') as Ref;
    const text = await (
      await fetch(`${ses.get(detections.storage_id)}/api/v1/files/${detections.object_key}`, {
        headers: { authorization: `Bearer ${state.storageToken}` },
      })
    ).text();
    expect(text.split('\n').filter(Boolean).length).toBeGreaterThan(1);
  }, 420_000);
});

describe('pnpm polyvision cluster (CLI)', () => {
  const cli = (args: string[], env: Record<string, string> = {}) =>
    run(process.execPath, [path.join(repoRoot, 'deploy', 'src', 'cli', 'main.ts'), 'cluster', ...args], {
      env: { ...process.env, ...env },
    }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    );

  it('status without a recorded cluster says so and exits 1', async () => {
    const workDir = path.join(tmpdir(), uniqueName('cluster-empty'));
    const result = await cli(['status'], { POLYVISION_CLUSTER_DIR: workDir });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('no cluster recorded');
  });

  it('an unknown action or a bad option is a usage error (exit 2) with the help', async () => {
    const unknown = await cli(['sideways']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('expected one of up, down, status');
    const badWorkers = await cli(['up', '--workers', 'many']);
    expect(badWorkers.code).toBe(2);
    expect(badWorkers.stderr).toContain('--workers must be an integer');
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('POLYVISION_CLUSTER_BASE_PORT');
  });
});
