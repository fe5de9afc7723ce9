/**
 * Ops capacity map (issue 10; DESIGN.md "Ingest": `GET /ops`,
 * `GET /api/v1/capacity-map`, server-sent events): a live page of
 * datacenters, storage elements, the capacity-monitor leader and jobs,
 * served by every ingest replica behind read-only operator tokens.
 *
 * - {@link createOpsService} — the composition ingest mounts.
 * - {@link OpsMap} — reads the fleet (capacity cache, health keys, leader
 *   record, 507 counts, replicas, events, jobs) every `OPS_REFRESH_MS`,
 *   records transitions once across replicas, pushes changes to listeners.
 * - {@link assembleCapacityMap} — the {@link CapacityMap} from values read (pure).
 * - {@link opsRoutes} — `/ops` (login form, page, assets), the JSON API, the SSE stream.
 * - {@link opsAuth}, {@link OpsSessions} — bearer operator tokens or the signed session cookie;
 *   {@link SessionRevocations} (logged-out cookies), {@link LoginLimiter} (failed logins per address).
 * - {@link OpsStore} — the Redis side: events stream, 507 counts, presence.
 * - {@link readJobsSummary} — the jobs panel, read-only from the orchestrator's tables.
 * - {@link loadOpsSettings} — the `OPS_*` variables.
 */
export * from './auth.ts';
export * from './capacity-map.ts';
export * from './jobs-summary.ts';
export * from './login-limiter.ts';
export * from './ops-map.ts';
export * from './ops-service.ts';
export * from './ops-store.ts';
export * from './options.ts';
export * from './routes.ts';
export * from './session.ts';
export * from './session-revocations.ts';
