import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import {
  createTestDatabase,
  createTestKafka,
  createTestRedis,
  createTestSchema,
  deleteKafkaPrefix,
  spawnService,
  spawnTracked,
  stopTracked,
  uniqueIdentifier,
  uniqueName,
  waitFor,
} from '../index.ts';

describe('waitFor', () => {
  it('returns the first truthy value', async () => {
    let calls = 0;
    const value = await waitFor(() => (++calls >= 3 ? `done after ${calls}` : false), { intervalMs: 1 });
    expect(value).toBe('done after 3');
  });

  it('retries a condition that throws, and times out with the last error as cause', async () => {
    const started = performance.now();
    const error = await waitFor(
      () => {
        throw new Error('not yet');
      },
      { timeoutMs: 150, exact: true, intervalMs: 10, message: 'the thing' },
    ).catch((e: unknown) => e as Error);
    expect(performance.now() - started).toBeGreaterThanOrEqual(140);
    expect(error.message).toMatch(/^waitFor: the thing not met within 150 ms; last error: not yet$/);
    expect((error.cause as Error).message).toBe('not yet');
  });
});

describe('unique names', () => {
  it('uniqueName gives distinct names of safe characters', () => {
    const names = new Set(Array.from({ length: 1000 }, () => uniqueName('My Topic')));
    expect(names.size).toBe(1000);
    for (const name of names) expect(name).toMatch(/^my-topic-[a-z0-9]+-[0-9a-f]{8}$/);
  });

  it('uniqueIdentifier gives valid unquoted SQL identifiers of at most 63 bytes', () => {
    expect(uniqueIdentifier('9 lives')).toMatch(/^t_9_lives_[a-z0-9]+_[0-9a-f]{8}$/);
    expect(uniqueIdentifier('x'.repeat(100)).length).toBe(63);
  });
});

describe('createTestRedis', () => {
  it('deletes its own keys on close and leaves others alone', async () => {
    const mine = await createTestRedis('mine');
    const other = await createTestRedis('other');
    try {
      await mine.client.mset(mine.key('a'), '1', mine.key('b', 'c'), '2');
      await other.client.set(other.key('a'), 'kept');
      expect(mine.key('b', 'c')).toBe(`${mine.prefix}b:c`);
      await mine.close();
      expect(await other.client.exists(mine.key('a'), mine.key('b', 'c'))).toBe(0);
      expect(await other.client.get(other.key('a'))).toBe('kept');
    } finally {
      await other.close();
    }
  });
});

describe('createTestSchema', () => {
  it('gives a pool and a URL whose search_path is the schema, and drops the schema on close', async () => {
    const db = await createTestSchema('sp');
    const { rows } = await db.pool.query<{ search_path: string }>('SHOW search_path');
    expect(rows[0]?.search_path).toBe(db.schema);
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await client.query('CREATE TABLE t (x int)');
      const found = await db.pool.query('SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = $2', [
        db.schema,
        't',
      ]);
      expect(found.rowCount).toBe(1);
    } finally {
      await client.end();
    }
    await db.close();
    const check = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await check.connect();
    try {
      const gone = await check.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [db.schema]);
      expect(gone.rowCount).toBe(0);
    } finally {
      await check.end();
    }
  });
});

describe('createTestDatabase', () => {
  it('creates a database that accepts connections, and drops it even with a connection left open', async () => {
    const db = await createTestDatabase('tdb');
    const client = new pg.Client({ connectionString: db.url });
    client.on('error', () => {}); // terminated by DROP DATABASE … WITH (FORCE)
    await client.connect();
    const { rows } = await client.query<{ db: string }>('SELECT current_database() AS db');
    expect(rows[0]?.db).toBe(db.database);
    await db.close();
    await client.end().catch(() => {});
    const check = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await check.connect();
    try {
      expect((await check.query('SELECT 1 FROM pg_database WHERE datname = $1', [db.database])).rowCount).toBe(0);
    } finally {
      await check.end();
    }
  });
});

describe('spawnTracked', () => {
  it('stopTracked ends the child and its own children (the process group)', async () => {
    // A shell that starts a grandchild sleeping in the background and prints its pid.
    const child = spawnTracked('sh', ['-c', 'sleep 300 & echo $!; wait']);
    const grandchildPid = Number(
      await new Promise<string>((resolve) => child.stdout?.once('data', (chunk: Buffer) => resolve(String(chunk)))),
    );
    expect(grandchildPid).toBeGreaterThan(0);
    await stopTracked(child, 2_000);
    expect(child.exitCode !== null || child.signalCode !== null).toBe(true);
    // Gone, or a zombie waiting for init to reap it (it has been killed either way).
    await waitFor(
      async () => {
        const stat = await readFile(`/proc/${grandchildPid}/stat`, 'utf8').catch(() => null);
        return stat === null || stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
      },
      { timeoutMs: 2_000, message: 'grandchild killed' },
    );
  });

  it('stopTracked escalates to SIGKILL when the child ignores SIGTERM', async () => {
    const child = spawnTracked('sh', ['-c', 'trap "" TERM; echo ready; while :; do sleep 0.05; done']);
    await new Promise((resolve) => child.stdout?.once('data', resolve));
    const started = performance.now();
    await stopTracked(child, 200);
    expect(child.signalCode).toBe('SIGKILL');
    expect(performance.now() - started).toBeGreaterThanOrEqual(150);
    await sleep(0);
  });
});

describe('deleteKafkaPrefix', () => {
  it('deletes the topics named <prefix>.… and leaves a topic of another prefix', async () => {
    const kafka = await createTestKafka();
    const prefix = uniqueName('pfx');
    const other = await kafka.createTopic('other');
    try {
      await kafka.admin.createTopics({
        topics: [{ topic: `${prefix}.a` }, { topic: `${prefix}.b` }],
        waitForLeaders: true,
      });
      await deleteKafkaPrefix(prefix);
      const left = await kafka.admin.listTopics();
      expect(left.filter((t) => t.startsWith(`${prefix}.`))).toEqual([]);
      expect(left).toContain(other);
    } finally {
      await kafka.close();
    }
  });
});

describe('spawnService', () => {
  const main = new URL('./fixtures/service-main.ts', import.meta.url).pathname;

  it('resolves with the url of the listening line; stop() ends the child', async () => {
    const service = await spawnService(main, { SERVICE_MODE: 'listen' });
    expect(service.url).toBe('http://127.0.0.1:1');
    expect(service.env.SERVICE_MODE).toBe('listen');
    expect(service.listening).toMatchObject({ args: [], inherited: null });
    await service.stop();
    expect(await service.exited).toBe('SIGTERM');
  });

  it("passes args, cwd and (with inheritEnv) this process's environment", async () => {
    process.env.SPAWN_SERVICE_INHERITED = 'yes';
    try {
      const service = await spawnService(
        main,
        { SERVICE_MODE: 'listen' },
        { args: ['orchestrator', '--x'], cwd: '/tmp', inheritEnv: true },
      );
      expect(service.listening).toMatchObject({ args: ['orchestrator', '--x'], cwd: '/tmp', inherited: 'yes' });
      await service.stop();
    } finally {
      delete process.env.SPAWN_SERVICE_INHERITED;
    }
  });

  it('rejects with the exit code and stderr when the main exits first', async () => {
    await expect(spawnService(main, { SERVICE_MODE: 'fail' }, { label: 'stand-in' })).rejects.toThrow(
      /stand-in exited with 3 before listening: configuration error: SERVICE_MODE/,
    );
  });

  it('rejects after startTimeoutMs and stops the silent child', async () => {
    const started = Date.now();
    await expect(spawnService(main, { SERVICE_MODE: 'silent' }, { startTimeoutMs: 300 })).rejects.toThrow(
      /did not start within 300 ms/,
    );
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
