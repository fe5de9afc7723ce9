import { randomBytes } from 'node:crypto';
import type { Stage } from '@polyvision/shared';
import { waitFor } from '../../../../test/support/index.ts';
import type { BusConsumer, BusRecord, MessageBus } from '../../../src/bus/message-bus.ts';
import { polyvisionTopicSpecs } from '../../../src/bus/topics.ts';
import type { Database } from '../../../src/db/database.ts';
import { migrate } from '../../../src/db/migrate.ts';
import { MemoryIdempotencyCache } from '../../../src/orchestrator/idempotency/idempotency-cache.ts';
import { JobCommandClient } from '../../../src/orchestrator/job-command-client.ts';
import type { OrchestratorTuning } from '../../../src/orchestrator/options.ts';
import { Orchestrator } from '../../../src/orchestrator/orchestrator.ts';
import { PgStageClaimStore } from '../../../src/workers/runtime/stage-claims.ts';
import {
  type CountingStageOptions,
  countExecutions,
  countingStage,
  ensureExecutionsTable,
} from '../../../src/workers/runtime/testing/counting-stage.ts';
import { WorkerRuntime } from '../../../src/workers/runtime/worker-runtime.ts';

/** A stored panorama (shape only; the test stages do not read it). */
export const PANORAMA = Object.freeze({
  kind: 'panorama',
  storage_id: 'se-test',
  object_key: 'acme/m/panorama.mp4',
  size_bytes: 1024,
  sha256: 'a'.repeat(64),
});

export const ALL_STAGES: Stage[] = ['detect', 'track', 'vcam', 'analyze', 'encode'];

/** Fast tuning for tests: short backoffs and polls. */
export const TEST_TUNING: Partial<OrchestratorTuning> = {
  retry: { initialMs: 50, coefficient: 2, maxMs: 400 },
  relayPollIntervalMs: 50,
  handlerRetryBackoffMs: 100,
  sessionTimeoutMs: 6_000,
  heartbeatIntervalMs: 500,
  lagPollIntervalMs: 500,
};

/** One isolated orchestrator world: prefix, migrated schema, topics, replicas, workers. */
export class Harness {
  readonly prefix = `t${randomBytes(5).toString('hex')}`;
  readonly idempotency = new MemoryIdempotencyCache();
  readonly orchestrators: Orchestrator[] = [];
  readonly workers: WorkerRuntime[] = [];
  readonly bus: MessageBus;
  readonly db: Database;
  readonly #producer;
  readonly #collectors: BusConsumer[] = [];
  readonly client: JobCommandClient;

  constructor(bus: MessageBus, db: Database) {
    this.bus = bus;
    this.db = db;
    this.#producer = bus.createProducer();
    this.client = new JobCommandClient(this.#producer, this.prefix);
  }

  async setup(): Promise<void> {
    await migrate(this.db);
    await ensureExecutionsTable(this.db);
    await this.bus.ensureTopics(polyvisionTopicSpecs(this.prefix, { taskPartitions: 4, eventPartitions: 4 }));
  }

  async startOrchestrator(tuning: Partial<OrchestratorTuning> = {}): Promise<Orchestrator> {
    const orchestrator = new Orchestrator({
      bus: this.bus,
      db: this.db,
      idempotency: this.idempotency,
      tuning: { ...TEST_TUNING, topicPrefix: this.prefix, ...tuning },
    });
    this.orchestrators.push(orchestrator);
    await orchestrator.start();
    return orchestrator;
  }

  async startWorker(options: Partial<CountingStageOptions> = {}, stages = ALL_STAGES): Promise<WorkerRuntime> {
    const worker = new WorkerRuntime({
      bus: this.bus,
      claims: new PgStageClaimStore(this.db),
      handlers: stages.map((stage) => countingStage(stage, { db: this.db, sleepMs: 20, ...options })),
      topicPrefix: this.prefix,
      sessionTimeoutMs: 6_000,
      progressIntervalMs: 1_000,
      concurrency: 4,
    });
    this.workers.push(worker);
    await worker.start();
    return worker;
  }

  async submit(count: number, stages: Stage[] = ALL_STAGES): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      ids.push(
        await this.client.submit({
          organization_id: `org-${i % 5}`,
          match_id: `m-${randomBytes(4).toString('hex')}`,
          inputs: [PANORAMA],
          stages,
        }),
      );
    }
    return ids;
  }

  async jobStatuses(ids: string[]): Promise<Map<string, string>> {
    const rows = await this.db.query<{ job_id: string; status: string }>(
      `SELECT job_id, status FROM jobs WHERE job_id = ANY($1::text[])`,
      [ids],
    );
    return new Map(rows.rows.map((r) => [r.job_id, r.status]));
  }

  async waitForStatus(ids: string[], status: string, timeoutMs = 30_000): Promise<void> {
    await waitFor(
      async () => {
        const statuses = await this.jobStatuses(ids);
        return ids.every((id) => statuses.get(id) === status);
      },
      { timeoutMs, intervalMs: 100, message: `${ids.length} jobs ${status}` },
    );
  }

  /** Every record of `topic` from the beginning, as they arrive (own consumer group). */
  async collect(topic: string): Promise<BusRecord[]> {
    const records: BusRecord[] = [];
    const consumer = this.bus.createConsumer({
      groupId: `${this.prefix}-collector-${randomBytes(4).toString('hex')}`,
      topics: [topic],
      fromBeginning: true,
      sessionTimeoutMs: 6_000,
      heartbeatIntervalMs: 500,
    });
    this.#collectors.push(consumer);
    await consumer.run({
      eachMessage: async (record) => {
        records.push(record);
      },
    });
    return records;
  }

  executions(ids?: string[]) {
    return countExecutions(this.db, ids);
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.workers.map((w) => w.close()));
    await Promise.allSettled(this.orchestrators.map((o) => o.close()));
    await Promise.allSettled(this.#collectors.map((c) => c.close()));
    await this.#producer.close();
    await this.bus.deleteTopics(polyvisionTopicSpecs(this.prefix).map((s) => s.topic)).catch(() => {});
    await this.bus.close();
  }
}
