import {
  createHttpAgent,
  createMetricsRegistry,
  Elections,
  getCounter,
  type Logger,
  RedisTtlStore,
  type RunningServer,
  serve,
  silentLogger,
} from '@polyvision/shared';
import type { Hono } from 'hono';
import { Redis } from 'ioredis';
import { EdgeTokenVerifier } from '../auth/edge-token-verifier.ts';
import { AdaptiveCapacityMonitor, CAPACITY_LEADER_KEY, CapacityCache } from '../capacity/index.ts';
import { createDatabase, type Database, migrate } from '../db/index.ts';
import { createOpsService } from '../ops/ops-service.ts';
import { topicNames } from '../orchestrator/contracts/index.ts';
import { DEFAULT_REPLICATION_SETTINGS } from '../replication/options.ts';
import { type RunningReplication, startReplication } from '../replication/start-replication.ts';
import { DegradingLocker } from './degrading-locker.ts';
import type { EdgeIdentity } from './edge-tokens.ts';
import { ingestApp } from './ingest-app.ts';
import { LastKnownCapacity } from './last-known-capacity.ts';
import type { IngestSettings } from './options.ts';
import type { PlacementAttempt } from './placement.ts';
import { OrganizationQuotas } from './quota.ts';
import { RedisLocker } from './redis-locker.ts';
import { StorageElementClient } from './se-client.ts';
import { StorageElementDataStore, type UploadOwner } from './se-data-store.ts';

/** A running ingest replica. */
export interface RunningIngest {
  url: string;
  port: number;
  monitor: AdaptiveCapacityMonitor;
  store: StorageElementDataStore;
  db: Database;
  /** Copies of every file, the repairer (core/src/replication). */
  replication: RunningReplication;
  /** The HTTP app (its `routes` list every endpoint; the route-walking auth test reads them). */
  app: Hono<{ Variables: { edge: EdgeIdentity } }>;
  /** Stops serving, stops the monitor (releasing leadership), closes connections. Idempotent. */
  close(): Promise<void>;
}

/**
 * What a caller may hand {@link startIngest} instead of letting it connect
 * (the one-process demo shares one in-memory Redis and one PGlite between replicas).
 */
export interface IngestDependencies {
  /** Used instead of connecting to `REDIS_URL` (a `duplicate()` serves the tus-lock subscriptions). Quit on close. */
  redis?: Redis;
  /** Used instead of `DATABASE_URL`; migrated here, NOT closed on close (the caller owns it). */
  db?: Database;
  /** Called after each placement with the SEs tried (outcome per SE) and whether the file was placed. */
  onPlacement?: (attempts: readonly PlacementAttempt[], placed: boolean) => void;
}

/** How long an accepted token is remembered before the database is asked again, in ms (revocation delay). */
const TOKEN_CACHE_MS = 10_000;

/**
 * Starts one ingest replica: PostgreSQL (migrations applied), Redis
 * (election, capacity cache, tus locks), the capacity monitor, replication
 * (copies after each upload, the repairer under leadership), the HTTP
 * app ({@link ingestApp}: tus upload API with edge-token auth, ops map,
 * health, metrics) and the expiry sweep.
 */
export async function startIngest(
  settings: IngestSettings,
  logger: Logger = silentLogger,
  deps: IngestDependencies = {},
): Promise<RunningIngest> {
  const { env } = settings;
  const prefix = env.REDIS_KEY_PREFIX;
  const redis = deps.redis ?? new Redis(env.REDIS_URL, { maxRetriesPerRequest: 2, lazyConnect: true });
  const subscriber = redis.duplicate();
  redis.on('error', (error) => logger.warn({ err: error }, 'redis'));
  subscriber.on('error', (error) => logger.warn({ err: error }, 'redis subscriber'));
  if (!deps.redis) {
    await redis.connect();
    await subscriber.connect();
  }
  const db = deps.db ?? createDatabase({ databaseUrl: env.DATABASE_URL, schema: env.DATABASE_SCHEMA });
  const closeDb = deps.db ? async () => {} : () => db.close();
  await migrate(db);

  const registry = createMetricsRegistry({ service: 'ingest', labels: { instance_id: settings.instanceId } });
  // The subscriber also carries leader release notices: a gracefully stopped capacity leader is replaced at once.
  const ttlStore = new RedisTtlStore(redis, { keyPrefix: prefix, subscriber });
  const elections = new Elections(ttlStore, { logger });
  const agent = createHttpAgent({ connections: 64 });
  const cache = new CapacityCache(redis, prefix);
  const monitor = new AdaptiveCapacityMonitor({
    instanceId: settings.instanceId,
    storageElements: settings.storageElements,
    settings: settings.capacity,
    elections,
    store: ttlStore,
    cache,
    registry,
    logger,
    dispatcher: agent,
  });
  const client = new StorageElementClient({ timeoutMs: env.INGEST_SE_TIMEOUT_MS, dispatcher: agent });
  const owners = new Map<string, UploadOwner>();
  const placements = getCounter<'outcome'>(registry, {
    name: 'ingest_placements_total',
    help: 'File placements: first_try (no 507), after_507 (placed after at least one SE answered 507), failed (final 507)',
    labelNames: ['outcome'],
  });
  const refusals = getCounter<'storage_id'>(registry, {
    name: 'ingest_storage_insufficient_total',
    help: 'Reservations refused by a storage element with 507',
    labelNames: ['storage_id'],
  });
  // Placement survives a Redis outage on the last capacity read (reservations on the SEs keep it safe).
  // ioredis tells its connection state; a client without one (the demo's embedded ioredis-mock) is always up.
  const redisUp = () => (redis as { status?: string }).status === undefined || redis.status === 'ready';
  const capacity = new LastKnownCapacity({
    source: monitor,
    storageElements: settings.storageElements,
    sourceAvailable: redisUp,
    logger,
  });
  const placement = {
    maxAttempts: env.INGEST_PLACEMENT_MAX_ATTEMPTS,
    headroomBytes: env.INGEST_HEADROOM_BYTES,
    preferredLocations: env.INGEST_PREFERRED_LOCATIONS,
    retryAfterMs: env.INGEST_RETRY_AFTER_SECONDS * 1000,
  };
  // A second copy of every file in another datacenter, and the repairer that keeps it so.
  const replication = startReplication({
    settings: settings.replication ?? DEFAULT_REPLICATION_SETTINGS,
    db,
    client,
    capacity,
    storageElements: settings.storageElements,
    placement: { ...placement, reservationTtlMs: env.INGEST_RESERVATION_TTL_MS },
    store: ttlStore,
    instanceId: settings.instanceId,
    registry,
    logger,
  });
  const store = new StorageElementDataStore({
    db,
    capacity,
    client,
    storageElements: settings.storageElements,
    placement,
    replicate: (fileId) => replication.afterUpload(fileId),
    uploadExpirationMs: env.INGEST_UPLOAD_EXPIRATION_MS,
    reservationTtlMs: env.INGEST_RESERVATION_TTL_MS,
    quotas: new OrganizationQuotas({
      defaultBytes: env.INGEST_ORG_QUOTA_BYTES ?? null,
      perOrganizationBytes: settings.organizationQuotas ?? {},
      reservationTtlMs: env.INGEST_RESERVATION_TTL_MS,
      retryAfterMs: env.INGEST_RETRY_AFTER_SECONDS * 1000,
    }),
    jobCommandsTopic: topicNames(env.POLYVISION_TOPIC_PREFIX).commands,
    segmentDurationS: env.INGEST_SEGMENT_DURATION_S,
    logger,
    ownerOf: (id) => owners.get(id),
    onPlacement: (attempts, placed) => {
      const refused = attempts.filter((a) => a.outcome === 'insufficient_storage');
      for (const a of refused) {
        refusals.inc({ storage_id: a.storage_id });
        void ops?.map.noteInsufficientStorage(a.storage_id, a.message ?? '').catch(() => undefined);
      }
      placements.inc({ outcome: !placed ? 'failed' : refused.length > 0 ? 'after_507' : 'first_try' });
      deps.onPlacement?.(attempts, placed);
    },
  });
  const locker = new DegradingLocker({
    shared: new RedisLocker({
      redis,
      subscriber,
      keyPrefix: `${prefix}tus:lock:`,
      leaseMs: env.INGEST_TUS_LOCK_LEASE_MS,
    }),
    sharedAvailable: redisUp,
    logger,
  });

  // Ops capacity map (core/src/ops): /ops, /api/v1/capacity-map[/events], behind OPS_TOKENS.
  const ops = settings.ops
    ? createOpsService(settings.ops, {
        instanceId: settings.instanceId,
        storageElements: settings.storageElements,
        capacitySettings: settings.capacity,
        redis,
        keyPrefix: prefix,
        cache,
        leaderStore: ttlStore,
        leaderKey: CAPACITY_LEADER_KEY,
        role: () => (!settings.capacity.enabled ? 'disabled' : monitor.isLeader ? 'leader' : 'follower'),
        db,
        logger,
      })
    : undefined;
  const app = ingestApp({
    db,
    redis,
    monitor,
    capacity,
    locker,
    replication,
    registry,
    logger,
    ...(ops ? { ops } : {}),
    operatorTokens: settings.ops?.tokens ?? [],
    metricsTokens: env.METRICS_TOKENS,
    edgeTokens: new EdgeTokenVerifier({ db, cacheMs: TOKEN_CACHE_MS }),
    tus: {
      store,
      locker,
      maxUploadBytes: env.INGEST_MAX_UPLOAD_BYTES,
      maxMetadataBytes: env.INGEST_MAX_METADATA_BYTES,
      checksumMaxChunkBytes: env.INGEST_CHECKSUM_MAX_CHUNK_BYTES,
      retryAfterSeconds: env.INGEST_RETRY_AFTER_SECONDS,
      owners,
      copies: replication.copies,
    },
  });

  monitor.start();
  const sweep = setInterval(() => {
    store
      .deleteExpired()
      .then((n) => n > 0 && logger.info({ expired: n }, 'expired uploads released'))
      .catch((error) => logger.warn({ err: error }, 'expiry sweep failed'));
  }, env.INGEST_EXPIRY_SWEEP_INTERVAL_MS);
  sweep.unref();

  let server: RunningServer;
  try {
    server = await serve(app, { port: env.INGEST_PORT, host: env.INGEST_HOST });
  } catch (error) {
    clearInterval(sweep);
    await ops?.close();
    await replication.close();
    await monitor.close();
    await Promise.allSettled([redis.quit(), subscriber.quit(), closeDb(), agent.close()]);
    throw error;
  }
  logger.info({ url: server.url, instance_id: settings.instanceId }, 'ingest listening');

  let closing: Promise<void> | undefined;
  return {
    url: server.url,
    port: server.port,
    monitor,
    store,
    db,
    replication,
    app,
    close() {
      closing ??= (async () => {
        clearInterval(sweep);
        await ops?.close();
        await server.close();
        await replication.close();
        await monitor.close();
        await elections.close();
        await Promise.allSettled([redis.quit(), subscriber.quit(), closeDb(), agent.close()]);
      })();
      return closing;
    },
  };
}
