import { randomBytes } from 'node:crypto';
import { access, mkdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PolyvisionError } from '@polyvision/shared';
import { isAlive, type StopOutcome, spawnDaemon, stopProcess } from '../services/daemon.ts';
import { exec } from '../services/exec.ts';
import { servicesUp } from '../services/index.ts';
import { withWorkDirLock } from '../services/lock.ts';
import { logTail } from '../services/log-tail.ts';
import { pollUntil } from '../services/poll.ts';
import { isPortOpen } from '../services/port.ts';
import { type ClusterProcessStatus, probeProcess } from './health.ts';
import { findProcessesInFolder } from './leftovers.ts';
import { type ClusterOptions, compileClusterOptions } from './options.ts';
import {
  type ClusterProcessRecord,
  type ClusterState,
  readClusterState,
  removeClusterState,
  writeClusterState,
} from './state.ts';
import {
  CLI_MAIN,
  type ClusterProcessPlan,
  type ClusterServicesEnv,
  edgeConfig,
  edgeConfigPath,
  planCluster,
} from './topology.ts';

const LOCK_TIMEOUT_MS = 5 * 60_000;
const SERVICE_VARIABLES = ['REDIS_URL', 'DATABASE_URL', 'KAFKA_BROKERS'] as const;
/** Stop order: no new uploads first, storage last. */
const STOP_ORDER = ['edge', 'ingest', 'orchestrator', 'worker', 'storage-element'] as const;

export interface ClusterUpResult {
  /** `started`: this call started it; `running`: every process of the recorded cluster was alive and ready. */
  outcome: 'started' | 'running';
  state: ClusterState;
  /** Wall time of `up`, in milliseconds. */
  elapsedMs: number;
}

export interface ClusterDownResult {
  /** What happened to each recorded process. */
  stopped: Record<string, StopOutcome>;
  /** Pids of processes found running in the working folder after the recorded ones stopped, then killed. */
  leftoversKilled: number[];
}

/** The real services: from the environment when all three variables are set, else `services up`. */
async function resolveServices(onProgress: (line: string) => void): Promise<ClusterServicesEnv> {
  if (SERVICE_VARIABLES.every((name) => process.env[name])) {
    return Object.fromEntries(
      SERVICE_VARIABLES.map((name) => [name, process.env[name] as string]),
    ) as ClusterServicesEnv;
  }
  onProgress('REDIS_URL, DATABASE_URL or KAFKA_BROKERS unset: running services up');
  const { env } = await servicesUp({ onProgress });
  return { REDIS_URL: env.REDIS_URL, DATABASE_URL: env.DATABASE_URL, KAFKA_BROKERS: env.KAFKA_BROKERS };
}

/** The caller's environment without vitest's markers (they silence the services' logs). */
function baseEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!name.startsWith('VITEST')) env[name] = value;
  env.LOG_LEVEL = process.env.POLYVISION_CLUSTER_LOG_LEVEL ?? 'info';
  return env;
}

/**
 * Starts one planned process as a daemon in its own session (log and pid file
 * in its folder). Returns at once; `waitReady` tells when it serves.
 *
 * @throws PolyvisionError `cluster_port_in_use` when its port is taken.
 */
export async function startProcess(plan: ClusterProcessPlan): Promise<ClusterProcessRecord> {
  await mkdir(plan.dir, { recursive: true });
  if (plan.port !== null && (await isPortOpen(plan.port))) {
    throw new PolyvisionError(
      'cluster_port_in_use',
      `${plan.name}: port ${plan.port} on 127.0.0.1 is taken; stop what uses it or move the cluster with POLYVISION_CLUSTER_BASE_PORT`,
    );
  }
  const logFile = path.join(plan.dir, `${plan.name}.log`);
  const logStartBytes = await stat(logFile).then(
    (s) => s.size,
    () => 0,
  );
  const pid = await spawnDaemon({
    command: process.execPath,
    args: [CLI_MAIN, ...plan.args],
    cwd: plan.dir,
    logFile,
    pidFile: path.join(plan.dir, `${plan.name}.pid`),
    env: { ...baseEnv(), ...plan.env },
  });
  return {
    name: plan.name,
    role: plan.role,
    pid,
    port: plan.port,
    url: plan.url,
    healthToken: plan.healthToken,
    logFile,
    logStartBytes,
  };
}

/**
 * Waits until every process is ready.
 *
 * @throws PolyvisionError `cluster_start_failed` naming the first process that
 *   exited or was not ready in time, with its log's tail.
 */
export async function waitReady(records: readonly ClusterProcessRecord[], timeoutMs: number): Promise<void> {
  const pending = new Set(records);
  let failure: { record: ClusterProcessRecord; why: string } | undefined;
  const done = await pollUntil(
    async () => {
      for (const record of pending) {
        const status = await probeProcess(record, 2_000);
        if (status.failed) {
          failure = { record, why: status.alive ? `failed during start (${status.detail})` : 'exited during start' };
          return true;
        }
        if (status.ready) pending.delete(record);
      }
      return pending.size === 0;
    },
    { timeoutMs, intervalMs: 300 },
  );
  if (!failure && !done) {
    const record = [...pending][0] as ClusterProcessRecord;
    failure = { record, why: `was not ready within ${timeoutMs} ms` };
  }
  if (failure) {
    throw new PolyvisionError(
      'cluster_start_failed',
      `${failure.record.name} ${failure.why}; last lines of ${failure.record.logFile}:\n${await logTail(failure.record.logFile)}`,
    );
  }
}

/** Creates an edge token with the real CLI (`ingest token create --json`). */
async function createEdgeToken(options: Readonly<ClusterOptions>, services: ClusterServicesEnv): Promise<string> {
  const { stdout } = await exec(
    process.execPath,
    [CLI_MAIN, 'ingest', 'token', 'create', '--organization', options.organizationId, '--edge', 'cluster', '--json'],
    {
      cwd: options.workDir,
      env: { ...baseEnv(), ...services, DATABASE_SCHEMA: options.databaseSchema },
      timeoutMs: 60_000,
    },
  );
  const created = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as { token?: string };
  if (!created.token)
    throw new PolyvisionError('cluster_start_failed', `ingest token create printed no token: ${stdout}`);
  return created.token;
}

/**
 * Renders the synthetic three-camera clip the edge films, once
 * (`<workDir>/synthetic/clip`; `manifest.json` is written last by synth-match,
 * so a folder without it is redone). The edge loops it.
 */
async function ensureSyntheticClip(options: Readonly<ClusterOptions>): Promise<string> {
  const clipDir = path.join(options.workDir, 'synthetic', 'clip');
  const done = await access(path.join(clipDir, 'manifest.json')).then(
    () => true,
    () => false,
  );
  if (done) return clipDir;
  options.onProgress(`rendering a synthetic 3-camera clip into ${clipDir}`);
  await rm(clipDir, { recursive: true, force: true });
  await exec(
    process.execPath,
    [CLI_MAIN, 'synth-match', '--out', clipDir, '--cameras', '3', '--duration', '8', '--width', '640'],
    { cwd: options.workDir, env: baseEnv(), timeoutMs: 10 * 60_000 },
  );
  return clipDir;
}

async function statusesOf(state: ClusterState, timeoutMs: number): Promise<ClusterProcessStatus[]> {
  return Promise.all(state.processes.map((record) => probeProcess(record, timeoutMs)));
}

async function stopRecorded(
  state: ClusterState | null,
  workDir: string,
  graceMs: number,
  onProgress: (line: string) => void,
): Promise<ClusterDownResult> {
  const stopped: Record<string, StopOutcome> = {};
  for (const role of STOP_ORDER) {
    const tier = state?.processes.filter((p) => p.role === role) ?? [];
    await Promise.all(
      tier.map(async (record) => {
        if (!(await isAlive(record.pid))) {
          stopped[record.name] = 'not_running';
          return;
        }
        onProgress(`${record.name}: stopping (pid ${record.pid})`);
        const startedAt = performance.now();
        stopped[record.name] = await stopProcess(record.pid, graceMs);
        const tookMs = Math.round(performance.now() - startedAt);
        onProgress(
          stopped[record.name] === 'killed'
            ? `${record.name}: still running ${graceMs} ms after SIGTERM, killed (log: ${record.logFile})`
            : `${record.name}: stopped in ${tookMs} ms`,
        );
      }),
    );
  }
  const leftovers = await findProcessesInFolder(workDir);
  for (const pid of leftovers) {
    onProgress(`killing leftover process ${pid} (working directory in ${workDir})`);
    await stopProcess(pid, 5_000);
  }
  await removeClusterState(workDir);
  return { stopped, leftoversKilled: leftovers };
}

/**
 * Starts a local cluster as separate processes on 127.0.0.1 (topology in
 * topology.ts): storage elements, then the first orchestrator (topics,
 * migrations), then the other orchestrators, the ingest replicas and the
 * workers, each wave ready (`/health/ready`, or the worker's `started` line)
 * before the next. Then creates an edge token and, with `edge`, starts an
 * edge node that records one match from synthetic cameras. Processes are daemons in their
 * own sessions; pids, URLs and tokens go to `<workDir>/cluster.json`, logs to
 * `<workDir>/<name>/<name>.log`. Idempotent: a recorded cluster whose
 * processes are all alive and ready is kept; a partial one is stopped and
 * started afresh. Real services come from REDIS_URL, DATABASE_URL and
 * KAFKA_BROKERS when all are set, else from `services up`.
 *
 * @throws PolyvisionError `cluster_start_failed` (with the log's tail; what
 *   had started is stopped again), `cluster_port_in_use`, `services_locked`
 *   (another up/down holds the folder for 5 minutes), the codes of `services up`, ConfigError / ValidationError for bad options.
 */
export async function clusterUp(options: Partial<ClusterOptions> = {}): Promise<ClusterUpResult> {
  const compiled = compileClusterOptions(options);
  const started = performance.now();
  const { onProgress, workDir } = compiled;
  return withWorkDirLock(workDir, LOCK_TIMEOUT_MS, onProgress, async () => {
    const previous = await readClusterState(workDir);
    if (previous) {
      const statuses = await statusesOf(previous, 3_000);
      if (statuses.every((s) => s.ready)) {
        return { outcome: 'running', state: previous, elapsedMs: Math.round(performance.now() - started) };
      }
      onProgress(
        `recorded cluster is partly down (${statuses
          .filter((s) => !s.ready)
          .map((s) => `${s.name}: ${s.detail}`)
          .join(', ')}); restarting it`,
      );
    }
    await stopRecorded(previous, workDir, compiled.stopGraceMs, onProgress);

    const services = await resolveServices(onProgress);
    const storageToken = randomBytes(24).toString('base64url');
    const edgeMatchId = `cluster-${Date.now().toString(36)}`;
    const operatorToken = randomBytes(24).toString('base64url');
    const plans = planCluster(compiled, services, { storageToken, operatorToken, edgeMatchId });
    await mkdir(workDir, { recursive: true });
    const clipDir = compiled.edge ? await ensureSyntheticClip(compiled) : null;
    const state: ClusterState = {
      version: 1,
      startedAt: new Date().toISOString(),
      services,
      topicPrefix: compiled.topicPrefix,
      databaseSchema: compiled.databaseSchema,
      redisKeyPrefix: compiled.redisKeyPrefix,
      organizationId: compiled.organizationId,
      edgeToken: '',
      edgeMatchId: compiled.edge ? edgeMatchId : null,
      storageToken,
      operatorToken,
      testStages: compiled.testStages,
      processes: [],
    };
    try {
      for (const wave of [0, 1, 2, 3] as const) {
        if (wave === 3) {
          state.edgeToken = await createEdgeToken(compiled, services);
          await writeClusterState(workDir, state);
          if (!clipDir) break;
          const ingestUrl = state.processes.find((p) => p.role === 'ingest')?.url as string;
          await mkdir(path.dirname(edgeConfigPath(compiled)), { recursive: true });
          const config = edgeConfig(compiled, {
            clipDir,
            ingestUrl,
            edgeToken: state.edgeToken,
            statusToken: operatorToken,
          });
          await writeFile(edgeConfigPath(compiled), `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
        }
        const records: ClusterProcessRecord[] = [];
        for (const plan of plans.filter((p) => p.wave === wave)) {
          onProgress(`${plan.name}: starting${plan.url ? ` on ${plan.url}` : ''}`);
          const record = await startProcess(plan);
          records.push(record);
          state.processes.push(record);
          await writeClusterState(workDir, state); // recorded at once, so down finds it even if up dies
        }
        await waitReady(records, compiled.readyTimeoutMs);
        onProgress(`${records.map((r) => r.name).join(', ')}: ready`);
      }
    } catch (error) {
      onProgress(`start failed; stopping what started`);
      await stopRecorded(state, workDir, 5_000, onProgress);
      throw error;
    }
    return { outcome: 'started', state, elapsedMs: Math.round(performance.now() - started) };
  });
}

/**
 * Probes every recorded process (pid alive, `/health/ready`). Never throws for a process that is down.
 *
 * @returns null when no cluster is recorded in the working folder.
 */
export async function clusterStatus(
  options: Partial<ClusterOptions> = {},
  timeoutMs = 3_000,
): Promise<{ state: ClusterState; processes: ClusterProcessStatus[] } | null> {
  const compiled = compileClusterOptions(options);
  const state = await readClusterState(compiled.workDir);
  if (!state) return null;
  return { state, processes: await statusesOf(state, timeoutMs) };
}

/**
 * Stops the cluster: ingest replicas first, then orchestrators, workers and
 * storage elements, each SIGTERM (a graceful close) and SIGKILL after
 * `stopGraceMs`, to the process group; then kills any process still running
 * with its working directory in the cluster's folder; removes `cluster.json`
 * (logs and SE data stay; `purge` removes the folder). The real services stay up.
 */
export async function clusterDown(
  options: Partial<ClusterOptions> = {},
  { purge = false }: { purge?: boolean } = {},
): Promise<ClusterDownResult> {
  const compiled = compileClusterOptions(options);
  const result = await withWorkDirLock(compiled.workDir, LOCK_TIMEOUT_MS, compiled.onProgress, async () =>
    stopRecorded(await readClusterState(compiled.workDir), compiled.workDir, compiled.stopGraceMs, compiled.onProgress),
  );
  if (purge) {
    await rm(compiled.workDir, { recursive: true, force: true });
  }
  return result;
}
