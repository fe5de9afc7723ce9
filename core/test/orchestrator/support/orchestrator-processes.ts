import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { spawnService, stopTracked } from '../../../../test/support/index.ts';

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
  const service = await spawnService(
    'deploy/src/cli/main.ts',
    { ORCHESTRATOR_HTTP_PORT: '0', ...env },
    { label: 'orchestrator', args: ['orchestrator'], cwd: repoRoot, inheritEnv: true, startTimeoutMs: timeoutMs },
  );
  return {
    child: service.child,
    url: service.url,
    instance: String(service.listening.instance),
    exited: service.exited,
    stderrTail: () => service.stderr().slice(-8_000),
  };
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
