import { randomBytes } from 'node:crypto';
import {
  createDatabase,
  createMessageBus,
  type Database,
  ensurePolyvisionTopics,
  type IdempotencyCache,
  MemoryIdempotencyCache,
  type MessageBus,
  migrate,
  polyvisionTopicSpecs,
  RedisIdempotencyCache,
} from '@polyvision/core';
import { Redis } from 'ioredis';
import { createEmbeddedRedis } from './embedded-redis.ts';

/** The real service URLs (DESIGN.md "Embedded default and real services"); unset → embedded driver. */
export interface ServiceUrls {
  redisUrl?: string | undefined;
  databaseUrl?: string | undefined;
  kafkaBrokers?: string | undefined;
}

/** What every replica of the demo shares. */
export interface DemoInfra {
  /** `kafka` or `memory`. */
  busKind: string;
  /** `pg` or `pglite`. */
  dbKind: string;
  /** `redis` (REDIS_URL) or `memory`. */
  redisKind: 'redis' | 'memory';
  bus: MessageBus;
  db: Database;
  /** A fresh Redis client (each ingest replica gets its own; embedded ones share one in-memory keyspace). */
  newRedis(): Redis;
  /** `job:processed` fast path shared by the orchestrator replicas. */
  idempotency: IdempotencyCache;
  /** Topic prefix of this run (random on real services so runs never meet). */
  topicPrefix: string;
  /** Redis key prefix of this run. */
  redisKeyPrefix: string;
  /** SQL schema of this run. */
  schema: string;
  /** Placeholder or real URL handed to ingest's config. */
  redisUrlForConfig: string;
  /** Closes every connection; on real services also drops this run's schema, topics and keys. */
  close(): Promise<void>;
}

/**
 * Opens the shared infrastructure: real Redis/PostgreSQL/Kafka where their URL
 * is set, else the embedded in-memory Redis, PGlite and the in-memory
 * partitioned bus. On real services every name is made unique to this run
 * (topic prefix, schema, key prefix) and removed on close, so the demo can run
 * beside tests and other demos.
 *
 * @throws whatever the drivers throw when a real service is unreachable.
 */
export async function openDemoInfra(urls: ServiceUrls): Promise<DemoInfra> {
  const run = randomBytes(4).toString('hex');
  const topicPrefix = urls.kafkaBrokers ? `demo-${run}` : 'polyvision';
  const schema = urls.databaseUrl ? `demo_${run}` : 'public';
  const redisKeyPrefix = urls.redisUrl ? `demo:${run}:` : '';
  const bus = createMessageBus(urls.kafkaBrokers, `polyvision-demo-${run}`);
  const db = createDatabase({ databaseUrl: urls.databaseUrl, schema, maxConnections: 20 });
  const clients: Redis[] = [];
  const embedded = urls.redisUrl ? null : createEmbeddedRedis(`demo-${run}`);
  const newRedis = (): Redis => {
    const client = urls.redisUrl
      ? new Redis(urls.redisUrl, { maxRetriesPerRequest: 2 })
      : (embedded as NonNullable<typeof embedded>).client();
    clients.push(client);
    return client;
  };
  try {
    await migrate(db);
    await ensurePolyvisionTopics(bus, topicPrefix);
  } catch (error) {
    await Promise.allSettled([bus.close(), db.close()]);
    throw error;
  }
  const idempotencyRedis = urls.redisUrl ? newRedis() : null;
  const idempotency: IdempotencyCache = idempotencyRedis
    ? new RedisIdempotencyCache(idempotencyRedis, redisKeyPrefix)
    : new MemoryIdempotencyCache();
  let closing: Promise<void> | undefined;
  return {
    busKind: bus.kind,
    dbKind: db.kind,
    redisKind: urls.redisUrl ? 'redis' : 'memory',
    bus,
    db,
    newRedis,
    idempotency,
    topicPrefix,
    redisKeyPrefix,
    schema,
    redisUrlForConfig: urls.redisUrl ?? 'redis://embedded.invalid:6379',
    close() {
      closing ??= (async () => {
        await idempotency.close().catch(() => {});
        for (const client of clients) client.disconnect();
        if (urls.redisUrl) await deleteKeys(urls.redisUrl, redisKeyPrefix).catch(() => {});
        if (urls.kafkaBrokers) {
          const topics = polyvisionTopicSpecs(topicPrefix).map((spec) => spec.topic);
          await bus.deleteTopics(topics).catch(() => {});
        }
        await bus.close().catch(() => {});
        if (urls.databaseUrl) await db.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
        await db.close().catch(() => {});
      })();
      return closing;
    },
  };
}

/** Deletes every key under `prefix` (SCAN, never KEYS: the server may be shared and large). */
async function deleteKeys(redisUrl: string, prefix: string): Promise<void> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 2 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
