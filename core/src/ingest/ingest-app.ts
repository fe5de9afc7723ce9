import {
  bearerAuth,
  errorHandler,
  type Logger,
  metricsRoute,
  notFoundHandler,
  type Registry,
  rejectControlCharacters,
  runHealthChecks,
} from '@polyvision/shared';
import { Hono } from 'hono';
import { EdgeTokenVerifier } from '../auth/edge-token-verifier.ts';
import { hasListedToken, tokenListAuth } from '../auth/principal.ts';
import type { AdaptiveCapacityMonitor, StorageCandidate } from '../capacity/index.ts';
import type { Database } from '../db/index.ts';
import type { OpsService } from '../ops/ops-service.ts';
import type { RunningReplication } from '../replication/start-replication.ts';
import type { DegradingLocker } from './degrading-locker.ts';
import type { EdgeIdentity } from './edge-tokens.ts';
import type { LastKnownCapacity } from './last-known-capacity.ts';
import { type TusRoutesOptions, tusRoutes, UPLOADS_PATH } from './tus-routes.ts';

/** What {@link ingestApp} serves. */
export interface IngestAppOptions {
  db: Database;
  /** Answers `PING` for readiness. */
  redis: { ping(): Promise<unknown> };
  monitor: AdaptiveCapacityMonitor;
  /** Placement's capacity view (last known capacity while Redis is down). */
  capacity: LastKnownCapacity;
  /** The tus locker (local locks while Redis is down). */
  locker: DegradingLocker;
  /** Copies per file: readiness says `degraded` when the fleet holds fewer than `REPLICATION_FACTOR`. */
  replication?: Pick<RunningReplication, 'fleet' | 'underReplicated'>;
  registry: Registry;
  logger: Logger;
  /** The ops capacity map, when `OPS_TOKENS` is set. */
  ops?: OpsService;
  /** Operator tokens (`OPS_TOKENS`): `/metrics`, readiness details (the ops map has its own auth). */
  operatorTokens: readonly string[];
  /** Scrape tokens (`METRICS_TOKENS`): `/metrics` and readiness details only. */
  metricsTokens: readonly string[];
  /** Edge tokens of the upload API. @defaultValue a verifier on `db` */
  edgeTokens?: EdgeTokenVerifier;
  /** The tus routes' options (`db` comes from above). */
  tus: Omit<TusRoutesOptions, 'db'>;
}

/**
 * The HTTP app of one ingest replica (core/README.md, "Authentication"):
 * - `/api/v1/uploads[/:id]` (tus): an edge token on every method but `OPTIONS`
 *   (protocol discovery, no data);
 * - `/ops`, `/api/v1/capacity-map[/events]`: operator token or session (core/src/ops);
 * - `/metrics`: a metrics or operator token, else 401;
 * - `/health/ready`: `{status}` to anyone — `ok` (200), `degraded` (200:
 *   Redis unreachable, uploads still placed on the last known capacity with
 *   local tus locks; or fewer datacenters than `REPLICATION_FACTOR`, so files
 *   keep fewer copies) or `fail` (503: no database or no writable SE); the
 *   checks, what is degraded since when, replication (factor, copies
 *   required, files under-replicated) and the capacity-monitor view with
 *   a metrics or operator token;
 * - `/health/live`: open, `{status: 'ok'}`.
 * A control character in the path or query is 400 `invalid_characters` before any route.
 */
export function ingestApp(options: IngestAppOptions): Hono<{ Variables: { edge: EdgeIdentity } }> {
  const { db, monitor } = options;
  const serviceTokens = [...options.metricsTokens, ...options.operatorTokens];
  const edgeTokens = options.edgeTokens ?? new EdgeTokenVerifier({ db });
  const app = new Hono<{ Variables: { edge: EdgeIdentity } }>();
  app.onError(errorHandler({ logger: options.logger }));
  app.notFound(notFoundHandler);
  app.use('*', rejectControlCharacters());
  app.get('/health/live', (c) => c.json({ status: 'ok' }));
  app.get('/health/ready', async (c) => {
    const capacity = await withTimeout(monitor.status(), 1_000).catch(() => null);
    const critical = await runHealthChecks({
      database: () => db.query('SELECT 1'),
      writable_storage: async () => {
        if (capacity && !(capacity.enabled && capacity.writable_storage_elements === 0)) return;
        // The cache is unreadable (Redis down?): what placement uses instead.
        const fallback = capacity ? [] : options.capacity.lastKnown();
        if (!fallback.some(isWritable)) throw new Error('no writable storage element is known');
      },
    });
    // Redis is not needed to place and receive uploads (last known capacity, local tus locks): degraded, not down.
    const redis = await runHealthChecks({ redis: () => options.redis.ping() }, 1_000);
    const fleet = options.replication?.fleet;
    const status = critical.status === 'fail' ? 'fail' : redis.status === 'fail' || fleet?.degraded ? 'degraded' : 'ok';
    const code = status === 'fail' ? 503 : 200;
    if (!hasListedToken(c, serviceTokens)) return c.json({ status }, code);
    // Re-read while degraded: the outage may have ended with no placement since to notice it.
    const degraded = await options.capacity.refresh();
    const locksLocalSinceMs = options.locker.degradedSinceMs;
    return c.json(
      {
        status,
        checks: { ...critical.checks, ...redis.checks },
        degraded: {
          capacity_cache: degraded
            ? {
                since: new Date(degraded.sinceMs).toISOString(),
                reason: degraded.reason,
                last_known_at: degraded.snapshotAtMs === null ? null : new Date(degraded.snapshotAtMs).toISOString(),
              }
            : null,
          tus_locks_local_since: locksLocalSinceMs === null ? null : new Date(locksLocalSinceMs).toISOString(),
          replication: fleet?.degraded
            ? `REPLICATION_FACTOR ${fleet.factor} but ${fleet.datacenters} datacenter(s): ${fleet.required} copy per file`
            : null,
        },
        replication: options.replication
          ? {
              factor: fleet?.factor,
              required_copies: fleet?.required,
              datacenters: fleet?.datacenters,
              under_replicated_files: await withTimeout(options.replication.underReplicated(), 2_000).catch(() => null),
            }
          : null,
        capacity_monitor: capacity,
      },
      code,
    );
  });
  app.use('/metrics', tokenListAuth(serviceTokens, 'polyvision-metrics'));
  app.route('/', metricsRoute(options.registry));
  if (options.ops) app.route('/', options.ops.routes);
  const auth = bearerAuth({
    realm: 'polyvision-ingest',
    verify: async (token, c) => {
      const identity = await edgeTokens.verify(token);
      if (identity) c.set('edge', identity);
      return identity !== null;
    },
  });
  app.use(UPLOADS_PATH, async (c, next) => (c.req.method === 'OPTIONS' ? next() : auth(c, next)));
  app.use(`${UPLOADS_PATH}/*`, async (c, next) => (c.req.method === 'OPTIONS' ? next() : auth(c, next)));
  app.route('/', tusRoutes({ db, ...options.tus }));
  return app;
}

function isWritable(c: StorageCandidate): boolean {
  return c.reachable && c.health !== 'unhealthy' && (c.mode === 'edit' || c.mode === 'rw') && c.full_marked_at === null;
}

function withTimeout<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    }),
  ]).finally(() => clearTimeout(timer));
}
