/**
 * Shared set-up of the orchestrator benchmarks: real services (started like
 * `pnpm polyvision services up` when their URLs are not set), a fresh schema
 * and topic prefix, orchestrator PROCESSES, an in-process worker running the
 * counting test stage. Reuses the orchestrator test helpers.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { createMessageBus, type KafkaClientName } from '../../core/src/bus/create-bus.ts';
import { PgDatabase } from '../../core/src/db/drivers/pg-database.ts';
import { randomSchema } from '../../core/test/orchestrator/support/databases.ts';
import { Harness } from '../../core/test/orchestrator/support/harness.ts';
import {
  type OrchestratorProcess,
  startOrchestratorProcess,
} from '../../core/test/orchestrator/support/orchestrator-processes.ts';
import { servicesUp } from '../../deploy/src/services/index.ts';
import { waitFor } from '../../test/support/index.ts';

export interface BenchWorld {
  harness: Harness;
  schema: string;
  replicas: OrchestratorProcess[];
  startReplica(): Promise<OrchestratorProcess>;
  owners(): Promise<Map<string, number[]>>;
  spreadOver(instances: string[], timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function serviceEnv(): Promise<{ kafka: string; db: string; redis: string }> {
  if (!process.env.KAFKA_BROKERS || !process.env.DATABASE_URL || !process.env.REDIS_URL) {
    const up = await servicesUp({ onProgress: (line) => process.stderr.write(`[services] ${line}\n`) });
    for (const [k, v] of Object.entries(up.env)) process.env[k] ??= v;
  }
  return { kafka: process.env.KAFKA_BROKERS!, db: process.env.DATABASE_URL!, redis: process.env.REDIS_URL! };
}

export async function benchWorld(options: {
  sessionTimeoutMs: number;
  /** @defaultValue max(100, session / 10) */
  heartbeatIntervalMs?: number;
  /** Kafka client of the orchestrator processes and the harness (`KAFKA_CLIENT`). @defaultValue the environment's, else platformatic */
  client?: KafkaClientName;
  extraEnv?: Record<string, string>;
}): Promise<BenchWorld> {
  const urls = await serviceEnv();
  const schema = randomSchema('bench');
  const db = new PgDatabase({ connectionString: urls.db, schema, maxConnections: 20 });
  const client = options.client ?? process.env.KAFKA_CLIENT ?? 'platformatic';
  const harness = new Harness(createMessageBus(urls.kafka, 'orchestrator-bench', client), db);
  await harness.setup();
  await harness.bus.ensureTopics([{ topic: `${harness.prefix}.jobs.commands`, partitions: 12 }]);
  const replicas: OrchestratorProcess[] = [];
  const owners = async () => {
    const rows = await db.query<{ owner: string; partition: number }>(
      `SELECT owner, partition FROM partition_owners WHERE consumer_group = $1 ORDER BY partition`,
      [`${harness.prefix}-orchestrator`],
    );
    const map = new Map<string, number[]>();
    for (const row of rows.rows) map.set(row.owner, [...(map.get(row.owner) ?? []), row.partition]);
    return map;
  };
  return {
    harness,
    schema,
    replicas,
    owners,
    async startReplica() {
      const replica = await startOrchestratorProcess({
        KAFKA_BROKERS: urls.kafka,
        DATABASE_URL: urls.db,
        DATABASE_SCHEMA: schema,
        REDIS_URL: urls.redis,
        REDIS_KEY_PREFIX: `${harness.prefix}:`,
        POLYVISION_TOPIC_PREFIX: harness.prefix,
        ORCHESTRATOR_SESSION_TIMEOUT_MS: String(options.sessionTimeoutMs),
        ORCHESTRATOR_HEARTBEAT_INTERVAL_MS: String(
          options.heartbeatIntervalMs ?? Math.max(100, Math.floor(options.sessionTimeoutMs / 10)),
        ),
        KAFKA_CLIENT: client,
        ORCHESTRATOR_RELAY_POLL_INTERVAL_MS: '100',
        LOG_LEVEL: 'error',
        ...options.extraEnv,
      });
      replicas.push(replica);
      return replica;
    },
    async spreadOver(instances: string[], timeoutMs = 120_000) {
      await waitFor(
        async () => {
          const map = await owners();
          const counts = instances.map((i) => map.get(i)?.length ?? 0);
          return counts.reduce((a, b) => a + b, 0) === 12 && Math.max(...counts) - Math.min(...counts) <= 1;
        },
        { timeoutMs, intervalMs: 100, message: `partitions spread over ${instances.length}` },
      );
    },
    async close() {
      for (const replica of replicas) {
        replica.child.kill('SIGKILL');
        await replica.exited;
      }
      await harness.close();
      await db.exec(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
      await db.close();
    },
  };
}

/** min / median / max / p99 of a list (milliseconds). */
export function summarize(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
  return {
    n: sorted.length,
    min: sorted[0] ?? Number.NaN,
    p50: at(0.5),
    p99: at(0.99),
    max: sorted[sorted.length - 1] ?? Number.NaN,
  };
}

export async function writeResult(name: string, result: unknown): Promise<void> {
  const dir = new URL('../results/', import.meta.url);
  await mkdir(dir, { recursive: true });
  await writeFile(new URL(`${name}.json`, dir), `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}
