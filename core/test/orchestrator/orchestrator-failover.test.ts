/**
 * Real Kafka (12 partitions), PostgreSQL and Redis; three orchestrator
 * PROCESSES (`pnpm polyvision orchestrator`); workers in this process running
 * the counting test stage, which records every execution in PostgreSQL.
 * "No stage ran twice" and "no job lost" are counted from the database.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/index.ts';
import { KafkaBus } from '../../src/bus/kafka/kafka-bus.ts';
import { PgDatabase } from '../../src/db/drivers/pg-database.ts';
import { databaseUrl, randomSchema } from './support/databases.ts';
import { ALL_STAGES, Harness, PANORAMA } from './support/harness.ts';
import {
  killProcess,
  type OrchestratorProcess,
  startOrchestratorProcess,
  terminateProcess,
} from './support/orchestrator-processes.ts';
import { type PrivatePostgres, startPrivatePostgres } from './support/private-postgres.ts';

const kafkaBrokers = process.env.KAFKA_BROKERS;
const redisUrl = process.env.REDIS_URL;

describe.skipIf(!kafkaBrokers || !databaseUrl)(
  'orchestrator processes on Kafka, PostgreSQL, Redis',
  { timeout: 240_000 },
  () => {
    let harness: Harness | undefined;
    let schema: string;
    let db: PgDatabase | undefined;
    let privatePg: PrivatePostgres | undefined;
    const processes: OrchestratorProcess[] = [];

    async function world(url = databaseUrl!) {
      schema = randomSchema();
      db = new PgDatabase({ connectionString: url, schema, maxConnections: 10 });
      harness = new Harness(new KafkaBus({ brokers: kafkaBrokers!.split(','), clientId: 'failover-test' }), db);
      await harness.setup();
      await harness.bus.ensureTopics([{ topic: `${harness.prefix}.jobs.commands`, partitions: 12 }]);
      return harness;
    }

    function env(h: Harness, extra: Record<string, string> = {}): Record<string, string> {
      return {
        KAFKA_BROKERS: kafkaBrokers!,
        DATABASE_URL: databaseUrl!,
        DATABASE_SCHEMA: schema,
        ...(redisUrl ? { REDIS_URL: redisUrl, REDIS_KEY_PREFIX: `${h.prefix}:` } : {}),
        POLYVISION_TOPIC_PREFIX: h.prefix,
        ORCHESTRATOR_SESSION_TIMEOUT_MS: '6000',
        ORCHESTRATOR_HEARTBEAT_INTERVAL_MS: '500',
        ORCHESTRATOR_RETRY_INITIAL_MS: '100',
        ORCHESTRATOR_RELAY_POLL_INTERVAL_MS: '100',
        ORCHESTRATOR_RECONCILE_CRON: '*/5 * * * * *',
        ...extra,
      };
    }

    async function start(h: Harness, extra: Record<string, string> = {}) {
      const p = await startOrchestratorProcess(env(h, extra));
      processes.push(p);
      return p;
    }

    /** owner → partitions, from `partition_owners` (the fencing table). */
    async function owners(h: Harness): Promise<Map<string, number[]>> {
      const rows = await h.db.query<{ owner: string; partition: number }>(
        `SELECT owner, partition FROM partition_owners WHERE consumer_group = $1 ORDER BY partition`,
        [`${h.prefix}-orchestrator`],
      );
      const map = new Map<string, number[]>();
      for (const row of rows.rows) map.set(row.owner, [...(map.get(row.owner) ?? []), row.partition]);
      return map;
    }

    async function spreadOver(h: Harness, instances: string[], timeoutMs = 60_000) {
      await waitFor(
        async () => {
          const map = await owners(h);
          const counts = instances.map((i) => map.get(i)?.length ?? 0);
          return counts.reduce((a, b) => a + b, 0) === 12 && counts.every((n) => n === 12 / instances.length);
        },
        { timeoutMs, intervalMs: 200, message: `12 partitions spread over ${instances.length} replicas` },
      );
    }

    async function expectAllOnce(h: Harness, ids: string[]) {
      const jobs = await h.db.query<{ n: string }>(`SELECT count(*) AS n FROM jobs WHERE job_id = ANY($1::text[])`, [
        ids,
      ]);
      expect(Number(jobs.rows[0]!.n)).toBe(ids.length); // no job lost
      const executions = await h.executions(ids);
      expect(executions.size).toBe(ids.length * ALL_STAGES.length);
      expect([...executions.entries()].filter(([, n]) => n !== 1)).toEqual([]); // no stage ran twice
    }

    afterEach(async () => {
      for (const p of processes.splice(0)) {
        p.child.kill('SIGKILL');
        await p.exited;
      }
      await harness?.close();
      harness = undefined;
      if (db) {
        await db.exec(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
        await db.close();
        db = undefined;
      }
      await privatePg?.stop();
      privatePg = undefined;
    });

    it('spreads partitions over 3 processes; kill -9 of one under load loses no job and runs no stage twice', async () => {
      const h = await world();
      const replicas = [await start(h), await start(h), await start(h)];
      await spreadOver(
        h,
        replicas.map((r) => r.instance),
      );
      await h.startWorker({ sleepMs: 30 });
      const ids = await h.submit(40);
      await waitFor(async () => (await h.executions(ids)).size >= 40, { timeoutMs: 60_000, message: 'load running' });
      const victim = replicas[1]!;
      const victimPartitions = (await owners(h)).get(victim.instance) ?? [];
      expect(victimPartitions).toHaveLength(4);
      await killProcess(victim);
      await h.waitForStatus(ids, 'completed', 120_000);
      await expectAllOnce(h, ids);
      const after = await owners(h);
      expect(after.has(victim.instance)).toBe(false);
      expect([...after.values()].flat().sort((a, b) => a - b)).toEqual([...Array(12).keys()]);
    });

    it('a SIGTERM rolling restart of all three loses nothing and repeats nothing', async () => {
      const h = await world();
      let replicas = [await start(h), await start(h), await start(h)];
      await spreadOver(
        h,
        replicas.map((r) => r.instance),
      );
      await h.startWorker({ sleepMs: 30 });
      const ids = await h.submit(40);
      await waitFor(async () => (await h.executions(ids)).size >= 20, { timeoutMs: 60_000, message: 'load running' });
      for (let i = 0; i < 3; i++) {
        const old = replicas[i]!;
        expect(await terminateProcess(old)).toBe(0);
        processes.splice(processes.indexOf(old), 1);
        const fresh = await start(h);
        replicas = replicas.map((r) => (r === old ? fresh : r));
        await spreadOver(
          h,
          replicas.map((r) => r.instance),
        );
      }
      await h.waitForStatus(ids, 'completed', 120_000);
      await expectAllOnce(h, ids);
    });

    it('survives a PostgreSQL restart mid-run (private cluster)', async () => {
      privatePg = await startPrivatePostgres();
      const h = await world(privatePg.url);
      const replicas = [
        await start(h, { DATABASE_URL: privatePg.url }),
        await start(h, { DATABASE_URL: privatePg.url }),
      ];
      await spreadOver(
        h,
        replicas.map((r) => r.instance),
      );
      await h.startWorker({ sleepMs: 30 });
      const ids = await h.submit(30);
      await waitFor(async () => (await h.executions(ids)).size >= 20, { timeoutMs: 60_000, message: 'load running' });
      await privatePg.restart();
      try {
        await h.waitForStatus(ids, 'completed', 120_000);
      } finally {
        for (const r of replicas) {
          if (r.child.exitCode !== null)
            process.stderr.write(`replica exited ${r.child.exitCode}: ${r.stderrTail()}\n`);
        }
      }
      expect(replicas.every((r) => r.child.exitCode === null && r.child.signalCode === null)).toBe(true);
      await expectAllOnce(h, ids);
    });

    it('with Redis unreachable, the database still refuses duplicate submissions', async () => {
      const h = await world();
      const replicas = [
        await start(h, { REDIS_URL: 'redis://127.0.0.1:1' }),
        await start(h, { REDIS_URL: 'redis://127.0.0.1:1' }),
      ];
      await spreadOver(
        h,
        replicas.map((r) => r.instance),
      );
      await h.startWorker({ sleepMs: 10 });
      const ids: string[] = [];
      for (let i = 0; i < 10; i++) {
        const job = { job_id: randomUUID(), organization_id: 'acme', match_id: `m-${i}`, inputs: [PANORAMA] };
        await h.client.submit(job);
        await h.client.submit(job); // a duplicate submission (new message id)
        ids.push(job.job_id);
      }
      await h.waitForStatus(ids, 'completed', 60_000);
      await expectAllOnce(h, ids);
      const duplicates = await h.db.query<{ n: string }>(
        `SELECT count(*) AS n FROM processed_messages WHERE type = 'job.submit' AND job_id = ANY($1::text[])`,
        [ids],
      );
      expect(Number(duplicates.rows[0]!.n)).toBe(20); // both messages handled, one job each
    });
  },
);
