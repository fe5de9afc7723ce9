import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  Elections,
  LeadershipRunner,
  type LeadershipRunnerOptions,
  type LeadershipService,
  ManualClock,
  MemoryTtlStore,
} from '../../src/leadership/index.ts';

/**
 * The runner tests of seed vvm-orchestration.md ("Test design": Basic,
 * Shutdown, CancelLeadership) plus the killer, on the memory store with a
 * manual clock (the seed's "bump mock time").
 */
describe('LeadershipRunner', () => {
  const leaseMs = 4_000;
  let clock: ManualClock;
  let store: MemoryTtlStore;
  let key: string;
  const opened: Elections[] = [];
  const runners: LeadershipRunner[] = [];

  /** A service that counts its runs and returns when its signal aborts. */
  function obedientService(state: { running: number; runs: number }): LeadershipService {
    return (signal) =>
      new Promise<void>((resolve) => {
        state.running += 1;
        state.runs += 1;
        signal.addEventListener(
          'abort',
          () => {
            state.running -= 1;
            resolve();
          },
          { once: true },
        );
      });
  }

  function runner(options: Partial<LeadershipRunnerOptions> & Pick<LeadershipRunnerOptions, 'services'>) {
    const elections = new Elections(store, { clock });
    opened.push(elections);
    const r = new LeadershipRunner({
      elections,
      key,
      value: `vvm-${randomUUID()}`,
      leaseMs,
      acquireTimeoutMs: 1_000,
      clock,
      kill: () => {
        throw new Error('kill called unexpectedly');
      },
      ...options,
    });
    runners.push(r);
    return r;
  }

  beforeEach(() => {
    clock = new ManualClock(5_000);
    store = new MemoryTtlStore({ clock });
    key = `vvm-leader-${randomUUID()}`;
  });

  afterEach(async () => {
    await Promise.all(opened.splice(0).map((e) => e.close()));
    runners.length = 0;
  });

  it('Basic: the first instance starts its services, a second instance fails to start', async () => {
    const first = { running: 0, runs: 0 };
    const second = { running: 0, runs: 0 };
    const vvm1 = runner({ services: [obedientService(first), obedientService(first)] });
    const problem = await vvm1.launch();
    expect(first.running).toBe(2);
    expect(problem.aborted).toBe(false);
    expect(vvm1.leadership?.term).toBe(1);

    const vvm2 = runner({ services: [obedientService(second)] });
    const launching = vvm2.launch();
    await clock.advance(1_000);
    await expect(launching).rejects.toMatchObject({ code: 'leadership_not_acquired' });
    expect(second.runs).toBe(0);
    expect(await vvm2.shutdown()).toMatchObject({ code: 'leadership_not_acquired' });

    expect(await vvm1.shutdown()).toBeNull();
    expect(first.running).toBe(0);
  });

  it('a waiting instance starts once the leader shuts down within its acquisition timeout', async () => {
    const vvm1 = runner({ services: [obedientService({ running: 0, runs: 0 })] });
    await vvm1.launch();
    const second = { running: 0, runs: 0 };
    const vvm2 = runner({ services: [obedientService(second)], acquireTimeoutMs: 5_000 });
    const launching = vvm2.launch();
    await clock.advance(1_000);
    expect(second.runs).toBe(0);
    await vvm1.shutdown();
    await clock.advance(1_000);
    await launching;
    expect(second.running).toBe(1);
    expect(vvm2.leadership?.term).toBe(2);
    expect(await vvm2.shutdown()).toBeNull();
  });

  it('Shutdown on leadership loss: the stored value changes, time passes, the services stop', async () => {
    const state = { running: 0, runs: 0 };
    const vvm = runner({ services: [obedientService(state)] });
    const problem = await vvm.launch();
    const value = vvm.leadership?.value ?? '';
    expect(await store.compareAndSwap(key, value, 'someone-else', leaseMs)).toBe(true);
    await clock.advance(leaseMs / 3 + 1);
    expect(problem.aborted).toBe(true);
    expect(problem.reason).toMatchObject({ code: 'leadership_lost' });
    expect(state.running).toBe(0);
    await clock.advance(leaseMs / 2); // past the kill threshold: the obedient service stopped, no kill
    const recorded = await vvm.shutdown();
    expect(recorded).toMatchObject({ code: 'leadership_lost' });
    expect((await store.get(key))?.value).toBe('someone-else'); // shutdown did not delete another's record
  });

  it('CancelLeadership on manual shutdown: the leadership is released at once', async () => {
    const state = { running: 0, runs: 0 };
    const vvm = runner({ services: [obedientService(state)] });
    await vvm.launch();
    expect((await store.get(key))?.value).toBe(vvm.leadership?.value);
    expect(await vvm.shutdown()).toBeNull();
    expect(state.running).toBe(0);
    expect(vvm.leadership?.signal.aborted).toBe(true);
    expect(vvm.leadership?.signal.reason).toMatchObject({ code: 'leadership_released' });
    expect(await store.get(key)).toBeNull();
    expect(await store.insertIfNotExists(key, 'next', leaseMs)).toBe(2);
    expect(clock.pendingTimers).toBe(0);
  });

  it('the killer fires exactly once when a service ignores its signal after a loss', async () => {
    let kills = 0;
    let killedAtMs = Number.NaN;
    let release: () => void = () => undefined;
    const stubborn: LeadershipService = () =>
      new Promise<void>((resolve) => {
        release = resolve;
      });
    const vvm = runner({
      services: [stubborn, obedientService({ running: 0, runs: 0 })],
      kill: () => {
        kills += 1;
        killedAtMs = clock.now();
      },
    });
    const problem = await vvm.launch();
    await store.compareAndSwap(key, vvm.leadership?.value ?? '', 'someone-else', leaseMs);
    await clock.advance(leaseMs / 3 + 1);
    expect(problem.aborted).toBe(true);
    const lostAtMs = clock.now();
    await clock.advance(leaseMs / 4 - 10);
    expect(kills).toBe(0);
    await clock.advance(leaseMs * 2);
    expect(kills).toBe(1);
    expect(killedAtMs - lostAtMs).toBeLessThanOrEqual(leaseMs / 4);
    release();
    expect(await vvm.shutdown()).toMatchObject({ code: 'leadership_lost' });
    expect(kills).toBe(1);
  });

  it('a failing service is recorded as the problem, once', async () => {
    const vvm = runner({
      services: [
        async () => {
          throw new Error('boom');
        },
        async () => {
          throw new Error('second boom');
        },
        obedientService({ running: 0, runs: 0 }),
      ],
    });
    const problem = await vvm.launch();
    await clock.advance(0);
    expect(problem.aborted).toBe(true);
    expect(problem.reason).toMatchObject({ code: 'leadership_service_failed', message: 'service #0 failed' });
    expect(await vvm.shutdown()).toBe(problem.reason);
    expect(await store.get(key)).toBeNull();
  });

  it('refuses a second launch and a shutdown before launch', async () => {
    const vvm = runner({ services: [] });
    await expect(vvm.shutdown()).rejects.toMatchObject({ code: 'runner_not_launched' });
    await vvm.launch();
    await expect(vvm.launch()).rejects.toMatchObject({ code: 'runner_already_launched' });
    expect(await vvm.shutdown()).toBeNull();
  });
});

describe('LeadershipRunner options', () => {
  it('refuses a non-positive lease or acquisition timeout and an empty key', () => {
    const elections = new Elections(new MemoryTtlStore());
    const base = { elections, key: 'k', value: 'v', leaseMs: 1_000, acquireTimeoutMs: 1_000, services: [] };
    for (const bad of [{ leaseMs: 0 }, { acquireTimeoutMs: -1 }, { key: '' }, { leaseMs: 2.5 }]) {
      expect(() => new LeadershipRunner({ ...base, ...bad })).toThrow(
        expect.objectContaining({ code: 'ttl_store_invalid_argument' }),
      );
    }
    expect(() => new LeadershipRunner(base)).not.toThrow();
  });
});
