/**
 * The edge's local status API (hono): `GET /api/v1/status` (cameras,
 * recording state, spool backlog, upload rate, disk free, alarms, last
 * errors), `/health/live`, `/health/ready`, and `/metrics` (Prometheus).
 * Handlers only read a snapshot from the node; they know nothing else.
 */
import {
  errorHandler,
  healthRoutes,
  type Logger,
  metricsRoute,
  notFoundHandler,
  type Registry,
} from '@polyvision/shared';
import { Hono } from 'hono';
import type { EdgeStatus } from './edge-status.ts';

/** What the app needs from the node. */
export interface StatusSource {
  status(): Promise<EdgeStatus>;
  /** Ready when the spool is open and the disk guard is not failing. */
  ready(): boolean;
}

/** Builds the status app. */
export function statusApp(source: StatusSource, registry: Registry, logger?: Logger): Hono {
  const app = new Hono();
  app.onError(errorHandler({ logger }));
  app.notFound(notFoundHandler);
  app.get('/api/v1/status', async (c) => c.json(await source.status()));
  app.route('/', healthRoutes({ ready: { spool: () => source.ready() } }));
  app.route('/', metricsRoute(registry));
  return app;
}
