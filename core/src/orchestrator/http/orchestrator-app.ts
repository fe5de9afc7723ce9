import {
  errorHandler,
  healthRoutes,
  metricsRoute,
  notFoundHandler,
  type Registry,
  rejectControlCharacters,
} from '@polyvision/shared';
import { Hono } from 'hono';
import { hasListedToken, tokenListAuth } from '../../auth/principal.ts';
import type { Database } from '../../db/database.ts';
import { jobRoutes } from './job-routes.ts';

/** Options of {@link orchestratorApp}. */
export interface OrchestratorAppOptions {
  db: Database;
  registry: Registry;
  /** Checks of `/health/ready` (name → resolves or returns true when ready). */
  ready: Record<string, () => unknown>;
  /** `OPS_TOKENS`: read every job, `/metrics`, the details of `/health/ready`. */
  operatorTokens: readonly string[];
  /** `METRICS_TOKENS`: `/metrics` and the details of `/health/ready` only (Prometheus). */
  metricsTokens: readonly string[];
  /** Retry window of retriable input errors (ms), shown as what a waiting stage waits for. @defaultValue none */
  retryWindowMs?: number;
}

/**
 * The orchestrator's HTTP app (core/README.md, "Authentication"):
 * - `GET /api/v1/jobs[/:id]`: operator token (all jobs) or edge token (its organization's);
 * - `GET /metrics`: a metrics or operator token (bearer), else 401;
 * - `GET /health/ready`: `{status}` to anyone (probes carry no secret), the
 *   checks with a metrics or operator token;
 * - `GET /health/live`: open, `{status, checks: {}}` (no data).
 */
export function orchestratorApp(options: OrchestratorAppOptions): Hono {
  const serviceTokens = [...options.metricsTokens, ...options.operatorTokens];
  const app = new Hono();
  app.onError(errorHandler());
  app.notFound(notFoundHandler);
  app.use('*', rejectControlCharacters());
  app.route(
    '/',
    jobRoutes(options.db, {
      operatorTokens: options.operatorTokens,
      ...(options.retryWindowMs === undefined ? {} : { retryWindowMs: options.retryWindowMs }),
    }),
  );
  app.use('/metrics', tokenListAuth(serviceTokens, 'polyvision-metrics'));
  app.route('/', metricsRoute(options.registry));
  app.route('/', healthRoutes({ ready: options.ready, showDetails: (c) => hasListedToken(c, serviceTokens) }));
  return app;
}
