import { type Logger, MemoryTtlStore, type PgQueryable, PostgresTtlStore, type TtlStore } from '@polyvision/shared';
import { Redis } from 'ioredis';
import { createMessageBus } from '../../bus/create-bus.ts';
import type { MessageBus } from '../../bus/message-bus.ts';
import { createDatabase } from '../../db/create-database.ts';
import type { Database } from '../../db/database.ts';
import { migrate } from '../../db/migrate.ts';

/** What an orchestrator or worker process connects to. */
export interface Connections {
  bus: MessageBus;
  db: Database;
  redis: Redis | null;
  close(): Promise<void>;
}

/**
 * Opens the bus, the (migrated) database and Redis from their URLs; the
 * embedded drivers where a URL is unset. Redis is configured to fail fast
 * (no offline queue, 500 ms command timeout) because it is only a fast path.
 */
export async function openConnections(
  urls: {
    kafkaBrokers?: string | undefined;
    databaseUrl?: string | undefined;
    redisUrl?: string | undefined;
    schema: string;
  },
  logger: Logger,
  clientId: string,
): Promise<Connections> {
  const bus = createMessageBus(urls.kafkaBrokers, clientId);
  const db = createDatabase({ databaseUrl: urls.databaseUrl, schema: urls.schema, maxConnections: 20 });
  if (!urls.databaseUrl) logger.warn('DATABASE_URL unset: PGlite in memory, state is lost at exit and not shared');
  if (!urls.kafkaBrokers) logger.warn('KAFKA_BROKERS unset: in-memory bus, only this process takes part');
  const applied = await migrate(db);
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');
  const redis = urls.redisUrl
    ? new Redis(urls.redisUrl, {
        enableOfflineQueue: false,
        maxRetriesPerRequest: 1,
        commandTimeout: 500,
        connectTimeout: 2_000,
        retryStrategy: (times) => Math.min(times * 200, 2_000),
      })
    : null;
  redis?.on('error', (error) => logger.debug({ err: error }, 'redis error'));
  return {
    bus,
    db,
    redis,
    async close() {
      await bus.close();
      redis?.disconnect();
      await db.close();
    },
  };
}

/** The TtlStore of leadership elections: PostgreSQL when the database is, else memory. */
export function leadershipStore(db: Database): TtlStore {
  if (db.kind !== 'pg') return new MemoryTtlStore();
  const queryable = { query: (text: string, values?: unknown[]) => db.query(text, values) } as unknown as PgQueryable;
  return new PostgresTtlStore(queryable, { schema: db.schema });
}
