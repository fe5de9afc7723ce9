import type { ChildProcess } from 'node:child_process';
import { spawnTracked, stopTracked } from './processes.ts';

/** A service main running as a tracked child process. */
export interface ServiceProcess {
  /** The `url` of its `listening` line. */
  url: string;
  /** The whole `listening` line (services add fields such as `instance`). */
  listening: Record<string, unknown>;
  child: ChildProcess;
  /** Resolves with the exit code, or the signal that ended it. */
  exited: Promise<number | string>;
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
  /** Arguments after the main (a CLI command). @defaultValue none */
  args?: readonly string[];
  /** Its working folder. @defaultValue this process's */
  cwd?: string;
  /**
   * Start from this process's whole environment instead of the minimal one
   * (PATH, HOME); LOG_LEVEL=warn and `env` still go on top. @defaultValue false
   */
  inheritEnv?: boolean;
}

/**
 * Spawns `node <main> [args]` (tracked: the leak check kills it if a test
 * forgets) with a minimal environment (PATH, HOME, LOG_LEVEL=warn) under
 * `env`, and waits for the JSON line `{"event":"listening","url":…}` that
 * every service (storage element, ingest, orchestrator) prints on stdout
 * when ready.
 *
 * @throws Error naming the service and carrying its stderr when it exits
 *   first or does not listen within `startTimeoutMs`.
 */
export async function spawnService(
  main: string,
  env: Record<string, string>,
  {
    label = main,
    startTimeoutMs = 20_000,
    nodeArgs = [],
    args = [],
    cwd,
    inheritEnv = false,
  }: SpawnServiceOptions = {},
): Promise<ServiceProcess> {
  const base = inheritEnv
    ? (Object.fromEntries(Object.entries(process.env).filter(([, v]) => v !== undefined)) as Record<string, string>)
    : { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root' };
  const fullEnv = { ...base, LOG_LEVEL: 'warn', ...env };
  const child = spawnTracked(process.execPath, [...nodeArgs, main, ...args], {
    env: fullEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(cwd === undefined ? {} : { cwd }),
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
  );
  const listening = await new Promise<Record<string, unknown> & { url: string }>((resolveLine, reject) => {
    let out = '';
    let found = false;
    const timer = setTimeout(
      () => reject(new Error(`${label} did not start within ${startTimeoutMs} ms: ${stderr}`)),
      startTimeoutMs,
    );
    // Keeps draining stdout after the line (a full pipe would block the child) without keeping it.
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      if (found) return;
      out += chunk;
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (line) {
        found = true;
        clearTimeout(timer);
        resolveLine(JSON.parse(line) as Record<string, unknown> & { url: string });
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
    url: listening.url,
    listening,
    child,
    exited,
    env: fullEnv,
    stop: () => stopTracked(child),
    kill9: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
    stderr: () => stderr,
  };
}
