import { randomUUID } from 'node:crypto';
import { type StageTask, stageTaskSchema } from '@polyvision/shared';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestRedis, type TestRedis } from '../../../test/support/index.ts';
import type { Database } from '../../src/db/database.ts';
import { migrate } from '../../src/db/migrate.ts';
import { RedisStageKeys } from '../../src/workers/runtime/redis-stage-keys.ts';
import { PgStageClaimStore } from '../../src/workers/runtime/stage-claims.ts';
import { testDatabaseDrivers } from '../orchestrator/support/databases.ts';
import { dispatched } from './support/dispatched.ts';

const driver = testDatabaseDrivers.find((d) => !d.skip)!;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function task(modelVersion: string): StageTask {
  return stageTaskSchema.parse({
    type: 'stage.task',
    message_id: randomUUID(),
    job_id: 'job-1',
    organization_id: 'acme',
    match_id: 'm-1',
    created_at: new Date().toISOString(),
    stage: 'detect',
    attempt: 1,
    model_version: modelVersion,
    inputs: [],
    params: {},
  });
}

describe.skipIf(!process.env.REDIS_URL)(`seeds' Redis stage keys over PostgreSQL claims (${driver.name})`, () => {
  let redis: TestRedis;
  /** The database of the last `stores()`: claims are only granted to dispatched tasks. */
  let db: Database;

  async function stores() {
    const opened = await driver.open();
    db = opened.db;
    cleanups.push(opened.drop);
    await migrate(db);
    redis = await createTestRedis('stage-keys');
    cleanups.push(() => redis.close());
    return new PgStageClaimStore(db);
  }

  it('writes processing (≤ 2 h) then completed (7 days) under {stage}:{org}:{match}:{model_version}, deletes it on failure', async () => {
    const claims = new RedisStageKeys(await stores(), redis.client, redis.prefix);
    const ok = await dispatched(db, task('v1'));
    const key = `${redis.prefix}detect:acme:m-1:v1`;
    expect(await claims.claim(ok, 'w1', 10_000)).toEqual({ state: 'claimed' });
    expect(await redis.client.get(key)).toBe('processing');
    const processingTtl = await redis.client.pttl(key);
    expect(processingTtl).toBeGreaterThan(2 * 3600_000 - 60_000);
    expect(processingTtl).toBeLessThanOrEqual(2 * 3600_000);
    await claims.complete(ok, 'w1', { outputs: [] });
    expect(await redis.client.get(key)).toBe('completed');
    expect(await redis.client.pttl(key)).toBeGreaterThan(7 * 24 * 3600_000 - 60_000);
    expect(await claims.claim(ok, 'w2', 10_000)).toMatchObject({ state: 'completed' });

    const bad = await dispatched(db, task('v2'));
    await claims.claim(bad, 'w1', 10_000);
    await claims.fail(bad, 'w1', { code: 'x', message: 'y', retriable: true });
    expect(await redis.client.exists(`${redis.prefix}detect:acme:m-1:v2`)).toBe(0);
  });

  it('with Redis unreachable, claims still decide (no second run) and nothing throws', async () => {
    const inner = await stores();
    const dead = new Redis('redis://127.0.0.1:1', {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    dead.on('error', () => {});
    cleanups.push(async () => dead.disconnect());
    const claims = new RedisStageKeys(inner, dead, 'x:');
    const t = await dispatched(db, task('v3'));
    expect(await claims.claim(t, 'w1', 10_000)).toEqual({ state: 'claimed' });
    expect(await claims.claim(t, 'w2', 10_000)).toMatchObject({ state: 'busy', owner: 'w1' });
    await claims.complete(t, 'w1', { outputs: [], stats: { n: 1 } });
    expect(await claims.claim(t, 'w2', 10_000)).toEqual({
      state: 'completed',
      result: { outputs: [], stats: { n: 1 } },
    });
  });
});
