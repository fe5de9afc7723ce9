import { readFileSync } from 'node:fs';

/**
 * CPU seconds used so far by this process (every thread: onnxruntime's pool included) and by its
 * finished, reaped children (ffmpeg): `/proc/self/stat` utime + stime + cutime + cstime.
 */
export function cpuSeconds(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): utime is field 14 → index 11.
  const ticks = [11, 12, 13, 14].reduce((s, i) => s + Number(fields[i]), 0);
  return ticks / 100; // USER_HZ = 100 on Linux
}
