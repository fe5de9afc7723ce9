import {
  type ArtifactIo,
  createArtifactIo,
  createEdgeToken,
  loadIngestSettings,
  loadStageHandler,
  Orchestrator,
  PgStageClaimStore,
  type PlacementAttempt,
  RedisStageKeys,
  type RunningIngest,
  type StageClaimStore,
  type StageHandler,
  startIngest,
  WorkerRuntime,
} from '@polyvision/core';
import { type Logger, silentLogger } from '@polyvision/shared';
import type { DemoInfra } from './infra.ts';
import { DEMO_PREFERRED_LOCATION, type DemoStorageElement } from './storage.ts';

/** One placement as ingest reported it. */
export interface PlacementRecord {
  attempts: readonly PlacementAttempt[];
  placed: boolean;
  /** Which ingest replica placed it. */
  replica: string;
}

/** Options of {@link startDemoStack}. */
export interface DemoStackOptions {
  infra: DemoInfra;
  storage: { token: string; elements: DemoStorageElement[] };
  /** Stage environment (DETECT_*, VCAM_*, …) handed to the stage handlers. */
  stageEnv: Record<string, string | undefined>;
  organizationId: string;
  logger?: Logger;
  /** Length of the edge's panorama segments (ingest's `INGEST_SEGMENT_DURATION_S`), seconds. @defaultValue 10 */
  segmentDurationS?: number;
  /** Wraps each stage handler (the demo counts executions). @defaultValue identity */
  wrapHandler?: (handler: StageHandler) => StageHandler;
}

/** The running core site of the demo. */
export interface DemoStack {
  ingest: RunningIngest[];
  ingestIds: string[];
  orchestrators: Orchestrator[];
  worker: WorkerRuntime;
  /** Bearer token of the demo edge. */
  edgeToken: string;
  /** Operator token of the ops page. */
  opsToken: string;
  placements: PlacementRecord[];
  /** The workers' artifact store (the demo reads the outputs back through it). */
  io: ArtifactIo;
  close(): Promise<void>;
}

/** Orchestrator and ingest replicas of the demo (issue 9: two each). */
export const DEMO_REPLICAS = 2;

/**
 * Starts the core site in this process: {@link DEMO_REPLICAS} ingest replicas
 * (one capacity-monitor leader elected between them, ops page on each),
 * {@link DEMO_REPLICAS} orchestrator replicas sharing the 12 command
 * partitions, and one worker serving detect, track, vcam, analyze and encode
 * (the edge stitches, so no job asks for `stitch`).
 *
 * @throws ConfigError for bad stage variables; driver errors.
 */
export async function startDemoStack(options: DemoStackOptions): Promise<DemoStack> {
  const { infra } = options;
  const logger = options.logger ?? silentLogger;
  const closers: Array<() => Promise<void>> = [];
  const close = async () => {
    for (const c of closers.reverse()) await c().catch(() => {});
  };
  try {
    const opsToken = `ops-${crypto.randomUUID()}`;
    const placements: PlacementRecord[] = [];
    const ingest: RunningIngest[] = [];
    const ingestIds: string[] = [];
    for (let n = 1; n <= DEMO_REPLICAS; n++) {
      const instanceId = `ingest-${n}`;
      const settings = loadIngestSettings({
        REDIS_URL: infra.redisUrlForConfig,
        REDIS_KEY_PREFIX: infra.redisKeyPrefix,
        DATABASE_SCHEMA: infra.schema,
        POLYVISION_TOPIC_PREFIX: infra.topicPrefix,
        INGEST_PORT: '0',
        INGEST_INSTANCE_ID: instanceId,
        INGEST_PREFERRED_LOCATIONS: DEMO_PREFERRED_LOCATION,
        INGEST_RETRY_AFTER_SECONDS: '2',
        INGEST_SEGMENT_DURATION_S: String(options.segmentDurationS ?? 10),
        STORAGE_ELEMENTS: JSON.stringify(options.storage.elements.map((e) => e.entry)),
        // One poll at start, then once a minute: the 507 of the nearly full SE is met
        // because the cache still shows the space of that poll (and then repaired lazily).
        CAPACITY_MONITOR_BASE_INTERVAL: '60',
        CAPACITY_MONITOR_MAX_INTERVAL: '120',
        CAPACITY_MONITOR_LEADER_TTL: '10',
        CAPACITY_MONITOR_LEADER_RENEWAL_INTERVAL: '3',
        CAPACITY_MONITOR_HTTP_RETRIES: '1',
        CAPACITY_MONITOR_RETRY_BASE_DELAY: '0.2',
        OPS_TOKENS: opsToken,
      });
      const replica = await startIngest(settings, logger.child({ replica: instanceId }), {
        redis: infra.newRedis(),
        db: infra.db,
        onPlacement: (attempts, placed) => placements.push({ attempts: [...attempts], placed, replica: instanceId }),
      });
      closers.push(() => replica.close());
      ingest.push(replica);
      ingestIds.push(instanceId);
    }
    const { token: edgeToken } = await createEdgeToken(infra.db, options.organizationId, 'demo-edge');

    const orchestrators: Orchestrator[] = [];
    for (let n = 1; n <= DEMO_REPLICAS; n++) {
      const orchestrator = new Orchestrator({
        bus: infra.bus,
        db: infra.db,
        idempotency: infra.idempotency,
        logger: logger.child({ replica: `orchestrator-${n}` }),
        tuning: {
          topicPrefix: infra.topicPrefix,
          instanceId: `orchestrator-${n}`,
          sessionTimeoutMs: 10_000,
          heartbeatIntervalMs: 1_000,
          relayPollIntervalMs: 100,
        },
      });
      await orchestrator.start();
      closers.push(() => orchestrator.close());
      orchestrators.push(orchestrator);
    }

    // The workers' storage: inputs downloaded from the SE that holds them, outputs placed on the
    // SEs like ingest places uploads (capacity cache, reservation, 507 → next) and catalogued in `files`.
    const io = createArtifactIo({
      env: {
        STORAGE_ELEMENTS: JSON.stringify(options.storage.elements.map((e) => e.entry)),
        REDIS_KEY_PREFIX: infra.redisKeyPrefix,
        WORKER_ID: 'worker-1',
      },
      db: infra.db,
      redis: infra.newRedis(),
      logger: logger.child({ replica: 'worker-1' }),
    });
    const context = { env: { ...options.stageEnv } };
    const wrap = options.wrapHandler ?? ((h: StageHandler) => h);
    const stages = ['detect', 'track', 'vcam', 'analyze', 'encode'] as const;
    const handlers: StageHandler[] = [];
    for (const stage of stages) handlers.push(wrap(await loadStageHandler(stage, context, { io })));
    let claims: StageClaimStore = new PgStageClaimStore(infra.db);
    if (infra.redisKind === 'redis') claims = new RedisStageKeys(claims, infra.newRedis(), infra.redisKeyPrefix);
    const worker = new WorkerRuntime({
      bus: infra.bus,
      handlers,
      claims,
      logger: logger.child({ replica: 'worker-1' }),
      topicPrefix: infra.topicPrefix,
      workerId: 'worker-1',
      concurrency: 1,
      progressIntervalMs: 500,
    });
    await worker.start();
    closers.push(() => worker.close());
    return { ingest, ingestIds, orchestrators, worker, edgeToken, opsToken, placements, io, close };
  } catch (error) {
    await close();
    throw error;
  }
}
