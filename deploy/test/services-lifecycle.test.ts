/**
 * `up`/`down` (Redis, PostgreSQL, Kafka, S3) on a working folder and ports of their own (so the services the
 * other tests use are not touched): a fresh start, idempotence, a hung
 * instance restarted, a leftover without pid file killed by `down`.
 */
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, uniqueName } from '../../test/support/index.ts';
import { type ServicesOptions, servicesDown, servicesStatus, servicesUp } from '../src/services/index.ts';

describe('services lifecycle', () => {
  const progress: string[] = [];
  let options: Partial<ServicesOptions>;

  afterAll(async () => {
    if (!options) return;
    await servicesDown(options);
    await rm(options.workDir as string, { recursive: true, force: true });
  });

  it('starts all four from nothing and keeps them on a second up', async () => {
    options = {
      workDir: path.join(tmpdir(), uniqueName('services')),
      redisPort: await freePort(),
      postgresPort: await freePort(),
      kafkaPort: await freePort(),
      kafkaControllerPort: await freePort(),
      s3Port: await freePort(),
      onProgress: (line) => progress.push(line),
    };
    const first = await servicesUp(options);
    expect(first.outcomes).toEqual({ redis: 'started', postgres: 'started', kafka: 'started', s3: 'started' });
    expect(first.env).toEqual({
      REDIS_URL: `redis://127.0.0.1:${options.redisPort}`,
      DATABASE_URL: `postgres://postgres@127.0.0.1:${options.postgresPort}/polyvision`,
      KAFKA_BROKERS: `127.0.0.1:${options.kafkaPort}`,
      S3_ENDPOINT: `http://127.0.0.1:${options.s3Port}`,
      S3_ACCESS_KEY_ID: 'polyvision',
      S3_SECRET_ACCESS_KEY: 'polyvision-local-secret',
      S3_REGION: 'us-east-1',
    });
    const statuses = await servicesStatus(options);
    expect(statuses.map((s) => [s.name, s.answering, s.pid !== null])).toEqual([
      ['redis', true, true],
      ['postgres', true, true],
      ['kafka', true, true],
      ['s3', true, true],
    ]);

    const second = await servicesUp(options);
    expect(second.outcomes).toEqual({ redis: 'running', postgres: 'running', kafka: 'running', s3: 'running' });
    expect((await servicesStatus(options)).map((s) => s.pid)).toEqual(statuses.map((s) => s.pid));
  });

  it('restarts an instance that runs but does not answer', async () => {
    const pidFile = path.join(options.workDir as string, 'redis', 'redis.pid');
    const hungPid = Number((await readFile(pidFile, 'utf8')).trim());
    process.kill(hungPid, 'SIGSTOP');
    try {
      const again = await servicesUp(options);
      expect(again.outcomes.redis).toBe('started');
      expect(progress.some((line) => line.includes(`Redis (pid ${hungPid}) runs but does not answer`))).toBe(true);
      const newPid = Number((await readFile(pidFile, 'utf8')).trim());
      expect(newPid).not.toBe(hungPid);
    } finally {
      try {
        process.kill(hungPid, 'SIGKILL');
      } catch {
        // already gone: up killed it
      }
    }
  });

  it('moves our PostgreSQL cluster when its port changes', async () => {
    const oldPort = options.postgresPort as number;
    options = { ...options, postgresPort: await freePort() };
    const moved = await servicesUp(options);
    expect(moved.outcomes).toEqual({ redis: 'running', postgres: 'started', kafka: 'running', s3: 'running' });
    expect(
      progress.some((line) => line.includes(`our cluster runs on port ${oldPort}, not ${options.postgresPort}`)),
    ).toBe(true);
    const postgres = (await servicesStatus(options)).find((s) => s.name === 'postgres');
    expect(postgres?.answering).toBe(true);
    expect(postgres?.pid).not.toBeNull();
  });

  it('down kills a leftover whose pid file is gone, and then nothing answers', async () => {
    const pidFile = path.join(options.workDir as string, 'kafka', 'kafka.pid');
    const kafkaPid = Number((await readFile(pidFile, 'utf8')).trim());
    await rm(pidFile);
    const down = await servicesDown(options);
    expect(down.outcomes).toEqual({ s3: 'stopped', kafka: 'external', postgres: 'stopped', redis: 'stopped' });
    expect(down.leftoversKilled).toContain(kafkaPid);
    // Gone, or a zombie until this process (its parent: the test started it) reaps it.
    const stat = await readFile(`/proc/${kafkaPid}/stat`, 'utf8').catch(() => null);
    expect(stat === null || stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')).toBe(true);
    const statuses = await servicesStatus(options, 2_000);
    expect(statuses.map((s) => s.answering)).toEqual([false, false, false, false]);
  });
});
