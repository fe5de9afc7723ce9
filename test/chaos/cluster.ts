import { readFile } from 'node:fs/promises';
import net from 'node:net';
import {
  type ClusterOptions,
  type ClusterProcessPlan,
  type ClusterProcessRecord,
  type ClusterServicesEnv,
  type ClusterState,
  clusterDown,
  clusterUp,
  compileClusterOptions,
  planCluster,
  startClusterProcess,
  waitClusterReady,
} from '../../deploy/src/cluster/index.ts';
import { isAlive } from '../../deploy/src/services/daemon.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * Liveness knobs shortened for chaos runs (each process gets them): claim
 * lease 6 s (a silent worker loses its task after 6 s), Kafka sessions 6 s,
 * reconciler every 2 s with a 6 s lease, stage retries from 0.5 s capped at
 * 5 s; detect analyses 5 frames per second (2 cores).
 */
export const FAST_LIVENESS_ENV: Record<string, string> = {
  DETECT_ANALYSIS_FPS: '5',
  WORKER_CLAIM_LEASE_MS: '6000',
  WORKER_SESSION_TIMEOUT_MS: '6000',
  ORCHESTRATOR_SESSION_TIMEOUT_MS: '6000',
  ORCHESTRATOR_RECONCILE_CRON: '*/2 * * * * *',
  ORCHESTRATOR_RECONCILER_LEASE_MS: '6000',
  ORCHESTRATOR_RETRY_INITIAL_MS: '500',
  ORCHESTRATOR_RETRY_MAX_MS: '5000',
  LOG_LEVEL: 'info',
};

/** Options of {@link ChaosCluster.start}. */
export interface ChaosClusterOptions {
  /** The private services (ChaosServices.env). */
  services: ClusterServicesEnv;
  /** Working folder of the cluster (one folder per process: log, pid, SE data). */
  workDir: string;
  /** First loopback port (see ClusterOptions.basePort). */
  basePort: number;
  /** @defaultValue 3 */
  orchestrators?: number;
  /** @defaultValue 2 */
  ingestReplicas?: number;
  /** @defaultValue 2 */
  workers?: number;
  /**
   * Variables every process gets on top of the caller's environment: the
   * stages' settings (DETECT_ANALYSIS_FPS, …) and the liveness knobs
   * (WORKER_CLAIM_LEASE_MS, ORCHESTRATOR_SESSION_TIMEOUT_MS, …).
   */
  env?: Record<string, string>;
  /**
   * Also run the cluster's edge node (`edge-1`, deploy/src/cluster): three synthetic cameras
   * recorded in real time, stitched on the edge and uploaded through ingest-1 as one match of
   * this many seconds, which starts once the edge is ready. @defaultValue no edge
   */
  edgeMatchDurationS?: number;
  /** Kafka topic prefix, SQL schema. @defaultValue `chaos`, `chaos` */
  topicPrefix?: string;
  databaseSchema?: string;
  onProgress?: (line: string) => void;
}

function portFree(port: number): Promise<boolean> {
  const server = net.createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A base port whose SE (`+1…+3`), ingest (`+101…`) and orchestrator
 * (`+201…`) ports are all free now, between 20000 and 31999 (below the
 * ephemeral range, where outgoing connections take ports).
 */
export async function freeBasePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 120) * 100;
    const ports = [1, 2, 3, 101, 102, 103, 201, 202, 203].map((offset) => base + offset);
    if ((await Promise.all(ports.map(portFree))).every(Boolean)) return base;
  }
  throw new Error('no free port range for the chaos cluster');
}

/** One fault done to a process, for the report. */
export interface ProcessFault {
  name: string;
  kind: 'kill' | 'stop' | 'cont' | 'restart';
  atMs: number;
}

/**
 * Sets `vars` in `process.env` while `fn` runs (clusterUp reads the services
 * and the stage settings from there), then restores the previous values.
 */
async function withEnv<T>(vars: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/**
 * A local cluster of real processes (deploy/src/cluster: `pnpm polyvision
 * cluster up`) shaped for fault injection: 3 storage elements in 3
 * datacenters, 3 orchestrators, 2 ingest replicas, 2 workers running the
 * REAL stages, against private services. Each process is a daemon in its own
 * session, so a fault reaches its whole process group (a worker's ffmpeg
 * children die with it, as in a container).
 *
 * - `kill(name)`: SIGKILL, then waits until the pid is gone;
 * - `pause(name)` / `resume(name)`: SIGSTOP / SIGCONT (a process that is
 *   alive but silent: heartbeats and leases run out);
 * - `restart(name)`: a fresh process with the same plan (same WORKER_ID,
 *   port, data folder), returned once it is ready.
 */
export class ChaosCluster {
  readonly state: ClusterState;
  readonly options: Readonly<ClusterOptions>;
  readonly faults: ProcessFault[] = [];
  readonly #plans: Map<string, ClusterProcessPlan>;
  readonly #env: Record<string, string>;
  readonly #startedAt = Date.now();

  private constructor(state: ClusterState, options: Readonly<ClusterOptions>, env: Record<string, string>) {
    this.state = state;
    this.options = options;
    this.#env = env;
    const plans = planCluster(options, state.services, {
      storageToken: state.storageToken,
      operatorToken: state.operatorToken,
      edgeMatchId: state.edgeMatchId ?? '',
    });
    this.#plans = new Map(plans.map((p) => [p.name, p]));
  }

  /**
   * Starts the cluster (clusterUp) and returns once every process is ready.
   *
   * @throws PolyvisionError `cluster_start_failed` (with the failing process's log tail), `cluster_port_in_use`.
   */
  static async start(options: ChaosClusterOptions): Promise<ChaosCluster> {
    const env = { ...(options.env ?? {}) };
    const clusterOptions: Partial<ClusterOptions> = {
      workDir: options.workDir,
      basePort: options.basePort,
      orchestratorReplicas: options.orchestrators ?? 3,
      ingestReplicas: options.ingestReplicas ?? 2,
      workers: options.workers ?? 2,
      testStages: false,
      edge: options.edgeMatchDurationS !== undefined,
      ...(options.edgeMatchDurationS !== undefined ? { edgeMatchDurationS: options.edgeMatchDurationS } : {}),
      topicPrefix: options.topicPrefix ?? 'chaos',
      databaseSchema: options.databaseSchema ?? 'chaos',
      storageCapacityLimitBytes: 2 * 1024 ** 3,
      stopGraceMs: 10_000,
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    };
    const compiled = compileClusterOptions(clusterOptions);
    const { state } = await withEnv({ ...env, ...options.services }, () => clusterUp(clusterOptions));
    return new ChaosCluster(state, compiled, env);
  }

  /** The record of a process by name (`orchestrator-1`, `worker-2`, `se-1-dc-east`, `ingest-1`, …). */
  process(name: string): ClusterProcessRecord {
    const record = this.state.processes.find((p) => p.name === name);
    if (!record) throw new Error(`no process ${name} in the chaos cluster`);
    return record;
  }

  /** Names of the processes of one role. */
  names(role: ClusterProcessRecord['role']): string[] {
    return this.state.processes.filter((p) => p.role === role).map((p) => p.name);
  }

  #signal(name: string, signal: NodeJS.Signals, kind: ProcessFault['kind']): void {
    const { pid } = this.process(name);
    try {
      process.kill(-pid, signal); // its process group: the daemon leads its own session
    } catch {
      process.kill(pid, signal);
    }
    this.faults.push({ name, kind, atMs: Date.now() - this.#startedAt });
  }

  /**
   * kill -9 of the process (and its children); resolves once the pid is gone
   * and its port is free again (a child of the group may outlive the leader by
   * a moment, still holding the listening socket that a restart needs).
   */
  async kill(name: string): Promise<void> {
    const { pid, port } = this.process(name);
    this.#signal(name, 'SIGKILL', 'kill');
    await waitFor(async () => !(await isAlive(pid)), { intervalMs: 50, message: `${name} (pid ${pid}) to exit` });
    if (port !== null)
      await waitFor(() => portFree(port), { intervalMs: 50, message: `${name}'s port ${port} to be free` });
  }

  /** SIGSTOP: the process stays alive but does nothing (no heartbeats, no answers). */
  pause(name: string): void {
    this.#signal(name, 'SIGSTOP', 'stop');
  }

  /** SIGCONT after {@link pause}. */
  resume(name: string): void {
    this.#signal(name, 'SIGCONT', 'cont');
  }

  /**
   * Starts the process again from its plan (same id, port and folder) and
   * waits until it is ready. The process must be down (kill it first).
   */
  async restart(name: string): Promise<ClusterProcessRecord> {
    const plan = this.#plans.get(name);
    if (!plan) throw new Error(`no process ${name} in the chaos cluster`);
    const record = await startClusterProcess({ ...plan, env: { ...this.#env, ...plan.env } });
    const index = this.state.processes.findIndex((p) => p.name === name);
    this.state.processes[index] = record;
    await waitClusterReady([record], 180_000);
    this.faults.push({ name, kind: 'restart', atMs: Date.now() - this.#startedAt });
    return record;
  }

  /** The log of a process since its last start. */
  async log(name: string): Promise<string> {
    const record = this.process(name);
    const text = await readFile(record.logFile, 'utf8').catch(() => '');
    return text.slice(record.logStartBytes);
  }

  /**
   * Stops every process (clusterDown, after SIGCONT to any paused one);
   * removes the working folder unless `CHAOS_KEEP_DIR=1` (logs for a post-mortem).
   */
  async close(): Promise<void> {
    for (const p of this.state.processes) {
      if (await isAlive(p.pid)) {
        try {
          process.kill(-p.pid, 'SIGCONT');
        } catch {}
      }
    }
    await clusterDown(this.options, { purge: process.env.CHAOS_KEEP_DIR !== '1' });
    if (process.env.CHAOS_KEEP_DIR === '1') process.stderr.write(`[chaos] logs kept in ${this.options.workDir}\n`);
  }
}
