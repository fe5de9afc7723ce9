import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * Makes a test clip with ffmpeg's lavfi sources (H.264 in MP4).
 *
 * @param source - lavfi source, e.g. `testsrc2=size=128x64:rate=25` or `color=c=black:size=64x64:rate=25`.
 */
export async function makeClip(path: string, source: string, durationSeconds: number): Promise<string> {
  await run('ffmpeg', [
    '-v',
    'error',
    '-y',
    '-f',
    'lavfi',
    '-i',
    `${source}:duration=${durationSeconds}`,
    '-c:v',
    'libx264',
    '-preset',
    'ultrafast',
    '-pix_fmt',
    'yuv420p',
    path,
  ]);
  return path;
}

/** The pids of this process's live (not zombie) child processes, read from /proc, for leak checks. */
export async function childPids(): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // pid (comm) state ppid …; comm may contain spaces, so parse after the last ')'.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (rest[0] !== 'Z' && Number(rest[1]) === process.pid) pids.push(Number(entry));
  }
  return pids;
}
