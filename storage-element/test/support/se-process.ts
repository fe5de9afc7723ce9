import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ServiceProcess, spawnService } from '../../../test/support/index.ts';

const MAIN = resolve(fileURLToPath(new URL('../../src/main.ts', import.meta.url)));
export const TOKEN = 'test-token-1';

/** A storage element running as a real child process. */
export interface SeProcess extends ServiceProcess {
  dataDir: string;
  /** Authorized fetch against the SE. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
}

/**
 * Spawns `node storage-element/src/main.ts` with `env` (on top of a minimal
 * valid config: fresh data dir, port 0, token {@link TOKEN}) and waits for its
 * `listening` line.
 */
export async function startSe(env: Record<string, string> = {}, dataDir?: string): Promise<SeProcess> {
  const dir = dataDir ?? (await mkdtemp(join(tmpdir(), 'se-test-')));
  let service: ServiceProcess;
  try {
    service = await spawnService(
      MAIN,
      {
        STORAGE_ELEMENT_ID: 'se-test',
        STORAGE_DATACENTER_LOCATION: 'dc-test',
        STORAGE_DATA_DIR: dir,
        STORAGE_PORT: '0',
        STORAGE_TOKENS: `${TOKEN},second-token`,
        ...env,
      },
      { label: 'SE', startTimeoutMs: 15_000 },
    );
  } catch (error) {
    if (dataDir === undefined) await rm(dir, { recursive: true, force: true });
    throw error;
  }
  const { url } = service;
  return {
    ...service,
    dataDir: dir,
    fetch: (path, init = {}) =>
      fetch(`${url}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${TOKEN}`, ...(init.headers as Record<string, string> | undefined) },
      }),
  };
}

/** Removes a data dir made by {@link startSe}. */
export async function removeDataDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}
