import {
  envInt,
  envPostgresUrl,
  envRedisUrl,
  envSqlSchema,
  envTokenList,
  envTopicPrefix,
  loadConfig,
} from '@polyvision/shared';
import { z } from 'zod';

/**
 * Environment of `pnpm polyvision orchestrator` (documented in core/README.md).
 * Real drivers when the URLs are set; otherwise the embedded ones.
 */
export const orchestratorConfigSchema = z.object({
  /** Comma-separated `host:port`; in-memory bus when unset. */
  KAFKA_BROKERS: z.string().optional(),
  /** PostgreSQL URL; PGlite in memory when unset (single process only). */
  DATABASE_URL: envPostgresUrl().optional(),
  DATABASE_SCHEMA: envSqlSchema(),
  /** Redis URL of the `job:processed:{job_id}` fast path; none when unset (the database decides alone). */
  REDIS_URL: envRedisUrl().optional(),
  REDIS_KEY_PREFIX: z.string().default(''),
  POLYVISION_TOPIC_PREFIX: envTopicPrefix(),
  ORCHESTRATOR_HTTP_HOST: z.string().default('127.0.0.1'),
  ORCHESTRATOR_HTTP_PORT: envInt(8090, 0, 65535),
  /** Operator tokens: read every job, `/metrics`, readiness details (comma-separated). */
  OPS_TOKENS: envTokenList(),
  /** Scrape tokens: `/metrics` and readiness details only (comma-separated). */
  METRICS_TOKENS: envTokenList(),
  ORCHESTRATOR_INSTANCE_ID: z.string().min(1).max(200).optional(),
  ORCHESTRATOR_SESSION_TIMEOUT_MS: envInt(3_000, 1_000, 300_000),
  ORCHESTRATOR_HEARTBEAT_INTERVAL_MS: envInt(500, 100, 60_000),
  ORCHESTRATOR_STAGE_MAX_ATTEMPTS: envInt(3, 1, 100),
  ORCHESTRATOR_RETRY_INITIAL_MS: envInt(1_000, 1, 3_600_000),
  ORCHESTRATOR_RETRY_MAX_MS: envInt(100_000, 1, 86_400_000),
  /** Schedule-to-start of normal-priority tasks: how long one may wait for a worker (a backlog is not a failure). */
  ORCHESTRATOR_SCHEDULE_TO_START_MS: envInt(86_400_000, 1_000, 30 * 86_400_000),
  ORCHESTRATOR_SCHEDULE_TO_START_HIGH_MS: envInt(86_400_000, 1_000, 30 * 86_400_000),
  /** Start-to-close of every stage: the longest one attempt may run from its claim. */
  ORCHESTRATOR_START_TO_CLOSE_MS: envInt(21_600_000, 1_000, 7 * 86_400_000),
  /** How long retriable input errors (`input_unavailable`) are retried with backoff, from the run's first dispatch. */
  ORCHESTRATOR_RETRY_WINDOW_MS: envInt(1_800_000, 0, 7 * 86_400_000),
  /** Most detect (and stitch) tasks of one match in flight at once, lowest segments first; 0: no limit. */
  ORCHESTRATOR_MATCH_FANOUT_IN_FLIGHT: envInt(4, 0, 10_000),
  /** Segments of one match that may fail for good before the match fails (they are left out); 0: any fails it. */
  ORCHESTRATOR_MATCH_MAX_FAILED_SEGMENTS: envInt(5, 0, 100_000),
  /** A running stage with a live claim but no progress report for this long is flagged by the reconciler. */
  ORCHESTRATOR_STALL_AFTER_MS: envInt(600_000, 1_000, 7 * 86_400_000),
  /**
   * A running match job without a new segment for this long is closed by the reconciler (`match.end`,
   * reason `idle_grace`) when its end marker never came or segments are still missing (given up as missing).
   */
  ORCHESTRATOR_MATCH_IDLE_GRACE_MS: envInt(1_800_000, 1_000, 7 * 86_400_000),
  /** Tries of a command failing with a non-retriable error before it goes to the DLQ. */
  ORCHESTRATOR_POISON_MAX_ATTEMPTS: envInt(5, 1, 1_000),
  ORCHESTRATOR_RELAY_POLL_INTERVAL_MS: envInt(250, 10, 60_000),
  ORCHESTRATOR_RECONCILE_CRON: z.string().default('*/15 * * * * *'),
  ORCHESTRATOR_RECONCILER_LEASE_MS: envInt(30_000, 1_000, 600_000),
});

export type OrchestratorConfig = z.output<typeof orchestratorConfigSchema>;

/** @throws ConfigError naming the variable, its value and what was expected. */
export function loadOrchestratorConfig(env: Record<string, string | undefined> = process.env): OrchestratorConfig {
  return loadConfig(orchestratorConfigSchema, env);
}
