import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import type { Readable, Writable } from 'node:stream';
import { PolyvisionError } from '../errors/index.ts';
import { trackChild } from './child-registry.ts';
import { setprivPath } from './pdeathsig.ts';
import { LineTail } from './stderr-tail.ts';

/** Options of {@link spawnChild}. */
export interface SpawnChildOptions {
  /** Kills the child when aborted: SIGTERM, then SIGKILL after `killTimeoutMs`; `done` rejects with `aborted`. */
  signal?: AbortSignal;
  /**
   * `'pipe'` to write into the child (see `write`/`end`), `'ignore'` for
   * /dev/null (ffmpeg then cannot steal the terminal), or a Readable piped in.
   * @defaultValue 'ignore'
   */
  stdin?: 'pipe' | 'ignore' | Readable;
  /** `'pipe'` to read `stdout`, `'ignore'` to drop it. @defaultValue 'pipe' */
  stdout?: 'pipe' | 'ignore';
  /** Called with each stderr line (ffmpeg progress, logs). */
  onStderrLine?: (line: string) => void;
  /** Grace between SIGTERM and SIGKILL, in ms. @defaultValue 5_000 */
  killTimeoutMs?: number;
  /** stderr lines kept for the error message. @defaultValue 20 */
  stderrTailLines?: number;
  cwd?: string;
  /** Environment. @defaultValue process.env */
  env?: NodeJS.ProcessEnv;
  /**
   * Start through `setpriv --pdeathsig KILL` when available, so the kernel
   * kills the child even if this process is SIGKILLed. @defaultValue true
   */
  dieWithParent?: boolean;
}

/** How a child ended. */
export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A running child process; see {@link spawnChild}. */
export interface RunningChild {
  child: ChildProcess;
  pid: number;
  /** The child's stdout (null when `stdout: 'ignore'`). */
  stdout: Readable | null;
  /** The child's stdin (null unless `stdin: 'pipe'`). Prefer `write`/`end`. */
  stdin: Writable | null;
  /** Resolves `{code: 0, signal: null}` on success; rejects otherwise (see spawnChild). */
  done: Promise<ChildExit>;
  /**
   * Writes to stdin honouring backpressure: resolves once the chunk is
   * accepted or, when the pipe is full, after 'drain'.
   * @throws PolyvisionError `child_stdin_closed` when the child no longer reads.
   */
  write(chunk: Uint8Array | string): Promise<void>;
  /** Closes stdin (EOF) and waits until it is flushed. */
  end(): Promise<void>;
  /** SIGTERM, then SIGKILL after `killTimeoutMs`; resolves when the child is gone. */
  kill(): Promise<void>;
  /** The last stderr lines so far. */
  stderrTail(): string[];
}

/**
 * Spawns a child process that dies with its owner:
 * - aborted `signal` or `kill()` → SIGTERM, SIGKILL after `killTimeoutMs`;
 * - owner exits or gets SIGINT/SIGTERM/SIGHUP → killed (child-registry.ts);
 * - owner SIGKILLed → kernel kills it (`setpriv --pdeathsig`, Linux, where installed;
 *   Node itself cannot call prctl(PR_SET_PDEATHSIG)).
 *
 * Meant for ffmpeg pipelines: stream raw frames into stdin with `await write()`
 * (backpressure), read raw frames from `stdout` (see readFrames).
 *
 * `done` rejects with PolyvisionError:
 * - `spawn_failed` — the command could not start (ENOENT, EACCES);
 * - `child_failed` — non-zero exit or killed by a signal; `details` has
 *   `command`, `exit_code`, `exit_signal`, `stderr_tail` (last lines), also in the message;
 * - `aborted` — the owner's signal fired (the child is gone when it rejects).
 * Attach a handler to `done` (it is a real promise; unhandled rejections crash Node).
 */
export function spawnChild(command: string, args: readonly string[], options: SpawnChildOptions = {}): RunningChild {
  const killTimeoutMs = options.killTimeoutMs ?? 5_000;
  const tail = new LineTail(options.stderrTailLines ?? 20, options.onStderrLine);
  const stdinMode = options.stdin === undefined || options.stdin === 'ignore' ? 'ignore' : 'pipe';
  const setpriv = options.dieWithParent === false ? null : setprivPath();
  const [file, argv] = setpriv ? [setpriv, ['--pdeathsig', 'KILL', '--', command, ...args]] : [command, [...args]];
  const label = [command, ...args].join(' ').slice(0, 300);

  const child = spawn(file, argv, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdio: [stdinMode, options.stdout ?? 'pipe', 'pipe'],
  });
  trackChild(child);
  if (child.stderr) tail.attach(child.stderr);
  // EPIPE when the child exits before reading everything: reported through write()/done, never uncaught.
  child.stdin?.on('error', () => {});
  if (options.stdin && typeof options.stdin !== 'string' && child.stdin) options.stdin.pipe(child.stdin);

  let abortedBy: AbortSignal | undefined;
  let killTimer: NodeJS.Timeout | undefined;
  const terminate = () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    killTimer ??= setTimeout(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }, killTimeoutMs);
  };
  const onAbort = () => {
    abortedBy = options.signal;
    terminate();
  };

  const done = new Promise<ChildExit>((resolve, reject) => {
    let spawnError: Error | undefined;
    child.once('error', (error) => {
      spawnError = error;
    });
    child.once('close', (code, signal) => {
      clearTimeout(killTimer);
      options.signal?.removeEventListener('abort', onAbort);
      tail.flush();
      const stderrTail = tail.lines();
      if (spawnError && child.pid === undefined) {
        reject(
          new PolyvisionError('spawn_failed', `cannot start ${command}: ${spawnError.message}`, {
            cause: spawnError,
            details: { command },
          }),
        );
        return;
      }
      if (setpriv && (code === 126 || code === 127) && stderrTail.some((l) => l.startsWith('setpriv: '))) {
        reject(
          new PolyvisionError('spawn_failed', `cannot start ${command}: ${stderrTail.join(' ')}`, {
            details: { command, exit_code: code },
          }),
        );
        return;
      }
      if (abortedBy) {
        reject(
          new PolyvisionError('aborted', `${command} was stopped: the owner aborted`, {
            cause: abortedBy.reason,
            httpStatus: 499,
            details: { command, exit_code: code, exit_signal: signal, stderr_tail: stderrTail },
          }),
        );
        return;
      }
      if (code === 0) {
        resolve({ code, signal: null });
        return;
      }
      const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      reject(
        new PolyvisionError(
          'child_failed',
          `${label} ${how}${stderrTail.length ? `:\n${stderrTail.join('\n')}` : ''}`,
          {
            details: { command, exit_code: code, exit_signal: signal, stderr_tail: stderrTail },
          },
        ),
      );
    });
  });

  if (options.signal?.aborted) onAbort();
  else options.signal?.addEventListener('abort', onAbort, { once: true });

  const stdinClosed = (cause?: unknown) =>
    new PolyvisionError('child_stdin_closed', `${command} no longer reads its input`, { cause, details: { command } });

  return {
    child,
    pid: child.pid ?? -1,
    stdout: child.stdout,
    stdin: child.stdin,
    done,
    async write(chunk) {
      const stdin = child.stdin;
      if (!stdin || stdin.destroyed || stdin.writableEnded) throw stdinClosed();
      if (stdin.write(chunk)) return;
      const ac = new AbortController();
      try {
        await Promise.race([
          once(stdin, 'drain', { signal: ac.signal }),
          once(stdin, 'close', { signal: ac.signal }).then(() => {
            throw stdinClosed();
          }),
        ]);
      } catch (error) {
        // 'drain' rejects on the stream's 'error' (EPIPE: the child closed its input).
        throw error instanceof PolyvisionError ? error : stdinClosed(error);
      } finally {
        ac.abort();
      }
    },
    async end() {
      const stdin = child.stdin;
      if (!stdin || stdin.destroyed || stdin.writableFinished) return;
      await new Promise<void>((resolve) => {
        stdin.once('close', resolve);
        stdin.end(resolve);
      });
    },
    async kill() {
      terminate();
      await done.then(
        () => {},
        () => {},
      );
    },
    stderrTail: () => tail.lines(),
  };
}
