import { coerceError, PolyvisionError, ValidationError } from '../errors/index.ts';
import { type Logger, silentLogger } from '../logging/index.ts';
import { type Clock, systemClock } from './clock.ts';
import { KILL_THRESHOLD_RATIO } from './defaults.ts';
import type { Elections, Leadership } from './elections.ts';
import { LeadershipError } from './errors.ts';
import { assertKey, assertTtlMs } from './ttl-store.ts';

/** A service that runs only while leadership is held; it must return soon after `signal` aborts. */
export type LeadershipService = (signal: AbortSignal) => Promise<void>;

/** Options of {@link LeadershipRunner}. */
export interface LeadershipRunnerOptions {
  /** Where leadership is won and kept (the runner does not close it). */
  elections: Elections;
  /** The election's key (e.g. `capacity_monitor:leader_lock`). */
  key: string;
  /** This instance's identity, unique per process (e.g. `host:pid:uuid`). */
  value: string;
  /** Lease in milliseconds. */
  leaseMs: number;
  /** How long `launch()` keeps trying to acquire, in milliseconds. */
  acquireTimeoutMs: number;
  /** Attempt interval while acquiring. @defaultValue lease/10 */
  retryIntervalMs?: number;
  /** Started together once leadership is held, with a signal aborted on loss or shutdown. */
  services: readonly LeadershipService[];
  /**
   * Called once when the services have not stopped within lease/4 after a
   * loss, so that two leaders never act at once. @defaultValue () => process.exit(1)
   */
  kill?: () => void;
  /** @defaultValue silentLogger */
  logger?: Logger;
  /** Time source of the kill threshold. @defaultValue systemClock */
  clock?: Clock;
}

type RunnerState = 'new' | 'launching' | 'running' | 'shutting_down' | 'stopped';

/**
 * Runs services only while this process leads `key` (the VVM orchestration
 * design of seed vvm-orchestration.md, in TypeScript):
 *
 * - `launch()` acquires leadership within `acquireTimeoutMs` (campaigning),
 *   then starts every service with the services' AbortSignal and returns the
 *   problem signal (the seed's `problemCtx`);
 * - a monitor watches the leadership; on loss it records the problem (once),
 *   aborts the services and arms the killer: if the services have not all
 *   returned within lease/4, `kill()` runs (once);
 * - a service that throws is recorded as the problem too (the host is
 *   expected to call `shutdown()` when the problem signal aborts);
 * - `shutdown()` stops the services, then the monitor, then releases the
 *   leadership, and returns the recorded problem or null.
 *
 * The problem is recorded exactly once: later failures are only logged.
 */
export class LeadershipRunner {
  readonly #options: Required<Omit<LeadershipRunnerOptions, 'retryIntervalMs'>> & { retryIntervalMs?: number };
  readonly #problem = new AbortController();
  readonly #servicesStop = new AbortController();
  #problemError: PolyvisionError | null = null;
  #state: RunnerState = 'new';
  #leadership: Leadership | undefined;
  #services: Promise<void> = Promise.resolve();
  #stopMonitor: () => void = () => undefined;
  #cancelKiller: () => void = () => undefined;
  #killed = false;
  #launching: Promise<unknown> = Promise.resolve();

  /** @throws ValidationError `ttl_store_invalid_argument` for an empty key or value, or a non-positive-integer lease or timeout. */
  constructor(options: LeadershipRunnerOptions) {
    assertKey(options.key);
    assertKey(options.value, 'value');
    assertTtlMs(options.leaseMs, 'leaseMs');
    assertTtlMs(options.acquireTimeoutMs, 'acquireTimeoutMs');
    this.#options = {
      ...options,
      kill: options.kill ?? (() => process.exit(1)),
      logger: options.logger ?? silentLogger,
      clock: options.clock ?? systemClock,
    };
  }

  /** Aborted when a problem is recorded; its reason is the problem. */
  get problemSignal(): AbortSignal {
    return this.#problem.signal;
  }

  /** The leadership while launched (its `term` is the fencing token for the services' writes). */
  get leadership(): Leadership | undefined {
    return this.#leadership;
  }

  /**
   * Acquires leadership and starts the services.
   *
   * @returns the problem signal (aborted on leadership loss or service failure).
   * @throws LeadershipError `leadership_not_acquired` when leadership could not
   *   be won within `acquireTimeoutMs` (the runner is then stopped);
   *   PolyvisionError `runner_already_launched` on a second call.
   */
  launch(): Promise<AbortSignal> {
    if (this.#state !== 'new') {
      return Promise.reject(
        new PolyvisionError('runner_already_launched', 'LeadershipRunner.launch() may be called only once'),
      );
    }
    this.#state = 'launching';
    const launching = this.#launch();
    this.#launching = launching.catch(() => undefined);
    return launching;
  }

  async #launch(): Promise<AbortSignal> {
    const { elections, key, value, leaseMs, acquireTimeoutMs, retryIntervalMs, clock } = this.#options;
    const timeout = new AbortController();
    const cancelTimeout = clock.setTimer(() => timeout.abort(), acquireTimeoutMs);
    try {
      this.#leadership = await elections.campaign(key, value, leaseMs, {
        signal: AbortSignal.any([timeout.signal, this.#servicesStop.signal]),
        ...(retryIntervalMs === undefined ? {} : { retryIntervalMs }),
      });
    } catch (error) {
      this.#state = 'stopped';
      const problem = new LeadershipError(
        'leadership_not_acquired',
        `could not acquire leadership of ${key} within ${acquireTimeoutMs} ms`,
        { key, cause: error },
      );
      this.#record(problem);
      throw problem;
    } finally {
      cancelTimeout();
    }
    this.#run(this.#leadership);
    return this.#problem.signal;
  }

  /**
   * Like {@link launch}, for a leadership the caller has already won (with
   * its own acquisition loop, e.g. to count attempts): watches it, starts the
   * services, arms the killer on loss; {@link shutdown} releases it.
   *
   * @returns the problem signal.
   * @throws PolyvisionError `runner_already_launched` when launched or adopted before;
   *   ValidationError when the leadership's key is not this runner's.
   */
  adopt(leadership: Leadership): AbortSignal {
    if (this.#state !== 'new') {
      throw new PolyvisionError('runner_already_launched', 'LeadershipRunner: launch() or adopt() only once');
    }
    if (leadership.key !== this.#options.key) {
      throw new ValidationError(
        'runner_key_mismatch',
        `leadership of ${leadership.key} given to a runner of ${this.#options.key}`,
      );
    }
    this.#leadership = leadership;
    this.#run(leadership);
    return this.#problem.signal;
  }

  #run(leadership: Leadership): void {
    this.#options.logger.info({ key: this.#options.key, term: leadership.term }, 'leader: starting services');
    this.#state = 'running';
    this.#startMonitor(leadership);
    this.#services = this.#startServices(leadership);
  }

  /**
   * Stops services, then the monitor, then releases leadership. Waits for
   * the services to return (a service that ignores its signal keeps this
   * waiting; after a loss the killer still fires).
   *
   * @returns the recorded problem, or null when there was none.
   * @throws PolyvisionError `runner_not_launched` before `launch()` was called.
   */
  async shutdown(): Promise<PolyvisionError | null> {
    if (this.#state === 'new') {
      throw new PolyvisionError('runner_not_launched', 'LeadershipRunner.shutdown() called before launch()');
    }
    if (this.#state === 'launching') {
      this.#servicesStop.abort(new PolyvisionError('runner_shutdown', 'shutdown requested'));
      await this.#launching;
    }
    if (this.#state === 'running') {
      this.#state = 'shutting_down';
      this.#servicesStop.abort(new PolyvisionError('runner_shutdown', 'shutdown requested'));
      await this.#services;
      this.#stopMonitor();
      this.#cancelKiller();
      try {
        await this.#leadership?.release();
      } catch (error) {
        this.#options.logger.warn({ err: error, key: this.#options.key }, 'release failed; the lease will expire');
      }
      this.#state = 'stopped';
    }
    return this.#problemError;
  }

  #startMonitor(leadership: Leadership): void {
    const onLoss = (): void => {
      if (this.#state !== 'running') return;
      const reason = leadership.signal.reason;
      this.#record(reason instanceof PolyvisionError ? reason : coerceError(reason, 'leadership_lost'));
      this.#servicesStop.abort(reason);
      this.#armKiller();
    };
    leadership.signal.addEventListener('abort', onLoss, { once: true });
    this.#stopMonitor = () => leadership.signal.removeEventListener('abort', onLoss);
    if (leadership.signal.aborted) onLoss();
  }

  async #startServices(leadership: Leadership): Promise<void> {
    const signal = this.#servicesStop.signal;
    const { logger, key } = this.#options;
    await Promise.all(
      this.#options.services.map(async (service, index) => {
        try {
          await service(signal);
        } catch (error) {
          if (signal.aborted) {
            logger.debug({ key, index, err: error }, 'service ended after stop');
            return;
          }
          logger.error({ key, index, err: error }, 'leadership-scoped service failed');
          this.#record(
            new LeadershipError('leadership_service_failed', `service #${index} failed`, {
              key,
              term: leadership.term,
              cause: error,
            }),
          );
        }
      }),
    );
    this.#cancelKiller();
  }

  #armKiller(): void {
    const { clock, leaseMs, kill, logger, key } = this.#options;
    const thresholdMs = Math.floor(leaseMs * KILL_THRESHOLD_RATIO);
    let servicesDone = false;
    this.#services.then(() => {
      servicesDone = true;
    });
    this.#cancelKiller = clock.setTimer(() => {
      if (servicesDone || this.#killed) return;
      this.#killed = true;
      logger.fatal({ key, thresholdMs }, 'services did not stop after leadership loss; killing the process');
      kill();
    }, thresholdMs);
  }

  /** Records the first problem and aborts the problem signal; later ones are only logged. */
  #record(problem: PolyvisionError): void {
    if (this.#problemError) {
      this.#options.logger.warn({ err: problem }, 'further problem (not recorded)');
      return;
    }
    this.#problemError = problem;
    this.#problem.abort(problem);
  }
}
