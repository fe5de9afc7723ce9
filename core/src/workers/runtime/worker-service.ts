import type { Logger } from '@polyvision/shared';
import { ensurePolyvisionTopics } from '../../bus/topics.ts';
import { type Connections, openConnections } from '../../orchestrator/service/connections.ts';
import { RedisStageKeys } from './redis-stage-keys.ts';
import { PgStageClaimStore, type StageClaimStore } from './stage-claims.ts';
import type { StageHandler } from './stage-handler.ts';
import type { WorkerConfig } from './worker-config.ts';
import { WorkerRuntime } from './worker-runtime.ts';

/**
 * Composes a worker process: connections, claims (PostgreSQL + the seeds'
 * Redis stage keys when REDIS_URL is set), the runtime over `handlers`.
 *
 * @param handlers - built by the caller (the CLI loads real stages or the counting test double).
 */
export async function startWorkerService(
  config: WorkerConfig,
  handlers: (connections: Connections) => Promise<StageHandler[]>,
  logger: Logger,
): Promise<{ runtime: WorkerRuntime; connections: Connections; close(): Promise<void> }> {
  const connections = await openConnections(
    {
      kafkaBrokers: config.KAFKA_BROKERS,
      databaseUrl: config.DATABASE_URL,
      redisUrl: config.REDIS_URL,
      schema: config.DATABASE_SCHEMA,
    },
    logger,
    'polyvision-worker',
  );
  let stageHandlers: StageHandler[];
  try {
    await ensurePolyvisionTopics(connections.bus, config.POLYVISION_TOPIC_PREFIX, logger);
    stageHandlers = await handlers(connections);
  } catch (error) {
    // A stage that cannot load (model missing, bad stage config) must not leave a process
    // holding open connections and doing nothing: close them so the caller can exit.
    await connections.close().catch((closeError: unknown) => logger.warn({ err: closeError }, 'close failed'));
    throw error;
  }
  let claims: StageClaimStore = new PgStageClaimStore(connections.db);
  if (connections.redis) claims = new RedisStageKeys(claims, connections.redis, config.REDIS_KEY_PREFIX);
  const runtime = new WorkerRuntime({
    bus: connections.bus,
    handlers: stageHandlers,
    claims,
    logger,
    topicPrefix: config.POLYVISION_TOPIC_PREFIX,
    ...(config.WORKER_ID ? { workerId: config.WORKER_ID } : {}),
    sessionTimeoutMs: config.WORKER_SESSION_TIMEOUT_MS,
    claimLeaseMs: config.WORKER_CLAIM_LEASE_MS,
    concurrency: config.WORKER_CONCURRENCY,
    progressIntervalMs: config.WORKER_PROGRESS_INTERVAL_MS,
  });
  await runtime.start();
  return {
    runtime,
    connections,
    async close() {
      await runtime.close();
      await connections.close();
    },
  };
}
