import { Elections, RedisTtlStore, Registry } from '@polyvision/shared';
import { Redis } from 'ioredis';
import { serviceUrl } from '../../../../test/support/index.ts';
import {
  AdaptiveCapacityMonitor,
  type AdaptiveCapacityMonitorOptions,
  CapacityCache,
  type CapacityMonitorSettings,
  compileCapacityMonitorSettings,
  type StorageElementConfig,
} from '../../../src/capacity/index.ts';

/** Fast settings for tests: lease 1.5 s (renewal every 0.5 s), base poll 0.2 s. */
export const FAST: Partial<CapacityMonitorSettings> = {
  leaderTtlMs: 1_500,
  leaderRenewalIntervalMs: 500,
  baseIntervalMs: 200,
  maxIntervalMs: 2_000,
  httpTimeoutMs: 500,
  httpRetries: 0,
  retryBaseDelayMs: 20,
  lazyLockMs: 1_000,
};

/** One replica's monitor with its own Redis connection (so a test can cut it). */
export interface TestMonitor {
  monitor: AdaptiveCapacityMonitor;
  redis: Redis;
  registry: Registry;
  elections: Elections;
  cache: CapacityCache;
  /** Times the LeadershipRunner's killer fired (it would end the process in production). */
  kills(): number;
  close(): Promise<void>;
}

export async function createMonitor(
  instanceId: string,
  prefix: string,
  storageElements: StorageElementConfig[],
  settings: Partial<CapacityMonitorSettings> = {},
  extra: Pick<AdaptiveCapacityMonitorOptions, 'fetch'> = {},
): Promise<TestMonitor> {
  let kills = 0;
  const redis = new Redis(serviceUrl('REDIS_URL'), { lazyConnect: true, maxRetriesPerRequest: 1 });
  redis.on('error', () => undefined);
  await redis.connect();
  const store = new RedisTtlStore(redis, { keyPrefix: prefix });
  const elections = new Elections(store);
  const registry = new Registry();
  const cache = new CapacityCache(redis, prefix);
  const monitor = new AdaptiveCapacityMonitor({
    instanceId,
    storageElements,
    settings: compileCapacityMonitorSettings({ ...FAST, ...settings }),
    elections,
    store,
    cache,
    registry,
    kill: () => {
      kills += 1;
    },
    ...extra,
  });
  let closed = false;
  return {
    monitor,
    redis,
    registry,
    elections,
    cache,
    kills: () => kills,
    async close() {
      if (closed) return;
      closed = true;
      await monitor.close();
      await elections.close().catch(() => undefined);
      redis.disconnect();
    },
  };
}

/** Reads one metric value (sum over matching label sets). */
export async function metricValue(
  registry: Registry,
  name: string,
  labels: Record<string, string> = {},
  series = '',
): Promise<number> {
  const metric = await registry.getSingleMetricAsString(name).catch(() => '');
  let sum = 0;
  for (const line of metric.split('\n')) {
    const head = `${name}${series}`;
    if (!line.startsWith(`${head}{`) && !line.startsWith(`${head} `)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    sum += Number(line.split(' ').pop());
  }
  return sum;
}
