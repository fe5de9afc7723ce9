import path from 'node:path';
import { repoRoot } from '../services/paths.ts';
import type { ClusterOptions } from './options.ts';

/** The CLI every cluster process runs: `node deploy/src/cli/main.ts <command>`. */
export const CLI_MAIN = path.join(repoRoot, 'deploy', 'src', 'cli', 'main.ts');

/** What a cluster process is. */
export type ClusterRole = 'storage-element' | 'orchestrator' | 'ingest' | 'worker' | 'edge';

/** The real services the cluster runs against (from `pnpm polyvision services up` or the environment). */
export type ClusterServicesEnv = Record<'REDIS_URL' | 'DATABASE_URL' | 'KAFKA_BROKERS', string>;

/** One process of the cluster, before it starts. */
export interface ClusterProcessPlan {
  /** Unique name, also its folder under the working folder: `se-1-dc-east`, `ingest-1`, … */
  name: string;
  role: ClusterRole;
  /** Arguments after `node deploy/src/cli/main.ts`. */
  args: string[];
  /** Variables set on top of the caller's environment. */
  env: Record<string, string>;
  /** Its folder: pid file, log, working directory (and SE data). */
  dir: string;
  /** HTTP port on 127.0.0.1, or null (workers have no HTTP server). */
  port: number | null;
  /** Base URL, or null. */
  url: string | null;
  /** Bearer token its `/health/ready` needs (storage elements), else null. */
  healthToken: string | null;
  /**
   * Start wave: every process of a wave starts together and is ready before
   * the next wave starts. 0: storage elements; 1: the first orchestrator
   * (creates the topics, applies the migrations); 2: the other core
   * processes; 3: the edge (its config holds the edge token made after wave 2).
   */
  wave: 0 | 1 | 2 | 3;
}

/** Values one start of a cluster shares between its processes. */
export interface ClusterSecrets {
  /** Bearer token of every storage element (`STORAGE_TOKENS`), also listed in `STORAGE_ELEMENTS`. */
  storageToken: string;
  /** Operator token (`OPS_TOKENS` of ingest and orchestrators; the edge's status token): jobs of every organization, `/ops`, `/metrics`. */
  operatorToken: string;
  /** The match the edge records (with `options.edge`). */
  edgeMatchId: string;
}

/** Where the edge's config is written (`<workDir>/edge-1/edge.json`). */
export function edgeConfigPath(options: Readonly<ClusterOptions>): string {
  return path.join(options.workDir, 'edge-1', 'edge.json');
}

/** Environment shared by ingest, orchestrators and workers. */
function coreEnv(
  options: Readonly<ClusterOptions>,
  services: ClusterServicesEnv,
  secrets: ClusterSecrets,
): Record<string, string> {
  return {
    OPS_TOKENS: secrets.operatorToken,
    REDIS_URL: services.REDIS_URL,
    REDIS_KEY_PREFIX: options.redisKeyPrefix,
    DATABASE_URL: services.DATABASE_URL,
    DATABASE_SCHEMA: options.databaseSchema,
    KAFKA_BROKERS: services.KAFKA_BROKERS,
    POLYVISION_TOPIC_PREFIX: options.topicPrefix,
  };
}

/** Workers read no operator token (they serve no HTTP). */
function withoutOpsTokens(env: Record<string, string>): Record<string, string> {
  const { OPS_TOKENS: _unused, ...rest } = env;
  return rest;
}

/**
 * The processes of a local cluster, in start order: one storage element per
 * datacenter, `orchestratorReplicas` orchestrators, `ingestReplicas` ingest
 * replicas (told about every SE through `STORAGE_ELEMENTS`), `workers`
 * workers serving `options.stages`. Variable names are those of
 * storage-element/README.md and core/README.md. Pure: starts nothing.
 */
export function planCluster(
  options: Readonly<ClusterOptions>,
  services: ClusterServicesEnv,
  secrets: ClusterSecrets,
): ClusterProcessPlan[] {
  const plans: ClusterProcessPlan[] = [];
  const storageElements = options.datacenters.map((location, i) => {
    const port = options.basePort + 1 + i;
    return { storage_id: `se-${i + 1}-${location}`, location, port, endpoint: `http://127.0.0.1:${port}` };
  });
  for (const se of storageElements) {
    const dir = path.join(options.workDir, se.storage_id);
    plans.push({
      name: se.storage_id,
      role: 'storage-element',
      args: ['storage-element'],
      env: {
        STORAGE_ELEMENT_ID: se.storage_id,
        STORAGE_DATACENTER_LOCATION: se.location,
        STORAGE_DATA_DIR: path.join(dir, 'data'),
        STORAGE_HOST: '127.0.0.1',
        STORAGE_PORT: String(se.port),
        STORAGE_EXTERNAL_ENDPOINT: se.endpoint,
        STORAGE_MODE: 'rw',
        STORAGE_TYPE: 'local',
        STORAGE_TOKENS: secrets.storageToken,
        STORAGE_CAPACITY_LIMIT_BYTES: String(options.storageCapacityLimitBytes),
      },
      dir,
      port: se.port,
      url: se.endpoint,
      healthToken: secrets.storageToken,
      wave: 0,
    });
  }
  for (let n = 1; n <= options.orchestratorReplicas; n++) {
    const port = options.basePort + 200 + n;
    plans.push({
      name: `orchestrator-${n}`,
      role: 'orchestrator',
      args: ['orchestrator'],
      env: {
        ...coreEnv(options, services, secrets),
        ORCHESTRATOR_HTTP_HOST: '127.0.0.1',
        ORCHESTRATOR_HTTP_PORT: String(port),
        ORCHESTRATOR_INSTANCE_ID: `orchestrator-${n}`,
      },
      dir: path.join(options.workDir, `orchestrator-${n}`),
      port,
      url: `http://127.0.0.1:${port}`,
      healthToken: null,
      wave: n === 1 ? 1 : 2,
    });
  }
  const storageElementsJson = JSON.stringify(
    storageElements.map(({ storage_id, endpoint, location }) => ({
      storage_id,
      endpoint,
      location,
      token: secrets.storageToken,
    })),
  );
  for (let n = 1; n <= options.ingestReplicas; n++) {
    const port = options.basePort + 100 + n;
    plans.push({
      name: `ingest-${n}`,
      role: 'ingest',
      args: ['ingest'],
      env: {
        ...coreEnv(options, services, secrets),
        INGEST_HOST: '127.0.0.1',
        INGEST_PORT: String(port),
        INGEST_INSTANCE_ID: `ingest-${n}`,
        STORAGE_ELEMENTS: storageElementsJson,
        // A local cluster polls its SEs more often than production (30 s).
        CAPACITY_MONITOR_BASE_INTERVAL: '5',
        // The edge's segment length: ingest places each panorama segment on the match clock with it.
        INGEST_SEGMENT_DURATION_S: String(EDGE_SEGMENT_DURATION_S),
      },
      dir: path.join(options.workDir, `ingest-${n}`),
      port,
      url: `http://127.0.0.1:${port}`,
      healthToken: null,
      wave: 2,
    });
  }
  for (let n = 1; n <= options.workers; n++) {
    plans.push({
      name: `worker-${n}`,
      role: 'worker',
      args: ['worker', '--stages', options.stages.join(','), ...(options.testStages ? ['--test-stage'] : [])],
      // Stage inputs and outputs live on the SEs (core/src/workers/artifacts), as in production.
      env: {
        ...withoutOpsTokens(coreEnv(options, services, secrets)),
        WORKER_ID: `worker-${n}`,
        STORAGE_ELEMENTS: storageElementsJson,
      },
      dir: path.join(options.workDir, `worker-${n}`),
      port: null,
      url: null,
      healthToken: null,
      wave: 2,
    });
  }
  if (options.edge) {
    const port = options.basePort + 301;
    plans.push({
      name: 'edge-1',
      role: 'edge',
      args: [
        'edge',
        '--config',
        edgeConfigPath(options),
        '--match-id',
        secrets.edgeMatchId,
        '--duration',
        String(options.edgeMatchDurationS),
        '--quiet',
      ],
      env: {},
      dir: path.dirname(edgeConfigPath(options)),
      port,
      url: `http://127.0.0.1:${port}`,
      healthToken: null,
      wave: 3,
    });
  }
  return plans;
}

/** Length of the local edge's panorama segments, in seconds (its config and ingest's `INGEST_SEGMENT_DURATION_S`). */
export const EDGE_SEGMENT_DURATION_S = 4;

/**
 * The edge config of `edge-1` (edge/src/config/edge-config.ts): three
 * synthetic cameras from `clipDir` (a `synth-match` output: camera-0..2.mp4,
 * venue.json), uploads to `ingestUrl` with `edgeToken`, 4 s segments, status
 * API on `basePort + 301`.
 */
export function edgeConfig(
  options: Readonly<ClusterOptions>,
  input: { clipDir: string; ingestUrl: string; edgeToken: string; statusToken: string },
): Record<string, unknown> {
  return {
    edge_id: 'edge-1',
    organization_id: options.organizationId,
    ingest: { url: input.ingestUrl, token: input.edgeToken },
    cameras: [0, 1, 2].map((i) => ({ id: `camera-${i}`, source: { kind: 'synthetic', clip_dir: input.clipDir } })),
    calibration: path.join(input.clipDir, 'venue.json'),
    segment_duration_s: EDGE_SEGMENT_DURATION_S,
    spool: { dir: path.join(path.dirname(edgeConfigPath(options)), 'spool'), min_free_bytes: 0 },
    status: { host: '127.0.0.1', port: options.basePort + 301, token: input.statusToken },
  };
}
