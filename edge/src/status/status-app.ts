/**
 * The edge's local status API (hono): `GET /api/v1/status` (cameras,
 * recording state, spool backlog, upload rate, disk free, alarms, last
 * errors), `/health/live`, `/health/ready`, and `/metrics` (Prometheus).
 * Handlers only read a snapshot from the node; they know nothing else.
 *
 * Authentication (edge/README.md, "Status API"): `/api/v1/status` and
 * `/metrics` need `Authorization: Bearer <status token>`; `/health/ready`
 * answers `{status}` to anyone and its checks with the token; `/health/live`
 * is open.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import {
  bearerAuth,
  errorHandler,
  healthRoutes,
  type Logger,
  metricsRoute,
  notFoundHandler,
  type Registry,
  rejectControlCharacters,
} from '@polyvision/shared';
import { Hono } from 'hono';
import type { EdgeStatus } from './edge-status.ts';

/** What the app needs from the node. */
export interface StatusSource {
  status(): Promise<EdgeStatus>;
  /** Ready when the spool is open and the disk guard is not failing. */
  ready(): boolean;
}

/** Options of {@link statusApp}. */
export interface StatusAppOptions {
  /** The local status token (16–512 characters): bearer of `/api/v1/status`, `/metrics` and readiness details. */
  token: string;
  logger?: Logger;
}

function sameToken(expected: string, given: string): boolean {
  const a = createHash('sha256').update(expected).digest();
  const b = createHash('sha256').update(given).digest();
  return timingSafeEqual(a, b);
}

/**
 * Builds the status app.
 * @throws PolyvisionError `config_invalid` when the token is empty.
 */
export function statusApp(source: StatusSource, registry: Registry, options: StatusAppOptions): Hono {
  const app = new Hono();
  app.onError(errorHandler({ logger: options.logger }));
  app.notFound(notFoundHandler);
  app.use('*', rejectControlCharacters());
  const auth = bearerAuth({ tokens: [options.token], realm: 'polyvision-edge' });
  app.use('/api/*', auth);
  app.use('/metrics', auth);
  app.get('/api/v1/status', async (c) => c.json(await source.status()));
  app.route(
    '/',
    healthRoutes({
      ready: { spool: () => source.ready() },
      showDetails: (c) => {
        const match = /^Bearer +(\S+) *$/i.exec(c.req.header('authorization') ?? '');
        return match?.[1] !== undefined && sameToken(options.token, match[1]);
      },
    }),
  );
  app.route('/', metricsRoute(registry));
  return app;
}
