/**
 * How a long-running service process ends: it waits for SIGTERM or SIGINT,
 * closes gracefully, and must be gone within a deadline even when a close
 * step waits on a peer that does not answer (a Kafka coordinator in a
 * rebalance, a database under load) or a handle stays open after close.
 */

import { ConfigError } from '../errors/index.ts';

/**
 * How long a service may take from the stop signal to its exit, in
 * milliseconds: below the 20 s grace of `polyvision cluster down` and the
 * 30 s of Kubernetes' default `terminationGracePeriodSeconds`, so the
 * process reports what held it instead of being killed without a word.
 */
export const SHUTDOWN_DEADLINE_MS = 15_000;

/**
 * The shutdown deadline from `SHUTDOWN_DEADLINE_MS` (milliseconds, an integer
 * from 1000 to 3 600 000), else {@link SHUTDOWN_DEADLINE_MS}. Set it below
 * what the supervisor waits before SIGKILL (Kubernetes: the pod's
 * `terminationGracePeriodSeconds` less its `preStop`).
 *
 * @throws ConfigError naming `SHUTDOWN_DEADLINE_MS` when it is set to anything else.
 */
export function shutdownDeadlineMs(env: Record<string, string | undefined> = process.env): number {
  const raw = env.SHUTDOWN_DEADLINE_MS?.trim();
  if (!raw) return SHUTDOWN_DEADLINE_MS;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < 1_000 || value > 3_600_000)
    throw new ConfigError('SHUTDOWN_DEADLINE_MS', `expected milliseconds from 1000 to 3600000, got '${raw}'`);
  return value;
}

/** Where the deadline reports (a pino logger fits). */
export interface ShutdownDeadlineLogger {
  error(fields: Record<string, unknown>, message: string): void;
}

/** What {@link untilStopSignal} resolves with. */
export interface StopSignal {
  signal: NodeJS.Signals;
  /** Names the close step that begins now, for the deadline's report. */
  step: (label: string) => void;
  /** Says the close is done: past the deadline, only open handles are to blame. */
  closed: () => void;
}

export interface StopSignalOptions {
  /** Milliseconds from the signal to the forced exit. @defaultValue {@link SHUTDOWN_DEADLINE_MS} */
  deadlineMs?: number;
  /** @defaultValue a JSON line on stderr */
  logger?: ShutdownDeadlineLogger;
}

/**
 * Resolves with the first SIGTERM or SIGINT this process receives, and arms
 * the shutdown deadline at that moment: if the process still runs
 * `deadlineMs` later, it logs the close step still pending (the label last
 * given to the returned `step`) and the resources that keep the event loop
 * alive (`process.getActiveResourcesInfo()`, e.g. `TCPWRAP`, `Timeout`),
 * then exits with status 1. The timer is unref'd, so it never keeps the
 * process alive itself; a process that exits in time never hears from it.
 *
 * @returns `signal` (which one came), `step(label)` to name each close step
 *   as it begins (`'consumer'`, `'database pool'`) and `closed()` once the
 *   close is done (the report then blames the open handles alone).
 */
export function untilStopSignal(options: StopSignalOptions = {}): Promise<StopSignal> {
  const deadlineMs = options.deadlineMs ?? SHUTDOWN_DEADLINE_MS;
  const logger = options.logger ?? stderrLogger;
  return new Promise((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      let pending: string | null = 'close';
      const timer = setTimeout(() => {
        const activeResources = process.getActiveResourcesInfo();
        logger.error(
          { signal, deadlineMs, pendingStep: pending, activeResources },
          pending === null
            ? `closed, but still running ${deadlineMs} ms after ${signal} (open: ${activeResources.join(', ')}): exiting`
            : `still running ${deadlineMs} ms after ${signal}: exiting without finishing '${pending}'`,
        );
        process.exit(1);
      }, deadlineMs);
      timer.unref();
      resolve({
        signal,
        step: (label) => {
          pending = label;
        },
        closed: () => {
          pending = null;
        },
      });
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  });
}

const stderrLogger: ShutdownDeadlineLogger = {
  error(fields, message) {
    process.stderr.write(`${JSON.stringify({ level: 'error', ...fields, msg: message })}\n`);
  },
};
