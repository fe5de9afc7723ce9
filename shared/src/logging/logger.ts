import { type Logger, pino } from 'pino';

export type { Logger } from 'pino';

/**
 * Creates the process logger: JSON lines on stderr (pino), level from
 * `LOG_LEVEL` (default `info`; `silent` in tests unless set).
 *
 * @param service - the service name, written as `service` on every line.
 */
export function createLogger(service: string, bindings: Record<string, unknown> = {}): Logger {
  const level = process.env.LOG_LEVEL ?? (process.env.VITEST ? 'silent' : 'info');
  return pino({ level, base: { service, pid: process.pid, ...bindings } }, pino.destination(2));
}

/** A logger that writes nothing, for tests and library defaults. */
export const silentLogger: Logger = pino({ level: 'silent' });
