import { readlink } from 'node:fs/promises';
import path from 'node:path';
import { findProcesses } from '../services/daemon.ts';

/**
 * Pids of processes whose working directory is `folder` or inside it (read
 * from `/proc/<pid>/cwd`), excluding this process. Every cluster process runs
 * in its own folder under the cluster's working folder, and so do the
 * children it starts (ffmpeg), so this finds what is left of a cluster even
 * when `cluster.json` is gone, and never a process of anyone else.
 */
export function findProcessesInFolder(folder: string): Promise<number[]> {
  const root = path.resolve(folder);
  return findProcesses(async (pid) => {
    const cwd = await readlink(`/proc/${pid}/cwd`);
    return cwd === root || cwd.startsWith(`${root}/`);
  });
}
