import { existsSync } from 'node:fs';
import path from 'node:path';
import { envBool, envInt, loadConfig, STAGES, type Stage, ValidationError } from '@polyvision/shared';
import { z } from 'zod';
import { repoRoot } from '../services/paths.ts';

/**
 * The shape and place of a local multi-process cluster
 * (`pnpm polyvision cluster up`): storage elements in datacenters, ingest and
 * orchestrator replicas and workers, each a separate process on 127.0.0.1.
 */
export interface ClusterOptions {
  /** Working folder: `cluster.json`, one folder per process (pid, log, SE data). @defaultValue `<repo>/.work/cluster` */
  workDir: string;
  /**
   * First loopback port. Storage element n listens on `basePort + n`
   * (n = 1…), ingest replica n on `basePort + 100 + n`, orchestrator n on
   * `basePort + 200 + n`, the edge's status API on `basePort + 301`. Keep it below the kernel's ephemeral port range
   * (`/proc/sys/net/ipv4/ip_local_port_range`, 32768–60999 on Linux): a port
   * in that range can be held by an outgoing connection (even in TIME-WAIT),
   * and then the listen fails with EADDRINUSE. @defaultValue 28000
   */
  basePort: number;
  /** Datacenters, one storage element each. @defaultValue `['dc-east', 'dc-west', 'dc-north']` */
  datacenters: readonly string[];
  /** Quota of each storage element's folder (`STORAGE_CAPACITY_LIMIT_BYTES`). @defaultValue 4 GiB */
  storageCapacityLimitBytes: number;
  /** Ingest replicas. @defaultValue 2 */
  ingestReplicas: number;
  /** Orchestrator replicas. @defaultValue 2 */
  orchestratorReplicas: number;
  /** Worker processes, each serving every stage. @defaultValue 1 */
  workers: number;
  /**
   * Run the workers with the counting test double (`worker --test-stage`)
   * instead of the real stage handlers. @defaultValue false
   */
  testStages: boolean;
  /**
   * Stages the workers serve (`worker --stages`). @defaultValue with
   * `testStages` every stage; otherwise the stages that have a handler module
   * (`core/src/workers/<stage>/handler.ts`; a panorama from an edge has no
   * `stitch` stage: the edge stitches)
   */
  stages: readonly Stage[];
  /**
   * Also run an edge node (`edge-1`) on synthetic cameras: a three-camera
   * clip is rendered once (`synth-match`), and the edge records, stitches and
   * uploads one match of `edgeMatchDurationS` through ingest-1. @defaultValue false
   */
  edge: boolean;
  /** Length of the edge's match, in seconds. @defaultValue 20 */
  edgeMatchDurationS: number;
  /** Kafka topic prefix (`POLYVISION_TOPIC_PREFIX`): topics and groups of this cluster. @defaultValue `polyvision` */
  topicPrefix: string;
  /** PostgreSQL schema of this cluster (`DATABASE_SCHEMA`). @defaultValue `polyvision_cluster` */
  databaseSchema: string;
  /** Prefix of every Redis key (`REDIS_KEY_PREFIX`). @defaultValue `''` */
  redisKeyPrefix: string;
  /** Organization of the edge token `up` creates. @defaultValue `local` */
  organizationId: string;
  /** How long `up` waits for every process to be ready, in milliseconds. @defaultValue 120_000 */
  readyTimeoutMs: number;
  /** How long a process may take to stop after SIGTERM before SIGKILL, in milliseconds. @defaultValue 20_000 */
  stopGraceMs: number;
  /** Receives one human-readable line per step. @defaultValue no-op */
  onProgress: (line: string) => void;
}

/** The variables that override the defaults (documented in deploy/README.md). */
const envSchema = z.object({
  POLYVISION_CLUSTER_DIR: z.string().optional(),
  POLYVISION_CLUSTER_BASE_PORT: envInt(28000, 1024, 65000),
  POLYVISION_CLUSTER_WORKERS: envInt(1, 1, 16),
  POLYVISION_CLUSTER_TEST_STAGES: envBool(false),
  POLYVISION_CLUSTER_EDGE: envBool(false),
});

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
const optionsSchema = z.object({
  basePort: z.number().int().min(1024).max(65000),
  datacenters: z
    .array(z.string().regex(NAME, 'letters, digits, . _ -'))
    .min(1)
    .max(90)
    .refine((list) => new Set(list).size === list.length, 'datacenters must differ'),
  storageCapacityLimitBytes: z.number().int().positive(),
  ingestReplicas: z.number().int().min(1).max(90),
  orchestratorReplicas: z.number().int().min(1).max(90),
  workers: z.number().int().min(1).max(16),
  edgeMatchDurationS: z
    .number()
    .int()
    .min(2)
    .max(6 * 3600),
  stages: z.array(z.enum(STAGES)).min(1, 'at least one stage (none has a handler module yet?)'),
  topicPrefix: z.string().regex(/^[A-Za-z0-9._-]{1,100}$/),
  databaseSchema: z.string().regex(/^[a-z_][a-z0-9_]{0,62}$/, 'a lower-case SQL identifier'),
  redisKeyPrefix: z.string().max(100),
  organizationId: z.string().regex(NAME),
  readyTimeoutMs: z.number().int().positive(),
  stopGraceMs: z.number().int().positive(),
});

/**
 * Fills every option: explicit values, then the environment
 * (`POLYVISION_CLUSTER_DIR`, `POLYVISION_CLUSTER_BASE_PORT`,
 * `POLYVISION_CLUSTER_WORKERS`, `POLYVISION_CLUSTER_TEST_STAGES`,
 * `POLYVISION_CLUSTER_EDGE`), then the defaults.
 *
 * @throws ConfigError (`config_invalid`) naming a bad variable; ValidationError
 *   (`cluster_option_invalid`) naming a bad option.
 */
export function compileClusterOptions(
  options: Partial<ClusterOptions> = {},
  env: Record<string, string | undefined> = process.env,
): Readonly<ClusterOptions> {
  const config = loadConfig(envSchema, env);
  const filled = {
    basePort: options.basePort ?? config.POLYVISION_CLUSTER_BASE_PORT,
    datacenters: options.datacenters ?? ['dc-east', 'dc-west', 'dc-north'],
    storageCapacityLimitBytes: options.storageCapacityLimitBytes ?? 4 * 1024 ** 3,
    ingestReplicas: options.ingestReplicas ?? 2,
    orchestratorReplicas: options.orchestratorReplicas ?? 2,
    workers: options.workers ?? config.POLYVISION_CLUSTER_WORKERS,
    testStages: options.testStages ?? config.POLYVISION_CLUSTER_TEST_STAGES,
    stages: [] as readonly Stage[],
    edge: options.edge ?? config.POLYVISION_CLUSTER_EDGE,
    edgeMatchDurationS: options.edgeMatchDurationS ?? 20,
    topicPrefix: options.topicPrefix ?? 'polyvision',
    databaseSchema: options.databaseSchema ?? 'polyvision_cluster',
    redisKeyPrefix: options.redisKeyPrefix ?? '',
    organizationId: options.organizationId ?? 'local',
    readyTimeoutMs: options.readyTimeoutMs ?? 120_000,
    stopGraceMs: options.stopGraceMs ?? 20_000,
  };
  filled.stages =
    options.stages ??
    (filled.testStages
      ? STAGES
      : STAGES.filter((stage) => existsSync(path.join(repoRoot, 'core', 'src', 'workers', stage, 'handler.ts'))));
  const parsed = optionsSchema.safeParse(filled);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ValidationError('cluster_option_invalid', `cluster option ${issue?.path.join('.')}: ${issue?.message}`);
  }
  return Object.freeze({
    ...filled,
    workDir: path.resolve(options.workDir ?? config.POLYVISION_CLUSTER_DIR ?? path.join(repoRoot, '.work', 'cluster')),
    onProgress: options.onProgress ?? (() => {}),
  });
}
