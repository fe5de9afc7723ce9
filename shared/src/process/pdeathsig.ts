import { spawnSync } from 'node:child_process';

let cached: string | null | undefined;

/**
 * Path of util-linux `setpriv` when it supports `--pdeathsig` (Linux only),
 * else null. Cached after the first call.
 *
 * `setpriv --pdeathsig KILL -- cmd args…` sets PR_SET_PDEATHSIG and then
 * execs `cmd`, so the kernel sends SIGKILL to the child when its parent
 * thread dies — even when the parent is SIGKILLed and no Node code runs.
 * Node spawns from the main thread, which lives as long as the process.
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
