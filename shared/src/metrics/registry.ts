import { collectDefaultMetrics, Registry } from 'prom-client';

export { Registry } from 'prom-client';

/** Options of {@link createMetricsRegistry}. */
export interface MetricsRegistryOptions {
  /** Written as the `service` label on every metric. */
  service: string;
  /** More labels on every metric (e.g. `storage_id`). */
  labels?: Record<string, string>;
  /** Also collect Node process metrics (CPU, memory, event-loop lag, GC). @defaultValue true */
  collectDefault?: boolean;
  /** Prefix of the default metrics' names. @defaultValue 'polyvision_' */
  defaultPrefix?: string;
}

/**
 * A fresh prom-client registry (not the global one, so several services in
 * one process — the embedded demo — keep separate metrics) with default
 * labels `{service, ...labels}`.
 */
export function createMetricsRegistry(options: MetricsRegistryOptions): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service: options.service, ...options.labels });
  if (options.collectDefault ?? true) {
    collectDefaultMetrics({ register: registry, prefix: options.defaultPrefix ?? 'polyvision_' });
  }
  return registry;
}
