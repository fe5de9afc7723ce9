import { Hono } from 'hono';
import type { Registry } from 'prom-client';

/**
 * A hono app with `GET /metrics` answering the registry in the Prometheus
 * text exposition format (version 0.0.4; content type from the registry).
 * Mount with `app.route('/', metricsRoute(registry))`.
 */
export function metricsRoute(registry: Registry, path = '/metrics'): Hono {
  const app = new Hono();
  app.get(path, async (c) => {
    const body = await registry.metrics();
    return c.body(body, 200, { 'content-type': registry.contentType });
  });
  return app;
}
