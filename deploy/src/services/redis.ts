import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { Redis } from 'ioredis';
import { aptInstall } from './apt.ts';
import { isAlive, readPidFile, spawnDaemon } from './daemon.ts';
import { commandExists } from './exec.ts';
import { type ManagedSpec, stopManaged, upManaged } from './managed.ts';
import type { ServicesOptions } from './options.ts';
import { templatesDir } from './paths.ts';
import { type RoundTrip, timeRoundTrip } from './round-trip.ts';
import type { LocalService } from './service.ts';
import { renderTemplate } from './template.ts';

/** `redis://127.0.0.1:<port>` */
function url(options: Readonly<ServicesOptions>): string {
  return `redis://127.0.0.1:${options.redisPort}`;
}

/** One PING on a fresh connection that neither retries nor queues. */
export function pingRedis(redisUrl: string, timeoutMs: number): Promise<RoundTrip> {
  return timeRoundTrip(async () => {
    const client = new Redis(redisUrl, {
      lazyConnect: true,
      connectTimeout: timeoutMs,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: () => null,
    });
    client.on('error', () => {}); // reported through the rejected promise
    try {
      await client.connect();
      return await client.ping();
    } finally {
      client.disconnect();
    }
  }, timeoutMs);
}

function spec(options: Readonly<ServicesOptions>): ManagedSpec {
  const dir = path.join(options.workDir, 'redis');
  const logFile = path.join(dir, 'redis.log');
  const pidFile = path.join(dir, 'redis.pid');
  return {
    label: 'Redis',
    pidFile,
    logFile,
    port: options.redisPort,
    portVariable: 'POLYVISION_REDIS_PORT',
    ping: (timeoutMs) => pingRedis(url(options), timeoutMs),
    start: async () => {
      await mkdir(dir, { recursive: true });
      const config = path.join(dir, 'redis.conf');
      await renderTemplate(path.join(templatesDir, 'redis', 'redis.conf.template'), config, {
        PORT: options.redisPort,
        DIR: dir,
      });
      return spawnDaemon({ command: 'redis-server', args: [config], cwd: dir, logFile, pidFile });
    },
    readyTimeoutMs: 15_000,
    stopGraceMs: 10_000,
    onProgress: options.onProgress,
  };
}

/** Redis from the Debian package `redis-server`, one process, no persistence. */
export const redisService: LocalService = {
  name: 'redis',
  envVar: 'REDIS_URL',
  url,
  async install(options) {
    if (await commandExists('redis-server')) return;
    await aptInstall(['redis-server'], options.onProgress);
  },
  up: (options) => upManaged(spec(options)),
  async status(options, timeoutMs) {
    const pid = await readPidFile(path.join(options.workDir, 'redis', 'redis.pid'));
    const trip = await pingRedis(url(options), timeoutMs);
    return {
      name: 'redis',
      envVar: 'REDIS_URL',
      url: url(options),
      pid: pid && (await isAlive(pid)) ? pid : null,
      ...trip,
    };
  },
  down: (options) => stopManaged(spec(options)),
};
