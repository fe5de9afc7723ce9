/**
 * A small tmpfs for "full disk" tests (needs root and mount(8); the test
 * hosts run as root). `available` is false where mounting is refused, so a
 * test can skip with a reason instead of passing vacuously.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface SmallDisk {
  dir: string;
  remove(): Promise<void>;
}

/** Mounts a tmpfs of `sizeMiB` in a fresh temporary folder; null when mounting is not allowed here. */
export async function mountSmallDisk(sizeMiB: number): Promise<SmallDisk | null> {
  const dir = await mkdtemp(join(tmpdir(), 'edge-disk-'));
  try {
    await run('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m`, 'tmpfs', dir]);
  } catch {
    await rm(dir, { recursive: true, force: true });
    return null;
  }
  return {
    dir,
    remove: async () => {
      await run('umount', ['-l', dir]).catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
}
