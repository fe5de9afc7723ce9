import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { spawnTracked, stopTracked } from '../../../../test/support/index.ts';

const repoRoot = fileURLToPath(new URL('../../../../', import.meta.url));

/** A `pnpm polyvision orchestrator` child process (started with node directly). */
export interface OrchestratorProcess {
  child: ChildProcess;
  url: string;
  instance: string;
  /** Resolves with the exit code or signal. */
  exited: Promise<number | string>;
  stderrTail(): string;
}

/**
 * Starts an orchestrator process with `env` added to this process's
 * environment and waits for its `listening` line.
 */
export async function startOrchestratorProcess(
  env: Record<string, string>,
  timeoutMs = 60_000,
): Promise<OrchestratorProcess> {
  const child = spawnTracked(process.execPath, ['deploy/src/cli/main.ts', 'orchestrator'], {
    cwd: repoRoot,
    env: { ...process.env, LOG_LEVEL: 'warn', ORCHESTRATOR_HTTP_PORT: '0', ...env },
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-8_000);
  });
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
  );
  const ready = new Promise<{ url: string; instance: string }>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      try {
        const event = JSON.parse(line) as { event?: string; url?: string; instance?: string };
        if (event.event === 'listening') resolve({ url: event.url!, instance: event.instance! });
      } catch {
        // not ours
      }
    });
    void exited.then((code) => reject(new Error(`orchestrator exited (${code}) before listening: ${stderr}`)));
    setTimeout(
      () => reject(new Error(`orchestrator not listening within ${timeoutMs} ms: ${stderr}`)),
      timeoutMs,
    ).unref();
  });
  const { url, instance } = await ready;
  return { child, url, instance, exited, stderrTail: () => stderr };
}

/** SIGKILL, waits for the exit. */
export async function killProcess(processHandle: OrchestratorProcess): Promise<void> {
  processHandle.child.kill('SIGKILL');
  await processHandle.exited;
}

/** SIGTERM (graceful), waits for the exit, returns its code. */
export async function terminateProcess(processHandle: OrchestratorProcess): Promise<number | string> {
  processHandle.child.kill('SIGTERM');
  return processHandle.exited;
}

export { stopTracked };
