import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { PolyvisionError } from '@polyvision/shared';
import { pollUntil } from './poll.ts';

/**
 * Reads a pid file (the first line is the pid: our own pid files and
 * PostgreSQL's `postmaster.pid` alike).
 *
 * @returns the pid, or null when the file is missing or does not start with a positive integer.
 */
export async function readPidFile(file: string): Promise<number | null> {
  try {
    const first = (await readFile(file, 'utf8')).split('\n')[0]?.trim() ?? '';
    const pid = Number(first);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/** Whether a process with this pid exists and is not a zombie. */
export async function isAlive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Field 3 (after the parenthesised command name) is the state; Z = zombie.
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true; // no procfs: trust kill(0)
  }
}

export interface DaemonSpec {
  command: string;
  args: readonly string[];
  cwd: string;
  /** stdout and stderr are appended here. */
  logFile: string;
  /** The pid is written here once the process has started. */
  pidFile: string;
  env?: NodeJS.ProcessEnv;
}

/**
 * Starts a long-lived process that outlives its caller on purpose: in its own
 * session (setsid, so it is the leader of its own process group), stdin
 * closed, output appended to `logFile`, not referenced by our event loop.
 *
 * @returns the pid (also written to `pidFile`).
 * @throws PolyvisionError `services_start_failed` when the command cannot be started.
 */
export async function spawnDaemon(spec: DaemonSpec): Promise<number> {
  const fd = openSync(spec.logFile, 'a');
  try {
    const child = spawn(spec.command, spec.args, {
      cwd: spec.cwd,
      env: spec.env ?? process.env,
      detached: true,
      stdio: ['ignore', fd, fd],
    });
    const pid = await new Promise<number>((resolve, reject) => {
      child.once('spawn', () => resolve(child.pid as number));
      child.once('error', (error) =>
        reject(
          new PolyvisionError('services_start_failed', `cannot start ${spec.command}: ${error.message}`, {
            cause: error,
          }),
        ),
      );
    });
    child.unref();
    await writeFile(spec.pidFile, `${pid}\n`);
    return pid;
  } finally {
    closeSync(fd);
  }
}

/** How a process ended when we asked it to. */
export type StopOutcome = 'not_running' | 'stopped' | 'killed';

/**
 * Stops a process and its process group: SIGTERM, then SIGKILL when it is
 * still alive after `graceMs`.
 *
 * @param graceMs - how long a clean shutdown may take, in milliseconds.
 */
export async function stopProcess(pid: number, graceMs: number): Promise<StopOutcome> {
  if (!(await isAlive(pid))) return 'not_running';
  signal(pid, 'SIGTERM');
  signal(pid, 'SIGCONT'); // a stopped (SIGSTOP, ^Z) process handles SIGTERM only once continued
  if (await pollUntil(async () => !(await isAlive(pid)), { timeoutMs: graceMs, intervalMs: 100 })) return 'stopped';
  signal(pid, 'SIGKILL');
  await pollUntil(async () => !(await isAlive(pid)), { timeoutMs: 5_000, intervalMs: 100 });
  return 'killed';
}

/** Signals the process group led by `pid` when there is one, else the process. */
function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(-pid, name);
    return;
  } catch {
    // not a group leader (or already gone): signal the process itself
  }
  try {
    process.kill(pid, name);
  } catch {
    // already gone
  }
}

/**
 * Pids of the processes in `/proc` (excluding this process) for which
 * `matches(pid)` is true. A process that exits meanwhile, or whose `/proc`
 * entries are not ours to read (`matches` throws), is skipped; no `/proc`
 * gives none.
 */
export async function findProcesses(matches: (pid: number) => Promise<boolean>): Promise<number[]> {
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return [];
  }
  const found: number[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    try {
      if (await matches(pid)) found.push(pid);
    } catch {
      // exited meanwhile, or not readable
    }
  }
  return found;
}

/**
 * Pids of processes whose command line contains `needle` (read from
 * /proc/<pid>/cmdline), excluding this process. Used by `down` to find
 * leftovers of our own services, matched by a path inside our working folder,
 * never by a program name.
 */
export function findProcessesMentioning(needle: string): Promise<number[]> {
  return findProcesses(async (pid) =>
    (await readFile(`/proc/${pid}/cmdline`, 'utf8')).replaceAll('\0', ' ').includes(needle),
  );
}

/** Removes a pid file; missing is fine. */
export async function removePidFile(file: string): Promise<void> {
  await rm(file, { force: true });
}
