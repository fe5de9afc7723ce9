import { Counter, Gauge, Histogram, type Metric, type Registry, Summary } from 'prom-client';
import { PolyvisionError } from '../errors/index.ts';

type Config<T extends string> = { name: string; help: string; labelNames?: readonly T[] };

function getOrCreate<M extends Metric>(
  registry: Registry,
  kind: string,
  Type: new (config: never) => M,
  config: Config<string> & Record<string, unknown>,
): M {
  const existing = registry.getSingleMetric(config.name);
  if (existing) {
    if (!(existing instanceof Type)) {
      throw new PolyvisionError(
        'metric_conflict',
        `metric ${config.name} is already registered with another type than ${kind}`,
      );
    }
    return existing;
  }
  return new Type({ ...config, registers: [registry] } as never);
}

/**
 * Get-or-create helpers: two modules asking for the same metric name on one
 * registry get the same object instead of prom-client's "already
 * registered" error.
 *
 * @throws PolyvisionError `metric_conflict` when the name exists with another metric type.
 */
export function getCounter<T extends string = string>(
  registry: Registry,
  config: Config<T> & Record<string, unknown>,
): Counter<T> {
  return getOrCreate(registry, 'counter', Counter, config) as Counter<T>;
}

/** See {@link getCounter}. */
export function getGauge<T extends string = string>(
  registry: Registry,
  config: Config<T> & Record<string, unknown>,
): Gauge<T> {
  return getOrCreate(registry, 'gauge', Gauge, config) as Gauge<T>;
}

/** See {@link getCounter}. `buckets` in the metric's unit (seconds for `_seconds`). */
export function getHistogram<T extends string = string>(
  registry: Registry,
  config: Config<T> & { buckets?: number[] } & Record<string, unknown>,
): Histogram<T> {
  return getOrCreate(registry, 'histogram', Histogram, config) as Histogram<T>;
}

/** See {@link getCounter}. */
export function getSummary<T extends string = string>(
  registry: Registry,
  config: Config<T> & { percentiles?: number[] } & Record<string, unknown>,
): Summary<T> {
  return getOrCreate(registry, 'summary', Summary, config) as Summary<T>;
}
