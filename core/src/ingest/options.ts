import { hostname } from 'node:os';
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
import {
  type CapacityMonitorSettings,
  loadCapacityMonitorSettings,
  loadStorageElements,
  type StorageElementConfig,
} from '../capacity/index.ts';
import { loadOpsSettings, type OpsSettings } from '../ops/options.ts';
import { loadReplicationSettings, type ReplicationSettings } from '../replication/options.ts';
import { parseOrganizationQuotas } from './quota.ts';

/** Environment of `pnpm polyvision ingest` (documented in core/README.md, "Ingest"). */
export const ingestEnvSchema = z.object({
  /** Leader election, capacity cache, tus locks. Required: several replicas share it. */
  REDIS_URL: envRedisUrl(),
  REDIS_KEY_PREFIX: z.string().default(''),
  /** PostgreSQL URL; PGlite in memory when unset (one replica only). */
  DATABASE_URL: envPostgresUrl().optional(),
  DATABASE_SCHEMA: envSqlSchema(),
  /** Accepted for symmetry; ingest publishes through the outbox, which the orchestrator's relay sends to Kafka. */
  KAFKA_BROKERS: z.string().optional(),
  POLYVISION_TOPIC_PREFIX: envTopicPrefix(),
  INGEST_HOST: z.string().default('127.0.0.1'),
  INGEST_PORT: envInt(8200, 0, 65535),
  INGEST_INSTANCE_ID: z
    .string()
    .regex(/^[A-Za-z0-9._:-]{1,200}$/, { message: 'letters, digits, ".", "_", ":", "-"' })
    .optional(),
  INGEST_MAX_UPLOAD_BYTES: envInt(256 * 2 ** 30, 1),
  INGEST_MAX_METADATA_BYTES: envInt(4096, 64, 65_536),
  INGEST_UPLOAD_EXPIRATION_MS: envInt(86_400_000, 1_000),
  INGEST_PLACEMENT_MAX_ATTEMPTS: envInt(3, 1, 100),
  INGEST_HEADROOM_BYTES: envInt(0, 0),
  INGEST_PREFERRED_LOCATIONS: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  INGEST_RETRY_AFTER_SECONDS: envInt(30, 1, 86_400),
  INGEST_CHECKSUM_MAX_CHUNK_BYTES: envInt(64 * 2 ** 20, 1),
  INGEST_EXPIRY_SWEEP_INTERVAL_MS: envInt(60_000, 100),
  INGEST_TUS_LOCK_LEASE_MS: envInt(10_000, 100),
  INGEST_SE_TIMEOUT_MS: envInt(15_000, 100),
  /** Lifetime of an upload's reservation on its SE without progress (renewed by every byte written). */
  INGEST_RESERVATION_TTL_MS: envInt(900_000, 1_000, 86_400_000),
  /** Quota of reserved + stored bytes of every organization not in INGEST_ORG_QUOTAS; unset: unlimited. */
  INGEST_ORG_QUOTA_BYTES: envInt(undefined, 0).optional(),
  /** Quotas by organization: JSON `{"<organization id>": <bytes>}`. */
  INGEST_ORG_QUOTAS: z.string().optional(),
  /**
   * Length of the edges' panorama segments in seconds (the edges' `segment_duration_s`): an edge-named
   * panorama segment becomes `match.segment` of its match's one job with this duration.
   */
  INGEST_SEGMENT_DURATION_S: envInt(10, 1, 60),
  /** Scrape tokens: `/metrics` and readiness details (comma-separated; `OPS_TOKENS` work too). */
  METRICS_TOKENS: envTokenList(),
});

/** Everything ingest reads at start. */
export interface IngestSettings {
  env: z.output<typeof ingestEnvSchema>;
  instanceId: string;
  storageElements: StorageElementConfig[];
  capacity: CapacityMonitorSettings;
  /** The ops capacity map (`OPS_*`); null (not served) without `OPS_TOKENS`. */
  ops?: OpsSettings | null;
  /** Quotas by organization (`INGEST_ORG_QUOTAS`), bytes. */
  organizationQuotas?: Readonly<Record<string, number>>;
  /** Replication (`REPLICATION_*`); omitted: the defaults. */
  replication?: ReplicationSettings;
}

/**
 * Reads and checks the whole ingest environment.
 * @throws ConfigError naming the variable, the value and what was expected.
 */
export function loadIngestSettings(env: Record<string, string | undefined> = process.env): IngestSettings {
  const parsed = loadConfig(ingestEnvSchema, env);
  return {
    env: parsed,
    instanceId: parsed.INGEST_INSTANCE_ID ?? `${hostname()}:${process.pid}`,
    storageElements: loadStorageElements(env),
    capacity: loadCapacityMonitorSettings(env),
    ops: loadOpsSettings(env),
    organizationQuotas: parseOrganizationQuotas(parsed.INGEST_ORG_QUOTAS),
    replication: loadReplicationSettings(env),
  };
}
