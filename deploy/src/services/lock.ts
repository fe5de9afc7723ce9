import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PolyvisionError } from '@polyvision/shared';
import { isAlive } from './daemon.ts';
import { pollUntil } from './poll.ts';

/**
 * Runs `fn` while holding an exclusive lock on the working folder, so that two
 * `services up` / `down` (two test runs, a developer and a test run) never
 * start or stop the same service at once. The lock is a directory made with
 * mkdir (atomic) holding the owner's pid; a lock whose owner has died is taken over.
 *
 * @param timeoutMs - how long to wait for another owner, in milliseconds.
 * @throws PolyvisionError `services_locked` after `timeoutMs`.
 */
export async function withWorkDirLock<T>(
  workDir: string,
  timeoutMs: number,
  onProgress: (line: string) => void,
  fn: () => Promise<T>,
): Promise<T> {
  await mkdir(workDir, { recursive: true });
  const lockDir = path.join(workDir, '.lock');
  const ownerFile = path.join(lockDir, 'pid');
  let told = false;
  const acquired = await pollUntil(
    async () => {
      try {
        await mkdir(lockDir);
        await writeFile(ownerFile, `${process.pid}\n`);
        return true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const owner = Number((await readFile(ownerFile, 'utf8').catch(() => '')).trim());
      if (owner > 0 && !(await isAlive(owner))) {
        await rm(lockDir, { recursive: true, force: true });
        return false;
      }
      if (!told) {
        onProgress(`waiting for another services command (pid ${owner || '?'}) to finish`);
        told = true;
      }
      return false;
    },
    { timeoutMs, intervalMs: 200 },
  );
  if (!acquired) {
    throw new PolyvisionError(
      'services_locked',
      `another services command holds ${lockDir} for more than ${Math.round(timeoutMs / 1000)} s; remove it if no such command runs`,
    );
  }
  try {
    return await fn();
  } finally {
    await rm(lockDir, { recursive: true, force: true });
  }
}
