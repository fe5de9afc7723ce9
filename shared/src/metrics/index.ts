/**
 * Prometheus metrics: a per-service registry with default labels, a hono
 * `/metrics` route, and get-or-create helpers for counters, gauges,
 * histograms and summaries.
 */
export * from './get-or-create.ts';
export * from './metrics-route.ts';
export * from './registry.ts';
