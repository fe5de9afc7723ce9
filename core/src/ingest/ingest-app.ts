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
import type { AdaptiveCapacityMonitor } from '../capacity/index.ts';
import type { Database } from '../db/index.ts';
import type { OpsService } from '../ops/ops-service.ts';
import type { EdgeIdentity } from './edge-tokens.ts';
import { type TusRoutesOptions, tusRoutes, UPLOADS_PATH } from './tus-routes.ts';

/** What {@link ingestApp} serves. */
export interface IngestAppOptions {
  db: Database;
  /** Answers `PING` for readiness. */
  redis: { ping(): Promise<unknown> };
  monitor: AdaptiveCapacityMonitor;
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
 * - `/health/ready`: `{status}` (200/503) to anyone; the checks and the
 *   capacity-monitor view with a metrics or operator token;
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
    const capacity = await monitor.status().catch(() => null);
    const result = await runHealthChecks({
      database: () => db.query('SELECT 1'),
      redis: () => options.redis.ping(),
      writable_storage: () => {
        if (!capacity || (capacity.enabled && capacity.writable_storage_elements === 0)) {
          throw new Error('no writable storage element is known');
        }
      },
    });
    const code = result.status === 'ok' ? 200 : 503;
    if (!hasListedToken(c, serviceTokens)) return c.json({ status: result.status }, code);
    return c.json({ ...result, capacity_monitor: capacity }, code);
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
