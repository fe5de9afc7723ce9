import { spawn } from 'node:child_process';
import { PolyvisionError } from '@polyvision/shared';

/** What a finished command printed. */
export interface ExecResult {
  stdout: string;
  stderr: string;
}

export interface ExecOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Kill the command (SIGKILL) after this many milliseconds. @defaultValue 600_000 */
  timeoutMs?: number;
  /** Each output line is passed here as it arrives (for long installs). */
  onLine?: (line: string) => void;
}

/**
 * Runs a command to completion (no shell) and returns its output.
 *
 * @throws PolyvisionError `services_command_failed` when it cannot start, exits
 *   non-zero or runs past `timeoutMs`; the message names the command and ends
 *   with the last lines it printed.
 */
export function exec(command: string, args: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
  const { timeoutMs = 600_000 } = options;
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let partial = '';
    const feed = (chunk: string) => {
      if (!options.onLine) return;
      partial += chunk;
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (line.trim()) options.onLine(line);
    };
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      feed(chunk);
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      feed(chunk);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const display = [command, ...args].join(' ');
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(
        new PolyvisionError('services_command_failed', `cannot run ${display}: ${error.message}`, { cause: error }),
      );
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) return resolve({ stdout, stderr });
      const tail = `${stdout}\n${stderr}`.trim().split('\n').slice(-15).join('\n');
      const how = signal ? `was killed by ${signal}` : `exited with status ${code}`;
      reject(new PolyvisionError('services_command_failed', `${display} ${how}:\n${tail}`));
    });
  });
}

/** Whether a command exists on PATH (or at an absolute path) and can be started. */
export async function commandExists(command: string): Promise<boolean> {
  try {
    await exec('sh', ['-c', `command -v "$1" >/dev/null 2>&1`, 'sh', command], { timeoutMs: 10_000 });
    return true;
  } catch {
    return false;
  }
}
