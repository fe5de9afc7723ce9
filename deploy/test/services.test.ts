/**
 * The local real services as the global setup left them: `status` says all
 * four answer, and a real round trip works with each (Redis SET/GET, a
 * PostgreSQL table in a schema of its own, one Kafka message produced and
 * consumed on a fresh topic by a fresh group).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestKafka, createTestRedis, createTestSchema, serviceUrl } from '../../test/support/index.ts';
import { compileServicesOptions, exportLines, localServices, servicesStatus } from '../src/services/index.ts';

/**
 * Whether the tests run against the services of `services up` (the global
 * setup started them or found them): not when REDIS_URL etc. were given to
 * point elsewhere (a CI service container, docker compose on other ports).
 */
const onLocalServices = localServices.every(
  (service) => process.env[service.envVar] === service.url(compileServicesOptions()),
);

describe('services', () => {
  it.skipIf(!onLocalServices)(
    'status reports Redis, PostgreSQL, Kafka and S3 answering at the URLs the tests use',
    async () => {
      const statuses = await servicesStatus();
      expect(statuses.map((s) => s.name)).toEqual(['redis', 'postgres', 'kafka', 's3']);
      for (const status of statuses) {
        expect(status.answering, `${status.name}: ${status.detail}`).toBe(true);
        expect(status.url).toBe(serviceUrl(status.envVar as 'REDIS_URL'));
      }
      expect(statuses[0]?.detail).toBe('PONG');
      expect(statuses[1]?.detail).toBe('SELECT 1 → 1');
      expect(statuses[2]?.detail).toMatch(/^cluster \S+, 1 broker\(s\)/);
      expect(statuses[3]?.detail).toMatch(/^S3 answered HTTP \d{3}$/);
    },
  );

  it('status reports a service that does not answer', async () => {
    const statuses = await servicesStatus({ redisPort: 1, postgresPort: 1, kafkaPort: 1, s3Port: 1 }, 2_000);
    for (const status of statuses) expect(status.answering, status.name).toBe(false);
  });

  it('prints export lines a POSIX shell can eval, quoting single quotes', () => {
    expect(exportLines({ A: 'redis://x:1', B: "it's" })).toBe(`export A='redis://x:1'\nexport B='it'\\''s'`);
  });
});

describe('Redis round trip', () => {
  let redis: Awaited<ReturnType<typeof createTestRedis>>;
  beforeAll(async () => {
    redis = await createTestRedis('services');
  });
  afterAll(() => redis.close());

  it('SET then GET returns the value, with a TTL', async () => {
    const key = redis.key('hello');
    await redis.client.set(key, 'world', 'PX', 60_000);
    expect(await redis.client.get(key)).toBe('world');
    expect(await redis.client.pttl(key)).toBeGreaterThan(50_000);
  });
});

describe('PostgreSQL round trip', () => {
  let db: Awaited<ReturnType<typeof createTestSchema>>;
  beforeAll(async () => {
    db = await createTestSchema('services');
  });
  afterAll(() => db.close());

  it('creates a table in its own schema, writes and reads a row', async () => {
    await db.pool.query('CREATE TABLE files (id bigint PRIMARY KEY, size_bytes bigint NOT NULL)');
    await db.pool.query('INSERT INTO files VALUES ($1, $2)', [1, 4096]);
    const { rows } = await db.pool.query<{ size_bytes: string }>('SELECT size_bytes FROM files WHERE id = 1');
    expect(rows).toEqual([{ size_bytes: '4096' }]);
    const where = await db.pool.query<{ table_schema: string }>(
      "SELECT table_schema FROM information_schema.tables WHERE table_name = 'files' AND table_schema = $1",
      [db.schema],
    );
    expect(where.rowCount).toBe(1);
  });
});

describe('Kafka round trip', () => {
  let kafka: Awaited<ReturnType<typeof createTestKafka>>;
  beforeAll(async () => {
    kafka = await createTestKafka();
  });
  afterAll(() => kafka.close());

  it('produces one message on a fresh topic and a fresh group consumes it', async () => {
    const topic = await kafka.createTopic('services', 3);
    const producer = kafka.kafka.producer();
    const consumer = kafka.kafka.consumer({ groupId: kafka.groupId('services'), maxWaitTimeInMs: 100 });
    try {
      await producer.connect();
      await producer.send({ topic, messages: [{ key: 'org-1:match-1', value: 'job.submit' }] });
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      const received = await new Promise<{ key: string; value: string }>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no message within 30 s')), 30_000);
        consumer
          .run({
            eachMessage: async ({ message }) => {
              clearTimeout(timer);
              resolve({ key: String(message.key), value: String(message.value) });
            },
          })
          .catch(reject);
      });
      expect(received).toEqual({ key: 'org-1:match-1', value: 'job.submit' });
    } finally {
      await consumer.disconnect();
      await producer.disconnect();
    }
  });
});
