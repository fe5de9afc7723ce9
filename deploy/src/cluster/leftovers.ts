import { readdir, readlink } from 'node:fs/promises';
import path from 'node:path';

/**
 * Pids of processes whose working directory is `folder` or inside it (read
 * from `/proc/<pid>/cwd`), excluding this process. Every cluster process runs
 * in its own folder under the cluster's working folder, and so do the
 * children it starts (ffmpeg), so this finds what is left of a cluster even
 * when `cluster.json` is gone, and never a process of anyone else.
 */
export async function findProcessesInFolder(folder: string): Promise<number[]> {
  const root = path.resolve(folder);
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
      const cwd = await readlink(`/proc/${entry}/cwd`);
      if (cwd === root || cwd.startsWith(`${root}/`)) found.push(pid);
    } catch {
      // exited meanwhile, or not ours to read
    }
  }
  return found;
}
