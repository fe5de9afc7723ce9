import { randomUUID } from 'node:crypto';
import { jobKey } from '@polyvision/shared';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/index.ts';
import { KafkaBus } from '../../src/bus/kafka/kafka-bus.ts';
import { MemoryBus } from '../../src/bus/memory/memory-bus.ts';
import type { MessageBus } from '../../src/bus/message-bus.ts';
import { testDatabaseDrivers } from './support/databases.ts';
import { ALL_STAGES, Harness, PANORAMA } from './support/harness.ts';

const kafkaBrokers = process.env.KAFKA_BROKERS;
const worlds = [
  ...testDatabaseDrivers.map((driver) => ({ bus: 'memory' as const, driver, skip: driver.skip })),
  {
    bus: 'kafka' as const,
    driver: testDatabaseDrivers.find((d) => d.name === 'pg')!,
    skip: !kafkaBrokers || testDatabaseDrivers.find((d) => d.name === 'pg')!.skip,
  },
];

for (const { bus: busKind, driver, skip } of worlds) {
  // PGlite (WASM, in-process) on a loaded 2-core host needs more than the default 60 s per test.
  describe.skipIf(skip)(`orchestrator on the ${busKind} bus, ${driver.name}`, { timeout: 180_000 }, () => {
    let harness: Harness;
    let drop: () => Promise<void>;
    let bus: MessageBus;

    async function world() {
      bus =
        busKind === 'memory'
          ? new MemoryBus({ defaultPartitions: 4 })
          : new KafkaBus({ brokers: kafkaBrokers!.split(','), clientId: 'orchestrator-test' });
      const opened = await driver.open();
      drop = opened.drop;
      harness = new Harness(bus, opened.db);
      await harness.setup();
      return harness;
    }

    afterEach(async () => {
      await harness?.close();
      await drop?.();
    });

    it('runs jobs through [stitch →] detect → track → (vcam ∥ analyze) → encode, each stage once', async () => {
      const h = await world();
      const events = await h.collect(`${h.prefix}.jobs.events`);
      await h.startOrchestrator();
      await h.startWorker({}, ['stitch', ...ALL_STAGES]);
      const ids = await h.submit(6);
      await h.waitForStatus(ids, 'completed');
      const executions = await h.executions(ids);
      expect(executions.size).toBe(ids.length * ALL_STAGES.length);
      expect([...executions.values()].every((n) => n === 1)).toBe(true);
      const order = await h.db.query<{ stage: string }>(
        `SELECT stage FROM test_stage_executions WHERE job_id = $1 ORDER BY id`,
        [ids[0]],
      );
      const stages = order.rows.map((r) => r.stage);
      expect(stages[0]).toBe('detect');
      expect(stages[1]).toBe('track');
      expect(new Set(stages.slice(2, 4))).toEqual(new Set(['vcam', 'analyze']));
      expect(stages[4]).toBe('encode');
      // Optional Stitch first, for edges that upload raw cameras.
      const [stitched] = await h.submit(1, ['stitch', 'detect', 'track']);
      await h.waitForStatus([stitched!], 'completed');
      const stitchOrder = await h.db.query<{ stage: string }>(
        `SELECT stage FROM test_stage_executions WHERE job_id = $1 ORDER BY id`,
        [stitched],
      );
      expect(stitchOrder.rows.map((r) => r.stage)).toEqual(['stitch', 'detect', 'track']);
      const job = await h.db.query<{ progress: number }>(`SELECT progress FROM jobs WHERE job_id = $1`, [ids[0]]);
      expect(job.rows[0]!.progress).toBe(1);
      await waitFor(
        () => events.map((r) => JSON.parse(r.value)).some((e) => e.job_id === ids[0] && e.status === 'completed'),
        { timeoutMs: 30_000 },
      );
    });

    it.skipIf(busKind === 'kafka')(
      'spreads 12 partitions over 3 replicas; a crashed replica loses nothing and nothing runs twice',
      async () => {
        const h = await world();
        await h.bus.deleteTopics([`${h.prefix}.jobs.commands`]);
        await h.bus.ensureTopics([{ topic: `${h.prefix}.jobs.commands`, partitions: 12 }]);
        const replicas = [await h.startOrchestrator(), await h.startOrchestrator(), await h.startOrchestrator()];
        await waitFor(() => replicas.every((r) => r.ownedPartitions().length === 4));
        const all = replicas.flatMap((r) => r.ownedPartitions()).sort((a, b) => a - b);
        expect(all).toEqual([...Array(12).keys()]);
        await h.startWorker({ sleepMs: 40 });
        const ids = await h.submit(30);
        await waitFor(async () => (await h.executions(ids)).size > 20, { timeoutMs: 60_000 }); // PGlite on a busy host is slow
        // kill -9 of one replica: its consumer vanishes without committing; its handlers become zombies.
        const victim = replicas[1]!;
        await victim.crashForTest();
        await h.waitForStatus(ids, 'completed', 60_000);
        const executions = await h.executions(ids);
        expect(executions.size).toBe(ids.length * ALL_STAGES.length);
        expect([...executions.entries()].filter(([, n]) => n !== 1)).toEqual([]);
      },
    );

    it('applies duplicated and stale reports once, and dead-letters poison without blocking the partition', async () => {
      const h = await world();
      const dlqRecords = await h.collect(`${h.prefix}.dlq`);
      const orchestrator = await h.startOrchestrator();
      const outcomes: string[] = [];
      orchestrator.observe((_record, outcome) => outcomes.push(outcome));
      const jobId = randomUUID();
      const job = { job_id: jobId, organization_id: 'acme', match_id: 'm-1' };
      await h.client.submit({ ...job, inputs: [PANORAMA], stages: ['detect'] });
      await h.client.submit({ ...job, inputs: [PANORAMA], stages: ['detect'] }); // same job, new message id
      const producer = h.bus.createProducer();
      const key = jobKey('acme', 'm-1');
      await producer.send(`${h.prefix}.jobs.commands`, [
        { key, value: 'not json' },
        { key, value: JSON.stringify({ type: 'job.explode', job_id: jobId }) },
        { key: 'wrong:key', value: JSON.stringify({ ...baseReport(job, 1), type: 'stage.progress', progress: 0.5 }) },
      ]);
      await waitFor(() => outcomes.filter((o) => o === 'dead_lettered').length === 3, { timeoutMs: 30_000 });
      const completed = {
        ...baseReport(job, 1),
        type: 'stage.completed',
        model_version: 'default',
        outputs: [],
        duration_ms: 5,
      };
      const stale = {
        ...baseReport(job, 7),
        type: 'stage.completed',
        model_version: 'default',
        outputs: [],
        duration_ms: 5,
      };
      await h.client.send(stale);
      await h.client.send(completed);
      await h.client.send(completed); // the same report again (same message_id)
      await h.client.send({ ...completed, message_id: randomUUID() }); // re-sent with a new id: stage no longer active
      await h.waitForStatus([jobId], 'completed');
      await waitFor(() => outcomes.length === 9, { timeoutMs: 30_000 });
      expect(outcomes.slice(0, 2)).toEqual(['applied', 'duplicate']);
      expect(outcomes.slice(5)).toEqual(['stale', 'applied', 'duplicate', 'stale']);
      await waitFor(() => dlqRecords.length === 3, { timeoutMs: 30_000 });
      const dlq = dlqRecords.map((r) => JSON.parse(r.value));
      expect(dlq).toHaveLength(3);
      expect(dlq.every((letter) => letter.error.code === 'schema_mismatch' && letter.consumer_group)).toBe(true);
      await producer.close();
    });

    it('retries retriable failures with backoff, fails the job after max attempts with its reason', async () => {
      const h = await world();
      await h.startOrchestrator({ maxAttempts: { detect: 3, track: 2, vcam: 3, analyze: 3, encode: 3, stitch: 3 } });
      const [flaky, broken, hopeless] = [randomUUID(), randomUUID(), randomUUID()];
      await h.startWorker({
        failFirstAttempts: (jobId, stage) =>
          jobId === flaky && stage === 'detect' ? 2 : jobId === hopeless && stage === 'track' ? 5 : 0,
        failPermanently: (jobId, stage) => jobId === broken && stage === 'detect',
      });
      for (const id of [flaky, broken, hopeless]) {
        await h.client.submit({ job_id: id, organization_id: 'acme', match_id: id, inputs: [PANORAMA] });
      }
      await h.waitForStatus([flaky], 'completed');
      await h.waitForStatus([broken, hopeless], 'failed');
      const detect = await h.db.query<{ attempt: number; dispatched_at: Date }>(
        `SELECT attempt FROM job_stages WHERE job_id = $1 AND stage = 'detect'`,
        [flaky],
      );
      expect(detect.rows[0]!.attempt).toBe(3);
      const jobs = await h.db.query<{ job_id: string; error: { code: string; stage: string } }>(
        `SELECT job_id, error FROM jobs WHERE job_id = ANY($1::text[])`,
        [[broken, hopeless]],
      );
      const errors = new Map(jobs.rows.map((r) => [r.job_id, r.error]));
      expect(errors.get(broken)).toMatchObject({ code: 'test_permanent_failure', stage: 'detect' });
      expect(errors.get(hopeless)).toMatchObject({ code: 'test_transient_failure', stage: 'track' });
      const executions = await h.executions([broken, hopeless]);
      expect(executions.get(`${broken}:detect`)).toBe(1);
      expect(executions.get(`${hopeless}:track`)).toBe(2);
      const times = await h.db.query<{ started_at: Date }>(
        `SELECT started_at FROM test_stage_executions WHERE job_id = $1 AND stage = 'detect' ORDER BY id`,
        [flaky],
      );
      const gaps = times.rows.slice(1).map((r, i) => r.started_at.getTime() - times.rows[i]!.started_at.getTime());
      expect(gaps[0]).toBeGreaterThanOrEqual(40); // 50 ms, then 100 ms (×2)
      expect(gaps[1]).toBeGreaterThanOrEqual(90);
    });

    it('cancels a running job (workers abort) and reprocesses a finished one from a stage with a new model version', async () => {
      const h = await world();
      await h.startOrchestrator();
      // A stage that would sleep for an hour: its claim can only go away because the worker aborted it.
      await h.startWorker({ sleepMs: 3_600_000 });
      const [slow] = await h.submit(1);
      await waitFor(async () => (await h.executions([slow!])).size === 1, { timeoutMs: 30_000 });
      const ref = await h.db.query<{ organization_id: string; match_id: string }>(
        `SELECT organization_id, match_id FROM jobs WHERE job_id = $1`,
        [slow],
      );
      const job = { job_id: slow!, ...ref.rows[0]! };
      await h.client.cancel(job, 'test');
      await h.waitForStatus([slow!], 'cancelled');
      const stages = await h.db.query<{ status: string }>(`SELECT status FROM job_stages WHERE job_id = $1`, [slow]);
      expect(stages.rows.every((s) => s.status === 'cancelled')).toBe(true);
      // The worker was told (jobs.events) and aborted: its claim is released (deleted; a finished
      // stage would leave a 'completed' row, and the hour-long sleep cannot finish).
      await waitFor(
        async () => {
          const claims = await h.db.query(`SELECT 1 FROM stage_claims WHERE job_id = $1`, [slow]);
          return claims.rowCount === 0;
        },
        { timeoutMs: 30_000, message: 'the aborted stage released its claim' },
      );

      await h.workers[0]!.close();
      h.workers.length = 0;
      await h.startWorker({ sleepMs: 10 });
      const [done] = await h.submit(1);
      await h.waitForStatus([done!], 'completed');
      const doneRef = await h.db.query<{ organization_id: string; match_id: string }>(
        `SELECT organization_id, match_id FROM jobs WHERE job_id = $1`,
        [done],
      );
      await h.client.reprocess({ job_id: done!, ...doneRef.rows[0]! }, 'vcam', { vcam: 'v2', encode: 'v2' });
      await waitFor(async () => (await h.executions([done!])).get(`${done}:vcam`) === 2, { timeoutMs: 30_000 });
      await h.waitForStatus([done!], 'completed');
      const executions = await h.executions([done!]);
      expect(executions.get(`${done}:detect`)).toBe(1);
      expect(executions.get(`${done}:track`)).toBe(1);
      expect(executions.get(`${done}:analyze`)).toBe(1);
      expect(executions.get(`${done}:vcam`)).toBe(2);
      expect(executions.get(`${done}:encode`)).toBe(2);
      const versions = await h.db.query<{ stage: string; model_version: string }>(
        `SELECT DISTINCT stage, model_version FROM test_stage_executions WHERE job_id = $1 AND stage IN ('vcam', 'encode') AND model_version = 'v2'`,
        [done],
      );
      expect(versions.rowCount).toBe(2);
    });

    it('reprocesses a failed and a cancelled job on the very worker that saw them stop', async () => {
      const h = await world();
      await h.startOrchestrator({ waitRetry: { initialMs: 200, coefficient: 1, maxMs: 200 } });
      const [failing, waiting] = [randomUUID(), randomUUID()];
      let broken = true;
      await h.startWorker({
        sleepMs: 10,
        failPermanently: (jobId, stage) => broken && jobId === failing && stage === 'detect',
        failWith: (jobId) => (broken && jobId === waiting ? { code: 'input_unavailable', retriable: true } : null),
      });
      expect(h.workers).toHaveLength(1);
      for (const id of [failing, waiting]) {
        await h.client.submit({
          job_id: id,
          organization_id: 'acme',
          match_id: id,
          inputs: [PANORAMA],
          stages: ['detect', 'track'],
        });
      }
      await h.waitForStatus([failing], 'failed');
      // The other job waits on its input; cancelled meanwhile (the worker sees the event).
      await waitFor(async () => ((await h.executions([waiting])).get(`${waiting}:detect`) ?? 0) >= 2, {
        timeoutMs: 30_000,
      });
      await h.client.cancel({ job_id: waiting, organization_id: 'acme', match_id: waiting }, 'test');
      await h.waitForStatus([waiting], 'cancelled');
      broken = false;
      for (const id of [failing, waiting]) {
        await h.client.reprocess({ job_id: id, organization_id: 'acme', match_id: id }, 'detect', {});
      }
      await h.waitForStatus([failing, waiting], 'completed');
      const runs = await h.executions([failing, waiting]);
      expect(runs.get(`${failing}:detect`)).toBe(2);
      expect(runs.get(`${failing}:track`)).toBe(1);
      expect(runs.get(`${waiting}:track`)).toBe(1);
    });

    it('refuses duplicates through the database when Redis is down', async () => {
      const h = await world();
      h.idempotency.down = true;
      const orchestrator = await h.startOrchestrator();
      const outcomes: string[] = [];
      orchestrator.observe((_r, outcome) => outcomes.push(outcome));
      await h.startWorker();
      const jobId = randomUUID();
      for (let i = 0; i < 3; i++) {
        await h.client.submit({ job_id: jobId, organization_id: 'acme', match_id: 'redis-down', inputs: [PANORAMA] });
      }
      await h.waitForStatus([jobId], 'completed');
      expect(outcomes.filter((o) => o === 'duplicate').length).toBeGreaterThanOrEqual(2);
      const executions = await h.executions([jobId]);
      expect([...executions.values()]).toEqual([1, 1, 1, 1, 1]);
    });
  });
}

function baseReport(job: { job_id: string; organization_id: string; match_id: string }, attempt: number) {
  return {
    message_id: randomUUID(),
    ...job,
    created_at: new Date().toISOString(),
    stage: 'detect',
    attempt,
    worker_id: 'test',
  };
}
