import { createMetricsRegistry, type Logger, type RunningServer, serve } from '@polyvision/shared';
import { ensurePolyvisionTopics } from '../../bus/topics.ts';
import { orchestratorApp } from '../http/orchestrator-app.ts';
import {
  type IdempotencyCache,
  MemoryIdempotencyCache,
  RedisIdempotencyCache,
} from '../idempotency/idempotency-cache.ts';
import { JobCommandClient } from '../job-command-client.ts';
import { Orchestrator } from '../orchestrator.ts';
import { Reconciler } from '../reconcile/reconciler.ts';
import { startReconcilerLeadership } from '../reconcile/reconciler-leadership.ts';
import { type Connections, leadershipStore, openConnections } from './connections.ts';
import type { OrchestratorConfig } from './orchestrator-config.ts';

export interface OrchestratorService {
  orchestrator: Orchestrator;
  http: RunningServer;
  connections: Connections;
  /**
   * Graceful stop: leaves the group (partitions move at once), stops the
   * reconciler and HTTP. `onStep` hears each step's name as it begins (for
   * the shutdown deadline's report).
   */
  close(onStep?: (label: string) => void): Promise<void>;
}

/**
 * Composes one orchestrator replica from its config: connections, topics,
 * the consumer, the reconciler (leader only) and HTTP (`/api/v1/jobs`,
 * `/metrics`, `/health/live`, `/health/ready`; who may call what: `orchestratorApp`).
 */
export async function startOrchestratorService(
  config: OrchestratorConfig,
  logger: Logger,
): Promise<OrchestratorService> {
  const connections = await openConnections(
    {
      kafkaBrokers: config.KAFKA_BROKERS,
      databaseUrl: config.DATABASE_URL,
      redisUrl: config.REDIS_URL,
      schema: config.DATABASE_SCHEMA,
    },
    logger,
    'polyvision-orchestrator',
  );
  try {
    await ensurePolyvisionTopics(connections.bus, config.POLYVISION_TOPIC_PREFIX, logger);
  } catch (error) {
    // Wrong topics (or no broker): say so and leave nothing open, so the process exits.
    await connections.close().catch(() => {});
    throw error;
  }
  const idempotency: IdempotencyCache = connections.redis
    ? new RedisIdempotencyCache(connections.redis, config.REDIS_KEY_PREFIX)
    : new MemoryIdempotencyCache();
  const registry = createMetricsRegistry({ service: 'orchestrator' });
  const attempts = config.ORCHESTRATOR_STAGE_MAX_ATTEMPTS;
  const orchestrator = new Orchestrator({
    bus: connections.bus,
    db: connections.db,
    idempotency,
    logger,
    registry,
    tuning: {
      topicPrefix: config.POLYVISION_TOPIC_PREFIX,
      ...(config.ORCHESTRATOR_INSTANCE_ID ? { instanceId: config.ORCHESTRATOR_INSTANCE_ID } : {}),
      sessionTimeoutMs: config.ORCHESTRATOR_SESSION_TIMEOUT_MS,
      heartbeatIntervalMs: config.ORCHESTRATOR_HEARTBEAT_INTERVAL_MS,
      maxAttempts: {
        stitch: attempts,
        detect: attempts,
        track: attempts,
        vcam: attempts,
        analyze: attempts,
        encode: attempts,
      },
      retry: {
        initialMs: config.ORCHESTRATOR_RETRY_INITIAL_MS,
        coefficient: 2,
        maxMs: config.ORCHESTRATOR_RETRY_MAX_MS,
      },
      scheduleToStartMs: {
        normal: config.ORCHESTRATOR_SCHEDULE_TO_START_MS,
        high: config.ORCHESTRATOR_SCHEDULE_TO_START_HIGH_MS,
      },
      startToCloseMs: {
        stitch: config.ORCHESTRATOR_START_TO_CLOSE_MS,
        detect: config.ORCHESTRATOR_START_TO_CLOSE_MS,
        track: config.ORCHESTRATOR_START_TO_CLOSE_MS,
        vcam: config.ORCHESTRATOR_START_TO_CLOSE_MS,
        analyze: config.ORCHESTRATOR_START_TO_CLOSE_MS,
        encode: config.ORCHESTRATOR_START_TO_CLOSE_MS,
      },
      retryWindowMs: config.ORCHESTRATOR_RETRY_WINDOW_MS,
      matchFanOutInFlight: config.ORCHESTRATOR_MATCH_FANOUT_IN_FLIGHT || null,
      matchMaxFailedSegments: config.ORCHESTRATOR_MATCH_MAX_FAILED_SEGMENTS,
      poisonMaxAttempts: config.ORCHESTRATOR_POISON_MAX_ATTEMPTS,
      relayPollIntervalMs: config.ORCHESTRATOR_RELAY_POLL_INTERVAL_MS,
    },
  });
  await orchestrator.start();
  const producer = connections.bus.createProducer();
  const reconciler = new Reconciler({
    db: connections.db,
    client: new JobCommandClient(producer, config.POLYVISION_TOPIC_PREFIX),
    logger,
    stallAfterMs: config.ORCHESTRATOR_STALL_AFTER_MS,
    matchIdleGraceMs: config.ORCHESTRATOR_MATCH_IDLE_GRACE_MS,
  });
  const schedule = startReconcilerLeadership({
    reconciler,
    store: leadershipStore(connections.db),
    instanceId: orchestrator.tuning.instanceId,
    key: `${config.POLYVISION_TOPIC_PREFIX}:orchestrator:reconciler_leader`,
    leaseMs: config.ORCHESTRATOR_RECONCILER_LEASE_MS,
    cronExpression: config.ORCHESTRATOR_RECONCILE_CRON,
    logger,
  });
  const app = orchestratorApp({
    db: connections.db,
    registry,
    operatorTokens: config.OPS_TOKENS,
    metricsTokens: config.METRICS_TOKENS,
    retryWindowMs: orchestrator.tuning.retryWindowMs,
    ready: {
      database: () => connections.db.query('SELECT 1'),
      partitions: () => orchestrator.ownedPartitions().length > 0,
      // An assigned partition this replica cannot claim: its jobs stand still until it can.
      partitions_claimed: () => {
        const problems = orchestrator.claimProblems();
        if (problems.length > 0) {
          const list = problems.map((p) => `${p.partition} (${p.failures}× for ${p.sinceMs} ms: ${p.error})`);
          throw new Error(`partitions not claimed: ${list.join('; ')}`);
        }
      },
    },
  });
  const http = await serve(app, { host: config.ORCHESTRATOR_HTTP_HOST, port: config.ORCHESTRATOR_HTTP_PORT });
  logger.info({ url: http.url, instance: orchestrator.tuning.instanceId }, 'orchestrator listening');
  return {
    orchestrator,
    http,
    connections,
    async close(onStep = () => {}) {
      onStep('consumer group and outbox');
      await orchestrator.close();
      onStep('reconciler leadership');
      await schedule.stop();
      onStep('command producer');
      await producer.close();
      onStep('HTTP server');
      await http.close();
      onStep('idempotency cache');
      await idempotency.close().catch(() => {});
      onStep('bus, Redis and database connections');
      await connections.close();
    },
  };
}
