import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../test/support/index.ts';
import { spawnDaemon } from '../src/services/daemon.ts';
import { type ManagedSpec, stopManaged, upManaged } from '../src/services/managed.ts';

/**
 * A daemon that cannot bind its port for its first `failures` starts, saying so the way Redis,
 * PostgreSQL, Kafka and versitygw do, then listens. A real kernel gives that only while a closed
 * connection holds the port in TIME_WAIT, which a test cannot arrange on demand.
 */
const DAEMON = `
const fs = require('node:fs');
const [counter, port, failures, message] = process.argv.slice(1);
const n = Number(fs.existsSync(counter) ? fs.readFileSync(counter, 'utf8') : 0);
fs.writeFileSync(counter, String(n + 1));
if (n < Number(failures)) { console.error(message.replace('PORT', port)); process.exit(1); }
require('node:net').createServer((s) => s.end(counter)).listen(Number(port), '127.0.0.1');
`;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pv-managed-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/**
 * Whether our daemon answers on `port`: it replies with its counter file's path, so a program that
 * took the port meanwhile (another test's) does not pass for it.
 */
function answers(port: number, token: string, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let reply = '';
    const done = (ok: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      reply += chunk.toString();
    });
    socket.once('end', () => done(reply === token));
    socket.once('error', () => done(false));
  });
}

async function spec(name: string, failures: number, message: string): Promise<ManagedSpec & { lines: string[] }> {
  const port = await freePort();
  const lines: string[] = [];
  const files = { logFile: join(dir, `${name}.log`), pidFile: join(dir, `${name}.pid`) };
  return {
    label: name,
    ...files,
    port,
    portVariable: 'TEST_PORT',
    ping: async (timeoutMs) => ({
      answering: await answers(port, join(dir, `${name}.count`), timeoutMs),
      roundTripMs: 0,
      detail: 'tcp',
    }),
    start: () =>
      spawnDaemon({
        command: process.execPath,
        args: ['-e', DAEMON, join(dir, `${name}.count`), String(port), String(failures), message],
        cwd: dir,
        ...files,
      }),
    readyTimeoutMs: 10_000,
    stopGraceMs: 2_000,
    onProgress: (line) => lines.push(line),
    lines,
  };
}

const starts = async (name: string) => Number(await readFile(join(dir, `${name}.count`), 'utf8'));

describe('upManaged and a port held in TIME_WAIT', () => {
  it('starts the daemon again until the port can be bound', async () => {
    const s = await spec('held', 2, 'listen tcp 127.0.0.1:PORT: bind: address already in use');
    try {
      expect(await upManaged(s)).toBe('started');
      expect(await starts('held')).toBe(3);
      expect(s.lines.filter((l) => l.includes('cannot be bound yet'))).toHaveLength(2);
      // The started daemon answers: a whole round trip, with a timeout generous for a loaded host.
      expect(await answers(s.port, join(dir, 'held.count'), 15_000)).toBe(true);
    } finally {
      await stopManaged(s);
    }
  }, 60_000);

  it('gives up at once, with the log, when the daemon dies for another reason', async () => {
    const s = await spec('broken', 5, 'FATAL: data directory has wrong ownership');
    await expect(upManaged(s)).rejects.toMatchObject({
      code: 'services_start_failed',
      message: expect.stringContaining('data directory has wrong ownership'),
    });
    expect(await starts('broken')).toBe(1);
  }, 60_000);

  it('gives up after bindRetryMs', async () => {
    const s = { ...(await spec('stuck', 100, 'bind: Address already in use')), bindRetryMs: 1_000 };
    await expect(upManaged(s)).rejects.toMatchObject({ code: 'services_start_failed' });
    expect(await starts('stuck')).toBeLessThanOrEqual(2);
  }, 60_000);
});
