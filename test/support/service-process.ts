import type { ChildProcess } from 'node:child_process';
import { spawnTracked, stopTracked } from './processes.ts';

/** A service main running as a tracked child process. */
export interface ServiceProcess {
  /** The `url` of its `listening` line. */
  url: string;
  child: ChildProcess;
  /** The environment it was started with. */
  env: Record<string, string>;
  /** SIGTERM (SIGKILL after 5 s) and wait for the exit. */
  stop(): Promise<void>;
  /** SIGKILL (a crash) and wait for the exit. */
  kill9(): Promise<void>;
  /** Its stderr so far (JSON logs), for failure messages. */
  stderr(): string;
}

/** Options of {@link spawnService}. */
export interface SpawnServiceOptions {
  /** The name in start-up errors. @defaultValue the main's path */
  label?: string;
  /** Time allowed until the `listening` line, in milliseconds. @defaultValue 20000 */
  startTimeoutMs?: number;
  /** Node options before the main (e.g. `--no-warnings`). @defaultValue none */
  nodeArgs?: readonly string[];
}

/**
 * Spawns `node <main>` (tracked: the leak check kills it if a test forgets)
 * with a minimal environment (PATH, HOME, LOG_LEVEL=warn) under `env`, and
 * waits for the JSON line `{"event":"listening","url":…}` that every service
 * main (storage element, ingest) prints on stdout when ready.
 *
 * @throws Error naming the service and carrying its stderr when it exits
 *   first or does not listen within `startTimeoutMs`.
 */
export async function spawnService(
  main: string,
  env: Record<string, string>,
  { label = main, startTimeoutMs = 20_000, nodeArgs = [] }: SpawnServiceOptions = {},
): Promise<ServiceProcess> {
  const fullEnv = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', LOG_LEVEL: 'warn', ...env };
  const child = spawnTracked(process.execPath, [...nodeArgs, main], {
    env: fullEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolveUrl, reject) => {
    let out = '';
    const timer = setTimeout(
      () => reject(new Error(`${label} did not start within ${startTimeoutMs} ms: ${stderr}`)),
      startTimeoutMs,
    );
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
      reject(new Error(`${label} exited with ${code} before listening: ${stderr}`));
    });
  }).catch(async (error: unknown) => {
    await stopTracked(child);
    throw error;
  });
  return {
    url,
    child,
    env: fullEnv,
    stop: () => stopTracked(child),
    kill9: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
    stderr: () => stderr,
  };
}
