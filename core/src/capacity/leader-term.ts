import {
  abortableSleep,
  type Elections,
  type Leadership,
  LeadershipRunner,
  type Logger,
  type PolyvisionError,
  type TtlStore,
} from '@polyvision/shared';

/** Options of {@link runLeaderTerm}. */
export interface LeaderTermOptions {
  /** The leadership just won (the monitor counts its own acquisition attempts). */
  leadership: Leadership;
  elections: Elections;
  /** The store behind `elections`, to read the leader record. */
  store: TtlStore;
  key: string;
  instanceId: string;
  leaseMs: number;
  /** How often the leader reads its record back (to count renewals, to see a successor). */
  watchIntervalMs: number;
  /** Ends the term (shutdown). */
  closing: AbortSignal;
  /**
   * Called when the leader's work has not stopped within lease/4 after the
   * leadership was lost, so that two leaders never poll at once (the runner's
   * killer, seed vvm-orchestration.md). @defaultValue () => process.exit(1)
   */
  kill?: () => void;
  logger: Logger;
  /** The record's TTL went up since the last look: a renewal landed. */
  onRenewed(): void;
  /** The record names another instance or term: this term is over. */
  onSuccessor(leader: { id: string; term: number }): void;
  /** The leader's work; must return soon after `signal` aborts. */
  work(signal: AbortSignal): Promise<void>;
}

/**
 * One leadership term of the capacity monitor under the shared
 * {@link LeadershipRunner}: the work and a watch of the leader record run as
 * the runner's services; a lost leadership aborts them and arms the killer;
 * a record naming a successor ends the term too. Returns when the term ends
 * (loss, successor, service failure or `closing`), after the runner's
 * shutdown has stopped the services and released the record
 * (compare-and-delete: only if it is still ours).
 *
 * @returns the problem that ended the term, or null for a shutdown.
 */
export async function runLeaderTerm(options: LeaderTermOptions): Promise<PolyvisionError | null> {
  const { leadership } = options;
  const runner = new LeadershipRunner({
    elections: options.elections,
    key: options.key,
    value: options.instanceId,
    leaseMs: options.leaseMs,
    acquireTimeoutMs: options.leaseMs,
    services: [options.work, (signal) => watchRecord(options, signal)],
    ...(options.kill ? { kill: options.kill } : {}),
    logger: options.logger,
  });
  const problem = runner.adopt(leadership);
  await new Promise<void>((resolve) => {
    if (problem.aborted || options.closing.aborted) return resolve();
    problem.addEventListener('abort', () => resolve(), { once: true });
    options.closing.addEventListener('abort', () => resolve(), { once: true });
  });
  return runner.shutdown();
}

/**
 * Reads the leader record every `watchIntervalMs`: counts renewals, and
 * gives the leadership up (ending the term like a loss) when the record
 * names another instance or term.
 * A leader that cannot confirm its renewals needs no watch here: its
 * leadership aborts itself at the renew deadline (2/3 of the lease after the
 * last confirmed renewal was sent), whatever the store does.
 */
async function watchRecord(options: LeaderTermOptions, signal: AbortSignal): Promise<void> {
  let last: { ttlMs: number; atMs: number } | undefined;
  while (!signal.aborted) {
    await abortableSleep(options.watchIntervalMs, signal).catch(() => undefined);
    if (signal.aborted) return;
    const sentAt = Date.now();
    // Raced with the signal: with Redis down the read may hang, and a watch that does not return
    // after a loss would trip the runner's killer.
    const record = await untilAborted(
      options.store.get(options.key).catch(() => null),
      signal,
    );
    if (signal.aborted) return;
    if (record?.value === options.instanceId && record.term === options.leadership.term) {
      if (last && record.ttlMs > last.ttlMs - (sentAt - last.atMs) + 20) options.onRenewed();
      last = { ttlMs: record.ttlMs, atMs: sentAt };
    } else if (record) {
      // Someone else holds the lock: step down as after any loss (the runner aborts the work and
      // arms its killer). The release's compare-and-delete finds the record not ours and deletes nothing.
      options.logger.warn(
        { key: options.key, leader: record.value, term: record.term },
        'the leader record names another instance',
      );
      options.onSuccessor({ id: record.value, term: record.term });
      await options.leadership.release().catch(() => false);
      return;
    }
  }
}

/** `promise`'s value, or undefined as soon as `signal` aborts (the promise is left to settle alone). */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise<T | undefined>((resolve, reject) => {
    const onAbort = () => resolve(undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
