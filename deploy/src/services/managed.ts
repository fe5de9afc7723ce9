import { open, stat } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { PolyvisionError } from '@polyvision/shared';
import { isAlive, readPidFile, removePidFile, stopProcess } from './daemon.ts';
import { logTail } from './log-tail.ts';
import { pollUntil } from './poll.ts';
import { isPortOpen } from './port.ts';
import type { RoundTrip } from './round-trip.ts';
import type { DownOutcome, UpOutcome } from './service.ts';

/** How to run one daemon that `up` manages through a pid file and a round trip. */
export interface ManagedSpec {
  /** Human name for messages, e.g. `Redis`. */
  label: string;
  /** Pid file of our own instance. */
  pidFile: string;
  /** Log file shown (its tail) when the start fails. */
  logFile: string;
  port: number;
  /** Variable that moves the port, named in the "port in use" error. */
  portVariable: string;
  /** One real round trip bounded by the given milliseconds. */
  ping(timeoutMs: number): Promise<RoundTrip>;
  /** Starts the process and returns its pid once it exists (not yet answering). */
  start(): Promise<number>;
  /** How long a fresh start may take to answer, in milliseconds. */
  readyTimeoutMs: number;
  /** How long a clean stop may take before SIGKILL, in milliseconds. */
  stopGraceMs: number;
  /** Optional clean stop (e.g. `pg_ctl stop`); falls back to signals. */
  stop?(pid: number): Promise<void>;
  onProgress(line: string): void;
  /**
   * How long to keep restarting a daemon that exits because its port cannot be bound although
   * nothing listens there: a closed connection that used the port as its ephemeral source port
   * holds it in TIME_WAIT (60 s on Linux), and a daemon's SO_REUSEADDR listener cannot take it
   * over from a socket that did not set it. @defaultValue 75 000 ms
   */
  bindRetryMs?: number;
}

/** What a daemon logs when its port cannot be bound (Redis, PostgreSQL, Kafka, Go's net: all say this). */
const ADDRESS_IN_USE = /address already in use/i;

/** The bytes appended to `file` from `offset` on, as text (empty when it cannot be read). */
async function logSince(file: string, offset: number): Promise<string> {
  try {
    const handle = await open(file, 'r');
    try {
      const { size } = await handle.stat();
      const buffer = Buffer.alloc(Math.max(0, size - offset));
      await handle.read(buffer, 0, buffer.length, offset);
      return buffer.toString('utf8');
    } finally {
      await handle.close();
    }
  } catch {
    return '';
  }
}

/**
 * Brings a daemon up, idempotently: our instance (live pid in the pid file)
 * that answers a round trip is kept; a live one that does not answer is
 * restarted; something else answering on the port is used as is; a port
 * taken by a program that does not speak the protocol is an error. A daemon
 * that exits because its port cannot be bound while nothing listens there
 * (TIME_WAIT) is started again every 2 s for up to `bindRetryMs`.
 *
 * @throws PolyvisionError `services_port_in_use`, `services_start_failed` (with the log's tail).
 */
export async function upManaged(spec: ManagedSpec): Promise<UpOutcome> {
  const pid = await readPidFile(spec.pidFile);
  if (pid !== null && (await isAlive(pid))) {
    let last: RoundTrip | undefined;
    const answering = await pollUntil(
      async () => {
        last = await spec.ping(2_000);
        return last.answering;
      },
      { timeoutMs: 6_000, intervalMs: 500 },
    );
    if (answering) return 'running';
    spec.onProgress(`${spec.label} (pid ${pid}) runs but does not answer (${last?.detail}); restarting it`);
    await stopManaged({ ...spec, stopGraceMs: Math.min(spec.stopGraceMs, 3_000) });
  } else if (pid !== null) {
    await removePidFile(spec.pidFile);
  }

  if ((await spec.ping(2_000)).answering) {
    spec.onProgress(`${spec.label}: something else already answers on 127.0.0.1:${spec.port}; using it`);
    return 'external';
  }
  if (await isPortOpen(spec.port)) {
    throw new PolyvisionError(
      'services_port_in_use',
      `${spec.label}: port ${spec.port} on 127.0.0.1 is taken by a program that is not ${spec.label}; stop it or set ${spec.portVariable}`,
    );
  }

  spec.onProgress(`${spec.label}: starting on 127.0.0.1:${spec.port}`);
  const started = performance.now();
  let newPid: number;
  let last: RoundTrip | undefined;
  let died: boolean;
  let ready: boolean;
  for (;;) {
    const logOffset = await stat(spec.logFile).then(
      (s) => s.size,
      () => 0,
    );
    newPid = await spec.start();
    died = false;
    ready = await pollUntil(
      async () => {
        if (!(await isAlive(newPid))) {
          died = true;
          return true;
        }
        last = await spec.ping(2_000);
        return last.answering;
      },
      { timeoutMs: spec.readyTimeoutMs, intervalMs: 250 },
    );
    const retry =
      died &&
      performance.now() - started < (spec.bindRetryMs ?? 75_000) &&
      ADDRESS_IN_USE.test(await logSince(spec.logFile, logOffset)) &&
      !(await isPortOpen(spec.port));
    if (!retry) break;
    spec.onProgress(
      `${spec.label}: 127.0.0.1:${spec.port} cannot be bound yet though nothing listens there (a closed connection's TIME_WAIT); retrying in 2 s`,
    );
    await sleep(2_000);
  }
  if (!ready || died) {
    if (!died) await stopManaged(spec);
    const why = died ? 'exited during start' : `did not answer within ${spec.readyTimeoutMs} ms (${last?.detail})`;
    throw new PolyvisionError(
      'services_start_failed',
      `${spec.label} ${why}; last lines of ${spec.logFile}:\n${await logTail(spec.logFile)}`,
    );
  }
  spec.onProgress(`${spec.label}: answering after ${Math.round(performance.now() - started)} ms (pid ${newPid})`);
  return 'started';
}

/**
 * Stops our own instance: the clean `stop` hook when given, then SIGTERM to
 * its process group, SIGKILL after the grace period. Removes the pid file.
 */
export async function stopManaged(spec: ManagedSpec): Promise<DownOutcome> {
  const pid = await readPidFile(spec.pidFile);
  if (pid === null || !(await isAlive(pid))) {
    await removePidFile(spec.pidFile);
    return (await spec.ping(1_000)).answering ? 'external' : 'not_running';
  }
  if (spec.stop) {
    try {
      await spec.stop(pid);
    } catch (error) {
      spec.onProgress(`${spec.label}: clean stop failed (${(error as Error).message}); signalling pid ${pid}`);
    }
  }
  const outcome = await stopProcess(pid, spec.stopGraceMs);
  await removePidFile(spec.pidFile);
  return outcome === 'killed' ? 'killed' : 'stopped';
}
