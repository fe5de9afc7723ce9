import { readFileSync } from 'node:fs';

/**
 * utime + stime + cutime + cstime of a live process, in seconds (USER_HZ 100):
 * its threads and its reaped children (a worker's ffmpeg, counted when it
 * exits); null once the process is gone.
 */
export function cpuSecondsOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return [11, 12, 13, 14].reduce((s, i) => s + Number(fields[i]), 0) / 100;
  } catch {
    return null;
  }
}

/** One stage run on one worker, as job_stages recorded it (epoch ms). */
export interface StageRun {
  stage: string;
  workerId: string;
  startedMs: number;
  finishedMs: number;
}

/**
 * Samples the CPU seconds of named processes (the cluster's workers) every
 * `intervalMs`, so that their CPU can afterwards be split among the stages
 * they ran ({@link attribute}). Call `stop()` before reading.
 */
export class CpuSampler {
  readonly samples = new Map<string, { atMs: number; cpuS: number }[]>();
  readonly pids: ReadonlyMap<string, number>;
  readonly #timer: NodeJS.Timeout;

  /** @param pids - process name → pid (`worker-1` → 1234). @param intervalMs - sampling period. */
  constructor(pids: ReadonlyMap<string, number>, intervalMs = 250) {
    this.pids = pids;
    for (const name of pids.keys()) this.samples.set(name, []);
    this.#sample();
    this.#timer = setInterval(() => this.#sample(), intervalMs);
  }

  #sample(): void {
    const atMs = Date.now();
    for (const [name, pid] of this.pids) {
      const cpuS = cpuSecondsOf(pid);
      if (cpuS !== null) this.samples.get(name)?.push({ atMs, cpuS });
    }
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#sample();
  }

  /**
   * CPU seconds per stage: each sampling interval's CPU of a worker goes to
   * the stages that worker was running during it (in equal parts when
   * several overlap, in proportion to their overlap with the interval); CPU while it ran
   * none goes to `idle` (polling, heartbeats, model loading).
   */
  attribute(runs: readonly StageRun[]): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [worker, list] of this.samples) {
      const mine = runs.filter((r) => r.workerId === worker);
      for (let i = 1; i < list.length; i++) {
        const a = list[i - 1] as { atMs: number; cpuS: number };
        const b = list[i] as { atMs: number; cpuS: number };
        const cpuS = b.cpuS - a.cpuS;
        if (cpuS <= 0) continue;
        const overlaps = mine
          .map((r) => ({ stage: r.stage, ms: Math.min(b.atMs, r.finishedMs) - Math.max(a.atMs, r.startedMs) }))
          .filter((o) => o.ms > 0);
        const totalMs = overlaps.reduce((t, o) => t + o.ms, 0);
        if (totalMs === 0) out.idle = (out.idle ?? 0) + cpuS;
        for (const o of overlaps) out[o.stage] = (out[o.stage] ?? 0) + (cpuS * o.ms) / totalMs;
      }
    }
    return out;
  }
}
