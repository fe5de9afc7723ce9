import type { Hono } from 'hono';
import { OpsMap, type OpsMapOptions } from './ops-map.ts';
import type { OpsSettings } from './options.ts';
import { opsRoutes } from './routes.ts';
import { OpsSessions } from './session.ts';
import { SessionRevocations } from './session-revocations.ts';

/** The ops map of one ingest replica: routes to mount, the map, and close(). */
export interface OpsService {
  routes: Hono;
  map: OpsMap;
  /** Ends the SSE streams, stops the refresh loop, withdraws presence. Idempotent. */
  close(): Promise<void>;
}

/**
 * Builds the ops capacity map for an ingest replica (composition used by
 * `startIngest`): the {@link OpsMap} refresh loop (started here) and
 * {@link opsRoutes} with operator sessions from `settings.tokens`.
 * Mount with `app.route('/', ops.routes)`; call {@link OpsService.close}
 * before closing the HTTP server so that open event streams end at once.
 */
export function createOpsService(settings: OpsSettings, options: Omit<OpsMapOptions, 'settings'>): OpsService {
  const map = new OpsMap({ ...options, settings });
  const closing = new AbortController();
  const routes = opsRoutes({
    map,
    tokens: settings.tokens,
    sessions: new OpsSessions(settings.tokens, settings.sessionTtlMs),
    revocations: new SessionRevocations({
      redis: options.redis,
      keyPrefix: options.keyPrefix,
      ...(options.logger ? { logger: options.logger } : {}),
    }),
    signal: closing.signal,
  });
  map.start();
  return {
    routes,
    map,
    async close() {
      closing.abort();
      await map.close();
    },
  };
}
