import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';

/** Children started through {@link spawnTracked} that have not exited yet. */
const live = new Set<ChildProcess>();

/**
 * `child_process.spawn`, plus bookkeeping: the child runs in its own process
 * group (so its own children can be killed with it) and is registered until
 * it exits. The leak check (test/support/leak-check.ts, a vitest setup file)
 * kills whatever is still alive at the end of the test file and FAILS the
 * file, so stop your children in `afterAll`/`afterEach` (see {@link stopTracked}).
 */
export function spawnTracked(command: string, args: readonly string[] = [], options: SpawnOptions = {}): ChildProcess {
  const child = spawn(command, args, { stdio: 'pipe', ...options, detached: true });
  live.add(child);
  const forget = () => live.delete(child);
  child.once('exit', forget);
  child.once('error', forget);
  return child;
}

/** Whether a child has neither exited nor been killed by a signal. */
function running(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null && child.pid !== undefined;
}

/** Signals a tracked child's whole process group (falls back to the child alone). */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    child.kill(signal);
  }
}

/**
 * Stops a child: SIGTERM to its process group, SIGKILL after `graceMs`.
 * Resolves once it has exited.
 *
 * @param graceMs - time allowed for a clean exit, in milliseconds. @defaultValue 5000
 */
export async function stopTracked(child: ChildProcess, graceMs = 5_000): Promise<void> {
  if (!running(child)) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  signalGroup(child, 'SIGTERM');
  const timer = setTimeout(() => signalGroup(child, 'SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** A tracked child that was still running: what the leak check reports. */
export interface LeakedChild {
  pid: number | undefined;
  command: string;
}

/**
 * Kills (SIGKILL, whole group) every tracked child still running and waits
 * for them to exit (at most `timeoutMs`).
 *
 * @returns the children that were still running: the leaks.
 */
export async function killTrackedChildren(timeoutMs = 5_000): Promise<LeakedChild[]> {
  const leaked = [...live].filter(running);
  const exits = leaked.map((child) => new Promise<void>((resolve) => child.once('exit', () => resolve())));
  for (const child of leaked) signalGroup(child, 'SIGKILL');
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([Promise.all(exits), new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
  clearTimeout(timer);
  live.clear();
  return leaked.map((child) => ({ pid: child.pid, command: child.spawnargs.join(' ') }));
}
