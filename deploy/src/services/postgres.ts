import { createHash } from 'node:crypto';
import { access, appendFile, chown, mkdir, readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { PolyvisionError } from '@polyvision/shared';
import pg from 'pg';
import { aptInstall } from './apt.ts';
import { isAlive, readPidFile } from './daemon.ts';
import { exec } from './exec.ts';
import { type ManagedSpec, stopManaged, upManaged } from './managed.ts';
import type { ServicesOptions } from './options.ts';
import { templatesDir } from './paths.ts';
import { type RoundTrip, timeRoundTrip } from './round-trip.ts';
import type { LocalService } from './service.ts';
import { renderTemplate } from './template.ts';

/** The database `up` creates and DATABASE_URL names. */
export const DATABASE_NAME = 'polyvision';

/** `postgres://postgres@127.0.0.1:<port>/polyvision` (trust authentication on loopback). */
function url(options: Readonly<ServicesOptions>, database = DATABASE_NAME): string {
  return `postgres://postgres@127.0.0.1:${options.postgresPort}/${database}`;
}

/** One `SELECT 1` on a fresh connection. */
export function pingPostgres(databaseUrl: string, timeoutMs: number): Promise<RoundTrip> {
  return timeRoundTrip(async () => {
    const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: timeoutMs });
    client.on('error', () => {}); // reported through the rejected promise
    try {
      await client.connect();
      const result = await client.query<{ one: number }>('SELECT 1 AS one');
      return `SELECT 1 → ${result.rows[0]?.one}`;
    } finally {
      await client.end().catch(() => {});
    }
  }, timeoutMs);
}

const isRoot = () => process.getuid?.() === 0;

/**
 * The newest installed server's bin folder, e.g. `/usr/lib/postgresql/15/bin`
 * (Debian's layout), or null.
 */
async function findServerBin(): Promise<string | null> {
  const base = '/usr/lib/postgresql';
  const versions = await readdir(base).catch(() => [] as string[]);
  const usable: number[] = [];
  for (const version of versions) {
    try {
      await access(path.join(base, version, 'bin', 'initdb'));
      if (/^\d+$/.test(version)) usable.push(Number(version));
    } catch {
      // a client-only install
    }
  }
  const newest = usable.sort((a, b) => b - a)[0];
  return newest === undefined ? null : path.join(base, String(newest), 'bin');
}

async function serverBin(): Promise<string> {
  const bin = await findServerBin();
  if (!bin) throw new PolyvisionError('services_package_missing', 'no PostgreSQL server in /usr/lib/postgresql/*/bin');
  return bin;
}

/** Runs a PostgreSQL program as the `postgres` user when we are root (the server refuses to run as root). */
function asPostgres(command: string, args: readonly string[]) {
  return isRoot() ? exec('runuser', ['-u', 'postgres', '--', command, ...args]) : exec(command, args);
}

const rootCache = new Map<string, string>();

/**
 * The cluster's folder: `<work>/postgres`, unless we are root and the
 * `postgres` user cannot reach the working folder (a checkout under /root):
 * then `/var/tmp/polyvision-services-<hash of the working folder>/postgres`.
 */
async function clusterRoot(options: Readonly<ServicesOptions>): Promise<string> {
  const cached = rootCache.get(options.workDir);
  if (cached) return cached;
  let root = path.join(options.workDir, 'postgres');
  if (isRoot()) {
    await mkdir(options.workDir, { recursive: true });
    const reachable = await exec('runuser', ['-u', 'postgres', '--', 'test', '-x', options.workDir]).then(
      () => true,
      () => false,
    );
    if (!reachable) {
      const hash = createHash('sha256').update(options.workDir).digest('hex').slice(0, 12);
      root = path.join('/var/tmp', `polyvision-services-${hash}`, 'postgres');
    }
  }
  rootCache.set(options.workDir, root);
  return root;
}

async function postgresIds(): Promise<{ uid: number; gid: number }> {
  const uid = Number((await exec('id', ['-u', 'postgres'])).stdout.trim());
  const gid = Number((await exec('id', ['-g', 'postgres'])).stdout.trim());
  return { uid, gid };
}

async function spec(options: Readonly<ServicesOptions>): Promise<ManagedSpec> {
  const root = await clusterRoot(options);
  const data = path.join(root, 'data');
  const logFile = path.join(root, 'postgres.log');
  return {
    label: 'PostgreSQL',
    pidFile: path.join(data, 'postmaster.pid'),
    logFile,
    port: options.postgresPort,
    portVariable: 'POLYVISION_POSTGRES_PORT',
    ping: (timeoutMs) => pingPostgres(url(options, 'postgres'), timeoutMs),
    start: async () => {
      const bin = await serverBin();
      await mkdir(root, { recursive: true });
      const ids = isRoot() ? await postgresIds() : null;
      if (ids) await chown(root, ids.uid, ids.gid);
      const initialised = await access(path.join(data, 'PG_VERSION')).then(
        () => true,
        () => false,
      );
      if (!initialised) {
        options.onProgress(`PostgreSQL: initdb ${data}`);
        await rm(data, { recursive: true, force: true });
        await asPostgres(path.join(bin, 'initdb'), [
          '-D',
          data,
          '-U',
          'postgres',
          '--auth=trust',
          '-E',
          'UTF8',
          '--no-locale',
        ]);
        await appendFile(path.join(data, 'postgresql.conf'), "\ninclude = 'polyvision.conf'\n");
      }
      const conf = path.join(data, 'polyvision.conf');
      await renderTemplate(path.join(templatesDir, 'postgres', 'polyvision.conf.template'), conf, {
        PORT: options.postgresPort,
      });
      if (ids) await chown(conf, ids.uid, ids.gid);
      await asPostgres(path.join(bin, 'pg_ctl'), ['-D', data, '-l', logFile, '-w', '-t', '60', 'start']);
      const pid = await readPidFile(path.join(data, 'postmaster.pid'));
      if (pid === null)
        throw new PolyvisionError('services_start_failed', `PostgreSQL wrote no ${data}/postmaster.pid`);
      return pid;
    },
    stop: async () => {
      await asPostgres(path.join(await serverBin(), 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', '-t', '30', 'stop']);
    },
    readyTimeoutMs: 60_000,
    stopGraceMs: 15_000,
    onProgress: options.onProgress,
  };
}

/**
 * Our cluster's postmaster when it is alive: pid and port from
 * `postmaster.pid` (line 1 the pid, line 4 the port; PostgreSQL's
 * src/include/utils/pidfile.h).
 */
async function runningCluster(pidFile: string): Promise<{ pid: number; port: number } | null> {
  const pid = await readPidFile(pidFile);
  if (pid === null || !(await isAlive(pid))) return null;
  const lines = (await readFile(pidFile, 'utf8').catch(() => '')).split('\n');
  return { pid, port: Number(lines[3]?.trim()) };
}

/** Creates the `polyvision` database when it does not exist. */
async function ensureDatabase(options: Readonly<ServicesOptions>): Promise<void> {
  const client = new pg.Client({ connectionString: url(options, 'postgres'), connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE_NAME]);
    if (found.rowCount === 0) {
      options.onProgress(`PostgreSQL: CREATE DATABASE ${DATABASE_NAME}`);
      await client.query(`CREATE DATABASE ${DATABASE_NAME}`);
    }
  } catch (error) {
    // Two creators at once: the loser sees duplicate_database (42P04), which is fine.
    if ((error as { code?: string }).code !== '42P04') throw error;
  } finally {
    await client.end();
  }
}

/**
 * PostgreSQL from the Debian package `postgresql`, as a private cluster made
 * with initdb in the working folder (never the system cluster), run as the
 * `postgres` user.
 */
export const postgresService: LocalService = {
  name: 'postgres',
  envVar: 'DATABASE_URL',
  url,
  async install(options) {
    if (await findServerBin()) return;
    await aptInstall(['postgresql'], options.onProgress);
  },
  async up(options) {
    const managed = await spec(options);
    const running = await runningCluster(managed.pidFile);
    if (running && running.port !== options.postgresPort) {
      options.onProgress(
        `PostgreSQL: our cluster runs on port ${running.port}, not ${options.postgresPort}; restarting it`,
      );
      await stopManaged(managed);
    }
    const outcome = await upManaged(managed);
    await ensureDatabase(options);
    return outcome;
  },
  async status(options, timeoutMs) {
    const root = await clusterRoot(options);
    const running = await runningCluster(path.join(root, 'data', 'postmaster.pid'));
    const trip = await pingPostgres(url(options), timeoutMs);
    return {
      name: 'postgres',
      envVar: 'DATABASE_URL',
      url: url(options),
      pid: running?.port === options.postgresPort ? running.pid : null,
      ...trip,
    };
  },
  async down(options) {
    return stopManaged(await spec(options));
  },
};

/** The cluster folder (for `down`'s leftover search and the README's reset advice). */
export { clusterRoot as postgresClusterRoot };
