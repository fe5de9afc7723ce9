import { Redis } from 'ioredis';
import { serviceUrl } from './service-env.ts';
import { uniqueName } from './unique-name.ts';

/** A Redis connection for one test file, with keys of its own. */
export interface TestRedis {
  /** Connected to REDIS_URL; keys are NOT prefixed automatically: use {@link TestRedis.key}. */
  client: Redis;
  /** Unique prefix ending in `:`, e.g. `leader-lq3x9a-1f2e3d4c:`. */
  prefix: string;
  /** `prefix + parts.join(':')`. */
  key(...parts: string[]): string;
  /** Deletes every key under the prefix (SCAN + UNLINK), then closes the connection. */
  close(): Promise<void>;
}

/**
 * Connects to the real Redis at REDIS_URL with a random key prefix.
 *
 * @param name - readable start of the prefix. @defaultValue 'test'
 * @throws Error when REDIS_URL is unset or Redis does not answer.
 */
export async function createTestRedis(name = 'test'): Promise<TestRedis> {
  const prefix = `${uniqueName(name)}:`;
  const client = new Redis(serviceUrl('REDIS_URL'), { lazyConnect: true, maxRetriesPerRequest: 2 });
  await client.connect();
  return {
    client,
    prefix,
    key: (...parts) => `${prefix}${parts.join(':')}`,
    async close() {
      try {
        let cursor = '0';
        do {
          const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
          if (keys.length > 0) await client.unlink(...keys);
          cursor = next;
        } while (cursor !== '0');
      } finally {
        await client.quit().catch(() => client.disconnect());
      }
    },
  };
}
