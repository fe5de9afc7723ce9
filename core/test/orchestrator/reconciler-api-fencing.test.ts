import { randomUUID } from 'node:crypto';
import { MemoryTtlStore } from '@polyvision/shared';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/index.ts';
import { MemoryBus } from '../../src/bus/memory/memory-bus.ts';
import { migrate } from '../../src/db/migrate.ts';
import { PartitionFencedError } from '../../src/orchestrator/errors.ts';
import { PartitionOwnership } from '../../src/orchestrator/fencing/partition-ownership.ts';
import { jobRoutes } from '../../src/orchestrator/http/job-routes.ts';
import { JobCommandClient } from '../../src/orchestrator/job-command-client.ts';
import { Reconciler } from '../../src/orchestrator/reconcile/reconciler.ts';
import { startReconcilerLeadership } from '../../src/orchestrator/reconcile/reconciler-leadership.ts';
import { testDatabaseDrivers } from './support/databases.ts';
import { Harness, PANORAMA } from './support/harness.ts';

const driver = testDatabaseDrivers.find((d) => !d.skip)!;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function world() {
  const { db, drop } = await driver.open();
  const h = new Harness(new MemoryBus({ defaultPartitions: 4 }), db);
  cleanups.push(drop, () => h.close());
  await h.setup();
  return h;
}

describe(`reconciler, jobs API and fencing (${driver.name})`, () => {
  it('re-dispatches a stage past its deadline through its owner; the late task is not run', async () => {
    const h = await world();
    // Deadlines are short so the test is quick; on a loaded host a re-dispatched task may miss its own
    // deadline too (then it is skipped and retried once more): allow a few attempts.
    await h.startOrchestrator({
      stageDeadlineMs: 1_500,
      maxAttempts: { stitch: 6, detect: 6, track: 6, vcam: 6, analyze: 6, encode: 6 },
    });
    const jobId = await h.client.submit({
      organization_id: 'acme',
      match_id: 'late',
      inputs: [PANORAMA],
      stages: ['detect'],
    });
    await waitFor(async () => {
      const r = await h.db.query(
        `SELECT 1 FROM job_stages WHERE job_id = $1 AND attempt = 1 AND status = 'dispatched'`,
        [jobId],
      );
      return r.rowCount === 1;
    });
    const producer = h.bus.createProducer();
    cleanups.push(() => producer.close());
    const reconciler = new Reconciler({ db: h.db, client: new JobCommandClient(producer, h.prefix) });
    const report = await waitFor(
      async () => {
        const r = await reconciler.reconcile();
        return r.overdueStages > 0 ? r : null;
      },
      { timeoutMs: 10_000, intervalMs: 200 },
    );
    expect(report.overdueStages).toBe(1);
    await waitFor(async () => {
      const r = await h.db.query(`SELECT 1 FROM job_stages WHERE job_id = $1 AND attempt >= 2`, [jobId]);
      return r.rowCount === 1;
    });
    await h.startWorker({ sleepMs: 10 });
    await h.waitForStatus([jobId], 'completed');
    const executions = await h.db.query<{ attempt: number }>(
      `SELECT attempt FROM test_stage_executions WHERE job_id = $1`,
      [jobId],
    );
    // Attempt 1 reached the worker after its deadline: skipped, never run. Exactly one run, a re-dispatch.
    expect(executions.rows).toHaveLength(1);
    expect(executions.rows[0]!.attempt).toBeGreaterThanOrEqual(2);
  });

  it('publishes the outbox rows a dead owner left unsent once it owns their partition', async () => {
    const h = await world();
    const events = await h.collect(`${h.prefix}.jobs.events`);
    const payload = { left: 'behind', job_id: 'j-1' };
    await h.db.query(
      `INSERT INTO outbox (commands_partition, topic, message_key, payload) VALUES (2, $1, 'acme:m', $2::jsonb)`,
      [`${h.prefix}.jobs.events`, JSON.stringify(payload)],
    );
    await h.startOrchestrator();
    await waitFor(() => events.length === 1, { timeoutMs: 10_000 });
    expect(JSON.parse(events[0]!.value)).toEqual(payload);
    expect(events[0]!.key).toBe('acme:m');
    await waitFor(async () => (await h.db.query(`SELECT 1 FROM outbox WHERE sent_at IS NOT NULL`)).rowCount === 1);
  });

  it('runs the reconciler on one replica only, and moves it when the leader stops', async () => {
    const store = new MemoryTtlStore();
    const calls: string[] = [];
    const fake = (id: string) => ({ reconcile: async () => void calls.push(id) }) as unknown as Reconciler;
    const a = startReconcilerLeadership({
      reconciler: fake('a'),
      store,
      instanceId: 'a',
      leaseMs: 2_000,
      cronExpression: '* * * * * *',
    });
    const b = startReconcilerLeadership({
      reconciler: fake('b'),
      store,
      instanceId: 'b',
      leaseMs: 2_000,
      cronExpression: '* * * * * *',
    });
    cleanups.push(
      () => b.stop(),
      () => a.stop(),
    );
    await waitFor(() => calls.length >= 3, { timeoutMs: 10_000 });
    expect(new Set(calls).size).toBe(1);
    const leader = calls[0]!;
    await (leader === 'a' ? a : b).stop();
    const before = calls.length;
    await waitFor(() => calls.slice(before).some((id) => id !== leader), { timeoutMs: 10_000 });
  });

  it('answers GET /api/v1/jobs/:id and the filtered, paged list', async () => {
    const h = await world();
    await h.startOrchestrator();
    await h.startWorker({ sleepMs: 5 });
    const ids = await h.submit(3, ['detect', 'track']);
    await h.waitForStatus(ids, 'completed');
    const operatorToken = 'operator-token-0123456789abcdef';
    const routes = jobRoutes(h.db, { operatorTokens: [operatorToken] });
    expect((await routes.request(`/api/v1/jobs/${ids[0]}`)).status).toBe(401);
    const app = {
      request: (path: string) => routes.request(path, { headers: { authorization: `Bearer ${operatorToken}` } }),
    };
    const one = await app.request(`/api/v1/jobs/${ids[0]}`);
    expect(one.status).toBe(200);
    const job = (await one.json()) as {
      status: string;
      progress_percent: number;
      stages: Array<{ stage: string; attempt: number; status: string }>;
    };
    expect(job.status).toBe('completed');
    expect(job.progress_percent).toBe(100);
    expect(job.stages.map((s) => [s.stage, s.status, s.attempt])).toEqual([
      ['detect', 'completed', 1],
      ['track', 'completed', 1],
    ]);
    const missing = await app.request(`/api/v1/jobs/${randomUUID()}`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ code: 'job_not_found' });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await app.request(`/api/v1/jobs?status=completed&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      const body = (await page.json()) as { jobs: Array<{ job_id: string }>; next_cursor: string | null };
      seen.push(...body.jobs.map((j) => j.job_id));
      cursor = body.next_cursor;
    } while (cursor);
    expect(seen.sort()).toEqual([...ids].sort());
    const running = await app.request('/api/v1/jobs?status=running');
    expect(((await running.json()) as { jobs: unknown[] }).jobs).toEqual([]);
    const bad = await app.request('/api/v1/jobs?limit=0');
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: 'invalid_filter' });
    const badStatus = await app.request('/api/v1/jobs?status=exploded');
    expect(badStatus.status).toBe(400);
  });

  it('fences a replica whose partition was claimed by another, and makes the claim wait for its open transaction', async () => {
    const { db, drop } = await driver.open();
    cleanups.push(drop);
    await migrate(db);
    const a = new PartitionOwnership(db, { consumerGroup: 'g', topic: 't', owner: 'a' });
    const b = new PartitionOwnership(db, { consumerGroup: 'g', topic: 't', owner: 'b' });
    const epochA = await a.claim(3);
    const epochB = await b.claim(3);
    expect(epochB).toBe(epochA + 1);
    await expect(db.transaction((tx) => a.assertOwner(tx, 3, epochA))).rejects.toBeInstanceOf(PartitionFencedError);
    await db.transaction((tx) => b.assertOwner(tx, 3, epochB));
    if (db.kind === 'pg') {
      // An in-flight transaction of the owner holds the row FOR SHARE: a new claim waits until it ends.
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let locked!: () => void;
      const lockTaken = new Promise<void>((resolve) => {
        locked = resolve;
      });
      const inFlight = db.transaction(async (tx) => {
        await b.assertOwner(tx, 3, epochB);
        locked();
        await held;
      });
      await lockTaken;
      let claimedAt = 0;
      const claim = a.claim(3).then((epoch) => {
        claimedAt = Date.now();
        return epoch;
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(claimedAt).toBe(0);
      const releasedAt = Date.now();
      release();
      await inFlight;
      expect(await claim).toBe(epochB + 1);
      expect(claimedAt).toBeGreaterThanOrEqual(releasedAt);
    }
    expect(await a.owners()).toEqual([
      { partition: 3, epoch: epochB + (db.kind === 'pg' ? 1 : 0), owner: db.kind === 'pg' ? 'a' : 'b' },
    ]);
  });
});
