import { randomUUID } from 'node:crypto';
import { MemoryTtlStore, stageTaskSchema } from '@polyvision/shared';
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
import { PgStageClaimStore } from '../../src/workers/runtime/stage-claims.ts';
import { testDatabaseDrivers } from './support/databases.ts';
import { Harness, PANORAMA } from './support/harness.ts';

/** An operator token for the jobs API (every route needs one). */
const API_TOKEN = 'operator-token-for-tests-0123456789';
const AUTHORIZED = { headers: { authorization: `Bearer ${API_TOKEN}` } };

const driver = testDatabaseDrivers.find((d) => !d.skip)!;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function stageRow(h: Harness, jobId: string, stage: string) {
  const r = await h.db.query<{ status: string; attempt: number; task_message_id: string; model_version: string }>(
    `SELECT status, attempt, task_message_id::text AS task_message_id, model_version FROM job_stages WHERE job_id = $1 AND stage = $2`,
    [jobId, stage],
  );
  return r.rows[0] ?? null;
}

function reconcilerOf(h: Harness): Reconciler {
  const producer = h.bus.createProducer();
  cleanups.push(() => producer.close());
  return new Reconciler({ db: h.db, client: new JobCommandClient(producer, h.prefix) });
}

async function world() {
  const { db, drop } = await driver.open();
  const h = new Harness(new MemoryBus({ defaultPartitions: 4 }), db);
  cleanups.push(drop, () => h.close());
  await h.setup();
  return h;
}

describe(`reconciler, jobs API and fencing (${driver.name})`, () => {
  it('never fails a backlog: a task queued longer than start-to-close shows as queued and then runs as attempt 1', async () => {
    const h = await world();
    const short = { stitch: 300, detect: 300, track: 300, vcam: 300, analyze: 300, encode: 300 };
    await h.startOrchestrator({ startToCloseMs: short });
    const jobId = await h.client.submit({
      organization_id: 'acme',
      match_id: 'backlog',
      inputs: [PANORAMA],
      stages: ['detect'],
    });
    await waitFor(async () => (await stageRow(h, jobId, 'detect'))?.status === 'dispatched');
    // No worker: the task waits in its topic well past the start-to-close of the stage.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const reconciler = reconcilerOf(h);
    expect((await reconciler.reconcile()).overdueStages).toBe(0);
    const api = jobRoutes(h.db, { operatorTokens: [API_TOKEN] });
    const view = (await (await api.request(`/api/v1/jobs/${jobId}`, AUTHORIZED)).json()) as {
      phase: string;
      stages: Array<{ phase: string; queued_ms: number }>;
    };
    expect(view.phase).toBe('queued');
    expect(view.stages[0]!.phase).toBe('queued');
    expect(view.stages[0]!.queued_ms).toBeGreaterThanOrEqual(1_000);
    await h.startWorker({ sleepMs: 10 });
    await h.waitForStatus([jobId], 'completed');
    expect((await stageRow(h, jobId, 'detect'))!.attempt).toBe(1);
  });

  it('takes the task from a worker silent for its claim lease: heartbeat_timeout, and the re-run is attempt 2 with its own claim', async () => {
    const h = await world();
    await h.startOrchestrator();
    const jobId = await h.client.submit({
      organization_id: 'acme',
      match_id: 'silent',
      inputs: [PANORAMA],
      stages: ['detect'],
    });
    const row = await waitFor(async () => {
      const r = await stageRow(h, jobId, 'detect');
      return r?.status === 'dispatched' ? r : null;
    });
    // A worker claimed attempt 1 and died: nobody renews its 500 ms lease.
    const claims = new PgStageClaimStore(h.db);
    const attempt1 = stageTaskSchema.parse({
      type: 'stage.task',
      message_id: row.task_message_id,
      job_id: jobId,
      organization_id: 'acme',
      match_id: 'silent',
      created_at: new Date().toISOString(),
      stage: 'detect',
      attempt: 1,
      model_version: row.model_version,
      inputs: [PANORAMA],
      params: {},
    });
    expect((await claims.claim(attempt1, 'dead-worker', 500)).state).toBe('claimed');
    const reconciler = reconcilerOf(h);
    const report = await waitFor(
      async () => {
        const r = await reconciler.reconcile();
        return r.overdueStages > 0 ? r : null;
      },
      { timeoutMs: 10_000, intervalMs: 200 },
    );
    expect(report.overdueByCode).toEqual({ heartbeat_timeout: 1 });
    await h.startWorker({ sleepMs: 10 });
    await h.waitForStatus([jobId], 'completed');
    const history = await h.db.query<{ attempt: number; status: string; owner: string }>(
      `SELECT attempt, status, owner FROM stage_claims WHERE job_id = $1 ORDER BY attempt`,
      [jobId],
    );
    expect(history.rows.map((r) => [r.attempt, r.status, r.owner === 'dead-worker'])).toEqual([
      [1, 'lost', true],
      [2, 'completed', false],
    ]);
    expect(await claims.renew(attempt1, 'dead-worker', 500)).toBe(false);
  });

  it('flags a running stage whose worker heartbeats but reports no progress for longer than allowed', async () => {
    const h = await world();
    await h.startOrchestrator();
    await h.startWorker({ sleepMs: 60_000 });
    const jobId = await h.client.submit({
      organization_id: 'acme',
      match_id: 'stalled',
      inputs: [PANORAMA],
      stages: ['detect'],
    });
    await waitFor(async () => (await stageRow(h, jobId, 'detect'))?.status === 'running');
    const producer = h.bus.createProducer();
    cleanups.push(() => producer.close());
    const reconciler = new Reconciler({
      db: h.db,
      client: new JobCommandClient(producer, h.prefix),
      stallAfterMs: 300,
    });
    const report = await waitFor(
      async () => {
        const r = await reconciler.reconcile();
        return r.stalledStages.length > 0 ? r : null;
      },
      { timeoutMs: 20_000, intervalMs: 200 },
    );
    expect(report.stalledStages[0]).toMatchObject({ job_id: jobId, stage: 'detect', attempt: 1 });
    expect(report.stalledStages[0]!.silentMs).toBeGreaterThanOrEqual(300);
    expect(report.overdueStages).toBe(0); // its claim is alive: flagged, not failed
  });

  it('retries input_unavailable with backoff beyond max attempts while the retry window lasts, and says what the stage waits for', async () => {
    const h = await world();
    await h.startOrchestrator({
      maxAttempts: { stitch: 2, detect: 2, track: 2, vcam: 2, analyze: 2, encode: 2 },
      waitRetry: { initialMs: 300, coefficient: 2, maxMs: 1_500 },
      retryWindowMs: 600_000,
    });
    let storageUp = false;
    await h.startWorker({
      sleepMs: 10,
      failWith: () => (storageUp ? null : { code: 'input_unavailable', retriable: true }),
    });
    const jobId = await h.client.submit({
      organization_id: 'acme',
      match_id: 'se-down',
      inputs: [PANORAMA],
      stages: ['detect'],
    });
    const api = jobRoutes(h.db, { retryWindowMs: 600_000, operatorTokens: [API_TOKEN] });
    const waiting = await waitFor(
      async () => {
        const view = (await (await api.request(`/api/v1/jobs/${jobId}`, AUTHORIZED)).json()) as {
          phase: string;
          stages: Array<{
            attempt: number;
            phase: string;
            waiting_for: { code: string; retry_at: string; retry_until: string } | null;
          }>;
        };
        return view.stages[0]!.attempt >= 4 && view.phase === 'waiting' ? view : null;
      },
      { timeoutMs: 30_000, intervalMs: 50 },
    );
    expect(waiting.stages[0]!.waiting_for).toMatchObject({ code: 'input_unavailable' });
    expect(Date.parse(waiting.stages[0]!.waiting_for!.retry_until)).toBeGreaterThan(Date.now() + 500_000);
    expect((await h.jobStatuses([jobId])).get(jobId)).toBe('running');
    storageUp = true;
    await h.waitForStatus([jobId], 'completed');
    const runs = await h.executions([jobId]);
    expect(runs.get(`${jobId}:detect`)).toBeGreaterThan(2);
    const times = await h.db.query<{ started_at: Date }>(
      `SELECT started_at FROM test_stage_executions WHERE job_id = $1 ORDER BY id`,
      [jobId],
    );
    const gaps = times.rows.slice(1).map((r, i) => r.started_at.getTime() - times.rows[i]!.started_at.getTime());
    expect(gaps[0]).toBeGreaterThanOrEqual(290); // 300 ms, then 600 ms (×2), capped at 1.5 s
    expect(gaps[1]).toBeGreaterThanOrEqual(590);
  });

  it('fails a stage whose input stays unavailable past the retry window, after its counted attempts', async () => {
    const h = await world();
    await h.startOrchestrator({
      maxAttempts: { stitch: 2, detect: 2, track: 2, vcam: 2, analyze: 2, encode: 2 },
      retryWindowMs: 0,
    });
    await h.startWorker({ sleepMs: 10, failWith: () => ({ code: 'input_unavailable', retriable: true }) });
    const jobId = await h.client.submit({
      organization_id: 'acme',
      match_id: 'se-gone',
      inputs: [PANORAMA],
      stages: ['detect'],
    });
    await h.waitForStatus([jobId], 'failed');
    expect((await h.executions([jobId])).get(`${jobId}:detect`)).toBe(2);
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
