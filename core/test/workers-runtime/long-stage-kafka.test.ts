import { afterEach, describe, expect, it } from 'vitest';
import { createTestKafka, type TestKafka, waitFor } from '../../../test/support/index.ts';
import { createMessageBus } from '../../src/bus/create-bus.ts';
import { testDatabaseDrivers } from '../orchestrator/support/databases.ts';
import { Harness } from '../orchestrator/support/harness.ts';

const kafkaBrokers = process.env.KAFKA_BROKERS;
const pg = testDatabaseDrivers.find((d) => d.name === 'pg')!;

/** The worker group's session timeout in the harness (WORKER_SESSION_TIMEOUT_MS shortened; the broker's minimum is 6 s). */
const SESSION_TIMEOUT_MS = 6_000;
/** A stage four session timeouts long: without heartbeats (the client's background ones, KAFKA_CLIENT's default) the worker would be evicted. */
const STAGE_MS = 4 * SESSION_TIMEOUT_MS;

describe.skipIf(!kafkaBrokers || pg.skip)('a long stage on the real broker', () => {
  let harness: Harness | undefined;
  let kafka: TestKafka | undefined;
  let drop: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await harness?.close();
    await kafka?.close();
    await drop?.();
  });

  it('keeps its worker in the group for a stage longer than the session timeout (the default Kafka client)', async () => {
    const opened = await pg.open();
    drop = opened.drop;
    harness = new Harness(createMessageBus(kafkaBrokers, 'long-stage-test'), opened.db);
    const h = harness;
    await h.setup();
    kafka = await createTestKafka();
    await h.startOrchestrator();
    await h.startWorker({ sleepMs: STAGE_MS }, ['detect']);
    const [jobId] = await h.submit(1, ['detect']);
    await waitFor(async () => (await h.executions([jobId!])).size === 1, { timeoutMs: 60_000 });
    const group = `${h.prefix}-worker-detect`;
    const membersOf = async () => {
      const { groups } = await kafka!.admin.describeGroups([group]);
      return { state: groups[0]?.state, members: (groups[0]?.members ?? []).map((m) => m.memberId) };
    };
    const before = await membersOf();
    expect(before.members).toHaveLength(1);
    await h.waitForStatus([jobId!], 'completed', STAGE_MS + 60_000);
    const after = await membersOf();
    // The same member throughout: never evicted, never re-joined, the task never handed again.
    expect(after).toEqual({ state: 'Stable', members: before.members });
    expect((await h.executions([jobId!])).get(`${jobId}:detect`)).toBe(1);
    const stage = await h.db.query<{ attempt: number; started_at: Date; finished_at: Date }>(
      `SELECT attempt, started_at, finished_at FROM job_stages WHERE job_id = $1`,
      [jobId],
    );
    expect(stage.rows[0]!.attempt).toBe(1);
    expect(stage.rows[0]!.finished_at.getTime() - stage.rows[0]!.started_at.getTime()).toBeGreaterThanOrEqual(
      STAGE_MS - 1_000,
    );
  });
});
