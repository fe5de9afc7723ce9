import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnTracked, stopTracked } from '../../test/support/processes.ts';
import { waitFor } from '../../test/support/wait-for.ts';
import { PolyvisionError, readFrames, setprivPath, spawnChild, trackedChildCount } from '../src/index.ts';

const OWNER = fileURLToPath(new URL('./process-fixtures/owner.ts', import.meta.url));

/** Whether a pid runs (a zombie counts as dead: in containers nobody may reap it). */
function isAlive(pid: number): boolean {
  const stat = `/proc/${pid}/stat`;
  if (!existsSync(stat)) return false;
  try {
    const state = readFileSync(stat, 'utf8').split(') ')[1]?.[0];
    return state !== 'Z';
  } catch {
    return false;
  }
}

async function failure(promise: Promise<unknown>): Promise<PolyvisionError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PolyvisionError);
  return error as PolyvisionError;
}

afterEach(() => {
  expect(trackedChildCount()).toBe(0);
});

describe('spawnChild', () => {
  it('resolves with code 0 and streams stdout', async () => {
    const run = spawnChild('sh', ['-c', 'printf hello']);
    const chunks: Buffer[] = [];
    run.stdout?.on('data', (c: Buffer) => chunks.push(c));
    await expect(run.done).resolves.toEqual({ code: 0, signal: null });
    expect(Buffer.concat(chunks).toString()).toBe('hello');
  });

  it('rejects a failing child with the exit code and the last stderr lines', async () => {
    const lines: string[] = [];
    const run = spawnChild(
      'sh',
      ['-c', 'for i in 1 2 3 4 5; do echo "line $i" >&2; done; printf "progress\\rdone" >&2; exit 3'],
      {
        stderrTailLines: 3,
        onStderrLine: (line) => lines.push(line),
      },
    );
    const error = await failure(run.done);
    expect(error.code).toBe('child_failed');
    expect(error.details).toMatchObject({
      exit_code: 3,
      exit_signal: null,
      stderr_tail: ['line 5', 'progress', 'done'],
    });
    expect(error.message).toMatch(/exited with code 3:\nline 5\nprogress\ndone/);
    expect(lines).toEqual(['line 1', 'line 2', 'line 3', 'line 4', 'line 5', 'progress', 'done']);
  });

  it('rejects a missing command with spawn_failed, with and without setpriv', async () => {
    for (const dieWithParent of [true, false]) {
      const error = await failure(spawnChild('polyvision-no-such-binary', [], { dieWithParent }).done);
      expect(error.code, String(dieWithParent)).toBe('spawn_failed');
    }
  });

  it('kills the child when the owner aborts, and rejects with aborted once it is gone', async () => {
    const controller = new AbortController();
    const run = spawnChild('sleep', ['30'], { signal: controller.signal });
    expect(isAlive(run.pid)).toBe(true);
    controller.abort(new Error('stop'));
    const error = await failure(run.done);
    expect(error.code).toBe('aborted');
    expect(error.details.exit_signal).toBe('SIGTERM');
    expect(isAlive(run.pid)).toBe(false);
  });

  it('escalates to SIGKILL when the child ignores SIGTERM', async () => {
    const run = spawnChild(
      process.execPath,
      ['-e', "process.on('SIGTERM', () => {}); console.log('ready'); setInterval(() => {}, 1000)"],
      {
        killTimeoutMs: 200,
      },
    );
    await once(run.stdout as Readable, 'data');
    const startedAt = performance.now();
    await run.kill();
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(150);
    expect(run.child.signalCode).toBe('SIGKILL');
    await expect(run.done).rejects.toMatchObject({ code: 'child_failed', details: { exit_signal: 'SIGKILL' } });
  });

  it('streams 32 MiB through stdin and stdout with backpressure, byte for byte', async () => {
    const run = spawnChild('cat', [], { stdin: 'pipe' });
    const input = createHash('sha256');
    const output = createHash('sha256');
    let outBytes = 0;
    const reading = (async () => {
      for await (const chunk of run.stdout as AsyncIterable<Buffer>) {
        output.update(chunk);
        outBytes += chunk.length;
        await new Promise((r) => setTimeout(r, 1)); // a slow consumer: the writer must wait for it
      }
    })();
    const chunkBytes = 256 * 1024;
    let maxQueuedBytes = 0;
    for (let i = 0; i < 128; i++) {
      const chunk = randomBytes(chunkBytes);
      input.update(chunk);
      await run.write(chunk);
      maxQueuedBytes = Math.max(maxQueuedBytes, run.stdin?.writableLength ?? 0);
    }
    await run.end();
    await reading;
    await run.done;
    expect(outBytes).toBe(32 * 1024 * 1024);
    expect(output.digest('hex')).toBe(input.digest('hex'));
    // Without awaiting 'drain', the writer would queue most of the 32 MiB in memory.
    expect(maxQueuedBytes).toBeLessThanOrEqual(chunkBytes);
  });

  it('rejects writes with child_stdin_closed when the child stops reading', async () => {
    const run = spawnChild('head', ['-c', '10'], { stdin: 'pipe', stdout: 'ignore' });
    const error = await failure(
      (async () => {
        for (let i = 0; i < 1_000; i++) await run.write(Buffer.alloc(64 * 1024));
      })(),
    );
    expect(error.code).toBe('child_stdin_closed');
    await expect(run.done).resolves.toEqual({ code: 0, signal: null });
  });

  it('pipes a Readable into stdin', async () => {
    const run = spawnChild('wc', ['-c'], { stdin: Readable.from([Buffer.alloc(1000), Buffer.alloc(234)]) });
    const chunks: Buffer[] = [];
    run.stdout?.on('data', (c: Buffer) => chunks.push(c));
    await run.done;
    expect(Buffer.concat(chunks).toString().trim()).toBe('1234');
  });
});

describe('children die with their owner', () => {
  async function startOwner(mode: 'exit' | 'wait', death: 'pdeathsig' | 'no-pdeathsig') {
    const owner = spawnTracked(process.execPath, [OWNER, mode, death]);
    const [line] = (await once(owner.stdout as Readable, 'data')) as [Buffer];
    const childPid = Number(line.toString().trim());
    expect(isAlive(childPid)).toBe(true);
    return { owner, childPid };
  }

  it('kills children when the owner exits normally (exit handler)', async () => {
    const { owner, childPid } = await startOwner('exit', 'no-pdeathsig');
    await once(owner, 'exit');
    await waitFor(() => !isAlive(childPid), { timeoutMs: 3_000, message: 'child gone after owner exit' });
  });

  it('kills children on SIGTERM and the owner still dies of SIGTERM', async () => {
    const { owner, childPid } = await startOwner('wait', 'no-pdeathsig');
    owner.kill('SIGTERM');
    const [code, signal] = await once(owner, 'exit');
    expect({ code, signal }).toEqual({ code: null, signal: 'SIGTERM' });
    await waitFor(() => !isAlive(childPid), { timeoutMs: 3_000, message: 'child gone after owner SIGTERM' });
  });

  it.runIf(setprivPath() !== null)(
    'kills children even when the owner is SIGKILLed (setpriv --pdeathsig)',
    async () => {
      const { owner, childPid } = await startOwner('wait', 'pdeathsig');
      owner.kill('SIGKILL');
      await once(owner, 'exit');
      await waitFor(() => !isAlive(childPid), { timeoutMs: 3_000, message: 'child gone after owner SIGKILL' });
    },
  );

  it('shows why: without pdeathsig a SIGKILLed owner leaves its child behind', async () => {
    const { owner, childPid } = await startOwner('wait', 'no-pdeathsig');
    try {
      owner.kill('SIGKILL');
      await once(owner, 'exit');
      await new Promise((r) => setTimeout(r, 200));
      expect(isAlive(childPid)).toBe(true);
    } finally {
      if (isAlive(childPid)) process.kill(childPid, 'SIGKILL');
      await stopTracked(owner);
    }
  });
});

describe('readFrames', () => {
  it('yields exact frames across arbitrary chunk boundaries', async () => {
    const data = Buffer.from(Array.from({ length: 30 }, (_, i) => i));
    const chunks = [data.subarray(0, 7), data.subarray(7, 8), data.subarray(8, 25), data.subarray(25)];
    const frames: number[][] = [];
    for await (const frame of readFrames(Readable.from(chunks), 10)) frames.push([...frame]);
    expect(frames).toHaveLength(3);
    expect(frames[1]).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
  });

  it('reports a truncated last frame', async () => {
    const consume = async () => {
      for await (const _ of readFrames(Readable.from([Buffer.alloc(25)]), 10)) {
      }
    };
    await expect(consume()).rejects.toMatchObject({ code: 'truncated_frame', details: { trailing_bytes: 5 } });
    await expect(consume.call(null)).rejects.toBeInstanceOf(PolyvisionError);
  });
});
