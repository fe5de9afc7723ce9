import { randomUUID } from 'node:crypto';
import { type StageTask, stageCompletedSchema, stageTaskSchema } from '@polyvision/shared';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/index.ts';
import { MemoryBus } from '../../src/bus/memory/memory-bus.ts';
import type { BusRecord } from '../../src/bus/message-bus.ts';
import { migrate } from '../../src/db/migrate.ts';
import { deterministicUuid, lostAttemptMessageId } from '../../src/workers/runtime/report-ids.ts';
import { PgStageClaimStore } from '../../src/workers/runtime/stage-claims.ts';
import type { StageHandler } from '../../src/workers/runtime/stage-handler.ts';
import { WorkerRuntime } from '../../src/workers/runtime/worker-runtime.ts';
import { testDatabaseDrivers } from '../orchestrator/support/databases.ts';
import { dispatched } from './support/dispatched.ts';

const driver = testDatabaseDrivers.find((d) => !d.skip)!;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function task(overrides: Partial<StageTask> = {}): StageTask {
  return stageTaskSchema.parse({
    type: 'stage.task',
    message_id: randomUUID(),
    job_id: `job-${randomUUID()}`,
    organization_id: 'acme',
    match_id: 'm-1',
    created_at: new Date().toISOString(),
    stage: 'detect',
    attempt: 1,
    model_version: 'v1',
    inputs: [],
    params: {},
    ...overrides,
  });
}

async function setup(handler: StageHandler) {
  const { db, drop } = await driver.open();
  await migrate(db);
  const bus = new MemoryBus({ defaultPartitions: 2 });
  const runtime = new WorkerRuntime({
    bus,
    handlers: [handler],
    claims: new PgStageClaimStore(db),
    topicPrefix: 'w',
    progressIntervalMs: 1,
  });
  await runtime.start();
  const reports: BusRecord[] = [];
  const reader = bus.createConsumer({ groupId: 'reader', topics: ['w.jobs.commands'] });
  await reader.run({ eachMessage: async (r) => void reports.push(r) });
  const producer = bus.createProducer();
  cleanups.push(
    drop,
    () => runtime.close(),
    () => reader.close(),
  );
  const sendTask = async (t: StageTask | string) => {
    if (typeof t !== 'string') await dispatched(db, t);
    await producer.send('w.tasks.detect', [{ key: 'acme:m-1', value: typeof t === 'string' ? t : JSON.stringify(t) }]);
  };
  return { db, bus, runtime, reports, sendTask };
}

describe(`worker runtime (${driver.name})`, () => {
  it('runs a task once however often it is delivered, and re-sends the stored result with the same message id', async () => {
    let runs = 0;
    const { reports, sendTask } = await setup({
      stage: 'detect',
      async run({ reportProgress }) {
        runs += 1;
        reportProgress(0.5);
        await new Promise((resolve) => setTimeout(resolve, 20));
        return { outputs: [], stats: { frames: 7 } };
      },
    });
    const t = task();
    await sendTask(t);
    await sendTask(t);
    await sendTask(t);
    const completed = () => reports.map((r) => JSON.parse(r.value)).filter((m) => m.type === 'stage.completed');
    await waitFor(() => completed().length === 3);
    expect(runs).toBe(1);
    const ids = new Set(completed().map((m) => m.message_id));
    expect([...ids]).toEqual([deterministicUuid(`${t.message_id}:stage.completed`)]);
    const parsed = stageCompletedSchema.parse(completed()[0]);
    expect(parsed).toMatchObject({ job_id: t.job_id, stage: 'detect', attempt: 1, stats: { frames: 7 } });
    expect(reports.every((r) => r.key === 'acme:m-1')).toBe(true);
    expect(reports.some((r) => JSON.parse(r.value).type === 'stage.progress')).toBe(true);
  });

  it('reports a task whose previous holder stopped heartbeating as lost (heartbeat_timeout) once its lease expires, without running it', async () => {
    let runs = 0;
    const { db, reports, sendTask } = await setup({
      stage: 'detect',
      async run() {
        runs += 1;
        return { outputs: [] };
      },
    });
    const t = await dispatched(db, task());
    // A worker that died mid-task: its claim is live for another second.
    await new PgStageClaimStore(db).claim(t, 'dead-worker', 1_000);
    await sendTask(t);
    const lost = await waitFor(() => reports.map((r) => JSON.parse(r.value)).find((m) => m.type === 'stage.failed'), {
      timeoutMs: 10_000,
    });
    expect(lost).toMatchObject({
      message_id: lostAttemptMessageId(t.message_id),
      attempt: 1,
      error: { code: 'heartbeat_timeout', retriable: true },
    });
    expect(runs).toBe(0);
    const claim = await db.query<{ status: string; owner: string }>(
      `SELECT status, owner FROM stage_claims WHERE task_message_id = $1`,
      [t.message_id],
    );
    expect(claim.rows).toEqual([{ status: 'lost', owner: 'dead-worker' }]);
    // The dead holder, back from a pause, may not renew: the attempt is over.
    expect(await new PgStageClaimStore(db).renew(t, 'dead-worker', 1_000)).toBe(false);
  });

  it("a worker restarted with the same WORKER_ID does not re-take its previous life's claim: the stage re-runs as a new attempt", async () => {
    const { db, drop } = await driver.open();
    await migrate(db);
    cleanups.push(drop);
    const t = await dispatched(db, task());
    const claims = new PgStageClaimStore(db);
    // The first life: claims the task and hangs in the stage; then "dies" (its renewals stop reaching the database).
    let alive = true;
    const frozen = {
      claim: claims.claim.bind(claims),
      renew: async (...args: Parameters<typeof claims.renew>) => (alive ? claims.renew(...args) : true),
      complete: claims.complete.bind(claims),
      fail: claims.fail.bind(claims),
      release: async () => {},
    };
    const lives: { runtime: WorkerRuntime; bus: MemoryBus; runs: number[]; reports: BusRecord[] }[] = [];
    for (let life = 0; life < 2; life++) {
      const bus = new MemoryBus({ defaultPartitions: 1 });
      const entry = { bus, runs: [] as number[], reports: [] as BusRecord[] } as (typeof lives)[number];
      entry.runtime = new WorkerRuntime({
        bus,
        handlers: [
          {
            stage: 'detect',
            async run({ task: running, signal }) {
              entry.runs.push(running.attempt);
              await new Promise((resolve) => signal.addEventListener('abort', resolve));
              return { outputs: [] };
            },
          },
        ],
        claims: frozen,
        topicPrefix: 'w',
        workerId: 'worker-1',
        claimLeaseMs: 1_500,
      });
      await entry.runtime.start();
      const reader = bus.createConsumer({ groupId: 'reader', topics: ['w.jobs.commands'] });
      await reader.run({ eachMessage: async (r) => void entry.reports.push(r) });
      cleanups.push(
        () => entry.runtime.close(),
        () => reader.close(),
      );
      lives.push(entry);
    }
    const [first, second] = lives as [(typeof lives)[number], (typeof lives)[number]];
    const send = (bus: MemoryBus) =>
      bus.createProducer().send('w.tasks.detect', [{ key: 'acme:m-1', value: JSON.stringify(t) }]);
    await send(first.bus);
    await waitFor(() => first.runs.length === 1);
    alive = false;
    // The second life gets the task again (uncommitted by the first): busy, then lost once the lease runs out.
    await send(second.bus);
    const lost = await waitFor(
      () => second.reports.map((r) => JSON.parse(r.value)).find((m) => m.type === 'stage.failed'),
      { timeoutMs: 20_000 },
    );
    expect(lost).toMatchObject({ attempt: 1, error: { code: 'heartbeat_timeout' } });
    expect(second.runs).toEqual([]);
    const rows = await db.query<{ status: string; owner: string }>(
      `SELECT status, owner FROM stage_claims WHERE task_message_id = $1`,
      [t.message_id],
    );
    expect(rows.rows).toEqual([{ status: 'lost', owner: first.runtime.claimOwner }]);
    expect(first.runtime.claimOwner).not.toBe(second.runtime.claimOwner);
    expect(first.runtime.claimOwner.startsWith('worker-1#')).toBe(true);
  });

  it('keeps no memory of jobs: a task is run when the database says it is current, whatever the worker saw before', async () => {
    const runsByAttempt: number[] = [];
    const { db, bus, reports, sendTask } = await setup({
      stage: 'detect',
      async run({ task: t }) {
        runsByAttempt.push(t.attempt);
        return { outputs: [] };
      },
    });
    const first = await dispatched(db, task());
    // The job is cancelled before its task arrives: the task is dropped, nothing reported.
    await db.query(`UPDATE jobs SET status = 'cancelled' WHERE job_id = $1`, [first.job_id]);
    await db.query(`UPDATE job_stages SET status = 'cancelled' WHERE job_id = $1`, [first.job_id]);
    const producer = bus.createProducer();
    cleanups.push(() => producer.close());
    await producer.send('w.tasks.detect', [{ key: 'acme:m-1', value: JSON.stringify(first) }]);
    // Then reprocessed: attempt 2 of the same job reaches the same worker and runs.
    const second = await dispatched(db, task({ job_id: first.job_id, attempt: 2 }));
    await sendTask(second);
    await waitFor(() => reports.some((r) => JSON.parse(r.value).type === 'stage.completed'), { timeoutMs: 10_000 });
    expect(runsByAttempt).toEqual([2]);
    const stale = reports.map((r) => JSON.parse(r.value)).filter((m) => m.attempt === 1);
    expect(stale).toEqual([]);
  });

  it('reports failures with the retriable flag, and dead-letters a malformed task without blocking', async () => {
    const { bus, reports, sendTask } = await setup({
      stage: 'detect',
      async run({ task: t }) {
        if (t.model_version === 'bad-input') throw Object.assign(new Error('plain error'), {});
        throw new (await import('@polyvision/shared')).PolyvisionError('input_unreadable', 'cannot read', {
          retriable: false,
        });
      },
    });
    await sendTask('{"type":"stage.task"}');
    await sendTask(task({ model_version: 'bad-input' }));
    await sendTask(task());
    const failed = () => reports.map((r) => JSON.parse(r.value)).filter((m) => m.type === 'stage.failed');
    await waitFor(() => failed().length === 2);
    expect(failed().map((m) => [m.error.code, m.error.retriable])).toEqual([
      ['stage_error', true],
      ['input_unreadable', false],
    ]);
    const dlq = bus.records('w.dlq').map((r) => JSON.parse(r.value));
    expect(dlq).toHaveLength(1);
    expect(dlq[0]).toMatchObject({ original_topic: 'w.tasks.detect', error: { code: 'schema_mismatch' } });
  });

  it('on close, aborts a running task and hands it back uncommitted (its claim released)', async () => {
    let aborted = false;
    const { db, bus, runtime, sendTask } = await setup({
      stage: 'detect',
      async run({ signal }) {
        await new Promise((_, reject) =>
          signal.addEventListener('abort', () => {
            aborted = true;
            reject(signal.reason);
          }),
        );
        return { outputs: [] };
      },
    });
    const t = task();
    await sendTask(t);
    await waitFor(
      async () =>
        (await db.query(`SELECT 1 FROM stage_claims WHERE task_message_id = $1`, [t.message_id])).rowCount === 1,
    );
    await runtime.close();
    expect(aborted).toBe(true);
    expect((await db.query(`SELECT 1 FROM stage_claims WHERE task_message_id = $1`, [t.message_id])).rowCount).toBe(0);
    const lag = await bus.groupLag('w-worker-detect', 'w.tasks.detect');
    expect([...lag.values()].reduce((a, b) => a + b, 0)).toBe(1); // not committed: another worker takes it
  });
});
