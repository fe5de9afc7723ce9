/**
 * untilStopSignal: a service process that does not manage to exit after
 * SIGTERM (a close step stuck on a peer, or a handle left open) exits on
 * its own at the shutdown deadline, saying what held it; one that closes in
 * time exits 0 without a word.
 */
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { spawnTracked, stopTracked } from '../../test/support/processes.ts';
import { ConfigError, SHUTDOWN_DEADLINE_MS, shutdownDeadlineMs } from '../src/index.ts';

/** Long enough that a clean close on a loaded host never meets it. */
const DEADLINE_MS = 1_500;
const SERVICE = fileURLToPath(new URL('./process-fixtures/stopping-service.ts', import.meta.url));

/** Starts the fixture, waits for `ready`, sends SIGTERM, and returns its exit status and stderr. */
async function stopService(mode: string): Promise<{ code: number | null; stderr: string }> {
  const child = spawnTracked(process.execPath, [SERVICE, mode, String(DEADLINE_MS)]);
  try {
    let stderr = '';
    child.stderr?.on('data', (chunk) => {
      stderr += chunk;
    });
    let stdout = '';
    await new Promise<void>((resolve, reject) => {
      child.stdout?.on('data', (chunk) => {
        stdout += chunk;
        if (stdout.includes('ready\n')) resolve();
      });
      child.once('exit', () => reject(new Error(`exited before ready: ${stderr}`)));
    });
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const [code] = (await exited) as [number | null];
    return { code, stderr };
  } finally {
    await stopTracked(child);
  }
}

describe('untilStopSignal', () => {
  it('a clean close exits 0 with nothing on stderr', async () => {
    expect(await stopService('clean')).toEqual({ code: 0, stderr: '' });
  });

  it('a close step that never ends: exit 1 at the deadline, naming the step', async () => {
    const { code, stderr } = await stopService('hang');
    expect(code).toBe(1);
    const line = JSON.parse(stderr.trim());
    expect(line).toMatchObject({
      level: 'error',
      signal: 'SIGTERM',
      deadlineMs: DEADLINE_MS,
      pendingStep: 'leave the consumer group',
    });
    expect(line.msg).toContain("without finishing 'leave the consumer group'");
  });

  it('closed, but a handle keeps the process alive: exit 1 at the deadline, listing what is open', async () => {
    const { code, stderr } = await stopService('handle');
    expect(code).toBe(1);
    const line = JSON.parse(stderr.trim());
    expect(line.pendingStep).toBeNull();
    expect(line.activeResources).toContain('Timeout');
    expect(line.msg).toMatch(new RegExp(`^closed, but still running ${DEADLINE_MS} ms after SIGTERM`));
  });
});

describe('shutdownDeadlineMs', () => {
  it('reads SHUTDOWN_DEADLINE_MS, defaulting to 15 s; anything but whole milliseconds in range names the variable', () => {
    expect(shutdownDeadlineMs({})).toBe(SHUTDOWN_DEADLINE_MS);
    expect(SHUTDOWN_DEADLINE_MS).toBe(15_000);
    expect(shutdownDeadlineMs({ SHUTDOWN_DEADLINE_MS: ' 110000 ' })).toBe(110_000);
    for (const bad of ['abc', '5s', '1.5', '999', '3600001', '-1']) {
      expect(() => shutdownDeadlineMs({ SHUTDOWN_DEADLINE_MS: bad }), bad).toThrow(ConfigError);
      expect(() => shutdownDeadlineMs({ SHUTDOWN_DEADLINE_MS: bad }), bad).toThrow(/^SHUTDOWN_DEADLINE_MS: /);
    }
  });
});
