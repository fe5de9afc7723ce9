import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { CpuSampler, cpuSecondsOf } from '../../bench/segments/stage-cpu.ts';
import { waitFor } from '../support/wait-for.ts';

/** A sampler with hand-made samples (no timer left running). */
function samplerWith(samples: Record<string, { atMs: number; cpuS: number }[]>): CpuSampler {
  const sampler = new CpuSampler(new Map());
  sampler.stop();
  for (const [name, list] of Object.entries(samples)) sampler.samples.set(name, list);
  return sampler;
}

describe('CpuSampler (bench/segments/edge-match.ts: CPU per stage)', () => {
  it('gives each interval’s CPU to the stages its worker ran, by overlap; none running: idle', () => {
    const sampler = samplerWith({
      'worker-1': [
        { atMs: 0, cpuS: 0 },
        { atMs: 1000, cpuS: 2 }, // detect alone
        { atMs: 2000, cpuS: 3 }, // detect 500 ms, vcam 1000 ms
        { atMs: 3000, cpuS: 3.5 }, // nothing running
      ],
      'worker-2': [
        { atMs: 0, cpuS: 10 },
        { atMs: 1000, cpuS: 11 }, // encode
      ],
    });
    const cpu = sampler.attribute([
      { stage: 'detect', workerId: 'worker-1', startedMs: 0, finishedMs: 1500 },
      { stage: 'vcam', workerId: 'worker-1', startedMs: 1000, finishedMs: 2000 },
      { stage: 'encode', workerId: 'worker-2', startedMs: 0, finishedMs: 1000 },
      { stage: 'track', workerId: 'worker-2', startedMs: 5000, finishedMs: 6000 },
    ]);
    expect(cpu.detect).toBeCloseTo(2 + 1 / 3, 6);
    expect(cpu.vcam).toBeCloseTo(2 / 3, 6);
    expect(cpu.encode).toBeCloseTo(1, 6);
    expect(cpu.idle).toBeCloseTo(0.5, 6);
    expect(cpu.track).toBeUndefined();
  });

  it('samples a real busy process: its CPU seconds grow; a finished one reads null', async () => {
    const child = spawn(process.execPath, ['-e', 'const end = Date.now() + 60000; while (Date.now() < end) {}']);
    const pid = child.pid as number;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      const sampler = new CpuSampler(new Map([['busy', pid]]), 20);
      await waitFor(() => (sampler.samples.get('busy')?.at(-1)?.cpuS ?? 0) >= 0.1, { intervalMs: 20 });
      sampler.stop();
      const list = sampler.samples.get('busy') ?? [];
      expect(list.length).toBeGreaterThan(1);
      const cpu = sampler.attribute([
        { stage: 'detect', workerId: 'busy', startedMs: 0, finishedMs: Number.MAX_SAFE_INTEGER },
      ]);
      expect(cpu.detect).toBeCloseTo((list.at(-1)?.cpuS ?? 0) - (list[0]?.cpuS ?? 0), 6);
      expect(cpu.detect).toBeGreaterThan(0);
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
    expect(cpuSecondsOf(pid)).toBeNull();
  });
});
