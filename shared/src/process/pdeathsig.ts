import { spawnSync } from 'node:child_process';

let cached: string | null | undefined;

/**
 * Path of util-linux `setpriv` when it supports `--pdeathsig` (Linux only),
 * else null. Cached after the first call.
 *
 * `setpriv --pdeathsig KILL -- cmd args…` sets PR_SET_PDEATHSIG and then
 * execs `cmd`, so the kernel sends SIGKILL to the child when its parent
 * thread dies — even when the parent is SIGKILLed and no Node code runs.
 * The signal fires when the *thread* that spawned the child ends: from the
 * main thread that is the process's life; a child spawned inside a
 * worker_thread dies when that worker ends.
 */
export function setprivPath(): string | null {
  if (cached !== undefined) return cached;
  cached = null;
  if (process.platform !== 'linux') return cached;
  for (const candidate of ['/usr/bin/setpriv', '/bin/setpriv']) {
    const probe = spawnSync(candidate, ['--help'], { encoding: 'utf8', timeout: 2_000 });
    if (probe.status === 0 && probe.stdout.includes('--pdeathsig')) {
      cached = candidate;
      break;
    }
  }
  return cached;
}
