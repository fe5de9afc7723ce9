import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { serviceUrl } from '../../../test/support/service-env.ts';
import { RedisTtlStore, systemClock } from '../../src/leadership/index.ts';
import { describeTtlStoreConformance } from './conformance.ts';

/** Deletes every key under `prefix` (SCAN, never KEYS). */
async function deletePrefix(client: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await client.del(...keys);
  } while (cursor !== '0');
}

describeTtlStoreConformance({
  name: 'redis',
  leaseMs: 600,
  async create() {
    const redisUrl = serviceUrl('REDIS_URL');
    const keyPrefix = `test:leadership:${randomUUID()}:`;
    const clients = [new Redis(redisUrl, { lazyConnect: true })];
    await clients[0]?.connect();
    const first = clients[0] as Redis;
    return {
      store: new RedisTtlStore(first, { keyPrefix }),
      clock: systemClock,
      pass: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      async reopen() {
        const client = new Redis(redisUrl);
        clients.push(client);
        return new RedisTtlStore(client, { keyPrefix });
      },
      async teardown() {
        await deletePrefix(first, keyPrefix);
        await Promise.all(clients.map((c) => c.quit()));
      },
    };
  },
});
