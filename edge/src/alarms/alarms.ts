/**
 * Alarms: conditions an operator must see (a camera that does not connect,
 * a full disk, an ingest that refuses the token). An alarm is raised with a
 * code and a subject (the camera, the file), stays active until cleared, and
 * is shown by the status API and counted in metrics. Raising an active alarm
 * again updates its message and count; nothing is ever dropped silently.
 */
import type { Logger } from '@polyvision/shared';

/** One active alarm. */
export interface Alarm {
  code: string;
  /** What it is about: a camera id, a file, `ingest`, `disk`. */
  subject: string;
  message: string;
  severity: 'warning' | 'critical';
  /** Times raised since it became active. */
  count: number;
  firstAtMs: number;
  lastAtMs: number;
  details?: Record<string, unknown>;
}

/** The set of active alarms, keyed by code and subject. */
export class Alarms {
  readonly #active = new Map<string, Alarm>();
  readonly #logger: Logger | undefined;
  readonly #now: () => number;
  /** Raised since start, by code (also the cleared ones). */
  readonly raisedTotal = new Map<string, number>();

  constructor(options: { logger?: Logger; now?: () => number } = {}) {
    this.#logger = options.logger;
    this.#now = options.now ?? Date.now;
  }

  /** Raises (or refreshes) an alarm and logs it. */
  raise(
    code: string,
    subject: string,
    message: string,
    options: { severity?: Alarm['severity']; details?: Record<string, unknown> } = {},
  ): void {
    const key = `${code}\u0000${subject}`;
    const now = this.#now();
    const existing = this.#active.get(key);
    const alarm: Alarm = {
      code,
      subject,
      message,
      severity: options.severity ?? 'warning',
      count: (existing?.count ?? 0) + 1,
      firstAtMs: existing?.firstAtMs ?? now,
      lastAtMs: now,
      ...(options.details ? { details: options.details } : {}),
    };
    this.#active.set(key, alarm);
    this.raisedTotal.set(code, (this.raisedTotal.get(code) ?? 0) + 1);
    const log = { alarm: code, subject, count: alarm.count, ...options.details };
    if (alarm.severity === 'critical') this.#logger?.error(log, message);
    else this.#logger?.warn(log, message);
  }

  /** Clears an alarm (no-op when not active); with no subject, every alarm of that code. */
  clear(code: string, subject?: string): void {
    for (const [key, alarm] of this.#active) {
      if (alarm.code === code && (subject === undefined || alarm.subject === subject)) {
        this.#active.delete(key);
        this.#logger?.info({ alarm: code, subject: alarm.subject }, 'alarm cleared');
      }
    }
  }

  /** Whether an alarm with this code (and subject, if given) is active. */
  has(code: string, subject?: string): boolean {
    for (const alarm of this.#active.values()) {
      if (alarm.code === code && (subject === undefined || alarm.subject === subject)) return true;
    }
    return false;
  }

  /** The active alarms, oldest first. */
  list(): Alarm[] {
    return [...this.#active.values()].sort((a, b) => a.firstAtMs - b.firstAtMs);
  }
}
