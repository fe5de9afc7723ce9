import { execFile } from 'node:child_process';
import { chmod, chown, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { waitFor } from '../../../../test/support/index.ts';

const run = promisify(execFile);

/**
 * A private PostgreSQL cluster for a test that restarts the server (the
 * shared one must not be restarted under other tests): initdb in a temp
 * folder, trust auth, loopback, a random port; as the `postgres` user when
 * running as root. `restart()` is `pg_ctl restart -m fast` (connections cut).
 */
export interface PrivatePostgres {
  url: string;
  restart(): Promise<void>;
  stop(): Promise<void>;
}

async function serverBin(): Promise<string> {
  const versions = (await readdir('/usr/lib/postgresql').catch(() => [] as string[])).filter((v) => /^\d+$/.test(v));
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (!newest) throw new Error('no PostgreSQL server installed under /usr/lib/postgresql');
  return path.join('/usr/lib/postgresql', newest, 'bin');
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = await serverBin();
  const dir = await mkdtemp(path.join(tmpdir(), 'pv-orch-pg-'));
  const root = process.getuid?.() === 0;
  const asPostgres = async (command: string, args: string[]) => {
    if (root) return run('runuser', ['-u', 'postgres', '--', path.join(bin, command), ...args], { timeout: 60_000 });
    return run(path.join(bin, command), args, { timeout: 60_000 });
  };
  if (root) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    await chown(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  await chmod(dir, 0o700);
  const data = path.join(dir, 'data');
  await asPostgres('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
  const start = () => asPostgres('pg_ctl', ['-D', data, '-o', options, '-l', path.join(dir, 'log'), '-w', 'start']);
  await start();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    url,
    async restart() {
      await asPostgres('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
      await asPostgres('pg_ctl', ['-D', data, '-o', options, '-l', path.join(dir, 'log'), '-w', 'start']);
    },
    async stop() {
      await asPostgres('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Waits until `url` answers (after a restart). */
export async function waitForPostgres(check: () => Promise<unknown>): Promise<void> {
  await waitFor(check, { timeoutMs: 30_000, intervalMs: 200, message: 'PostgreSQL answering' });
}
