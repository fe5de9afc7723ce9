import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnTracked, stopTracked } from '../../../test/support/index.ts';

const MAIN = resolve(fileURLToPath(new URL('../../src/main.ts', import.meta.url)));
export const TOKEN = 'test-token-1';

/** A storage element running as a real child process. */
export interface SeProcess {
  url: string;
  child: ChildProcess;
  dataDir: string;
  env: Record<string, string>;
  /** Authorized fetch against the SE. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** SIGTERM and wait. */
  stop(): Promise<void>;
  /** SIGKILL (crash) and wait for the exit. */
  kill9(): Promise<void>;
  /** Collected stderr (JSON logs), for failure messages. */
  stderr(): string;
}

/**
 * Spawns `node storage-element/src/main.ts` with `env` (on top of a minimal
 * valid config: fresh data dir, port 0, token {@link TOKEN}) and waits for its
 * `listening` line.
 */
export async function startSe(env: Record<string, string> = {}, dataDir?: string): Promise<SeProcess> {
  const dir = dataDir ?? (await mkdtemp(join(tmpdir(), 'se-test-')));
  const fullEnv: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/root',
    LOG_LEVEL: 'warn',
    STORAGE_ELEMENT_ID: 'se-test',
    STORAGE_DATACENTER_LOCATION: 'dc-test',
    STORAGE_DATA_DIR: dir,
    STORAGE_PORT: '0',
    STORAGE_TOKENS: `${TOKEN},second-token`,
    ...env,
  };
  const child = spawnTracked(process.execPath, [MAIN], { env: fullEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const listening = new Promise<string>((resolveUrl, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`SE did not start within 15 s: ${stderr}`)), 15_000);
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (line) {
        clearTimeout(timer);
        resolveUrl((JSON.parse(line) as { url: string }).url);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`SE exited with ${code} before listening: ${stderr}`));
    });
  });
  let url: string;
  try {
    url = await listening;
  } catch (error) {
    if (dataDir === undefined) await rm(dir, { recursive: true, force: true });
    throw error;
  }
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    url,
    child,
    dataDir: dir,
    env: fullEnv,
    fetch: (path, init = {}) =>
      fetch(`${url}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${TOKEN}`, ...(init.headers as Record<string, string> | undefined) },
      }),
    stop: () => stopTracked(child),
    kill9: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
    stderr: () => stderr,
  };
}

/** Removes a data dir made by {@link startSe}. */
export async function removeDataDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}
