import { envInt, loadConfig } from '@polyvision/shared';
import { z } from 'zod';
import type { StorageElementConfig } from '../capacity/index.ts';

/** Environment of replication (read by ingest, which runs the repairer; documented in core/README.md). */
export const replicationEnvSchema = z.object({
  /** Copies each file should have, each in another datacenter (capped by the datacenters configured). */
  REPLICATION_FACTOR: envInt(2, 1, 5),
  /** How often the repairer looks for under-replicated files, ms. */
  REPLICATION_SCAN_INTERVAL_MS: envInt(30_000, 100, 86_400_000),
  /** An SE unreachable for longer than this is lost: its copies no longer count, ms. */
  REPLICATION_SE_LOST_AFTER_MS: envInt(300_000, 0, 86_400_000),
  /** How often the repairer audits copies (HEAD: size and SHA-256 as the SE has them), ms. */
  REPLICATION_AUDIT_INTERVAL_MS: envInt(3_600_000, 100, 7 * 86_400_000),
  /** Bytes re-read and re-hashed per audit pass (scrub), oldest verification first; 0: no scrub. */
  REPLICATION_SCRUB_BYTES_PER_PASS: envInt(1024 ** 3, 0),
  /** Lease of the repairer's leadership (one repairer among the ingest replicas), ms. */
  REPLICATION_LEADER_LEASE_MS: envInt(15_000, 1_000, 600_000),
  /** How long the last PATCH of an upload waits for its copies before answering without the confirmation, ms. */
  REPLICATION_CONFIRM_WAIT_MS: envInt(30_000, 0, 600_000),
});

/** Replication settings (units in the names). */
export interface ReplicationSettings {
  /** Copies wanted per file (`REPLICATION_FACTOR`). */
  factor: number;
  scanIntervalMs: number;
  seLostAfterMs: number;
  auditIntervalMs: number;
  scrubBytesPerPass: number;
  leaderLeaseMs: number;
  confirmWaitMs: number;
}

/**
 * Reads the `REPLICATION_*` variables.
 * @throws ConfigError naming the variable.
 */
export function loadReplicationSettings(env: Record<string, string | undefined> = process.env): ReplicationSettings {
  const parsed = loadConfig(replicationEnvSchema, env);
  return {
    factor: parsed.REPLICATION_FACTOR,
    scanIntervalMs: parsed.REPLICATION_SCAN_INTERVAL_MS,
    seLostAfterMs: parsed.REPLICATION_SE_LOST_AFTER_MS,
    auditIntervalMs: parsed.REPLICATION_AUDIT_INTERVAL_MS,
    scrubBytesPerPass: parsed.REPLICATION_SCRUB_BYTES_PER_PASS,
    leaderLeaseMs: parsed.REPLICATION_LEADER_LEASE_MS,
    confirmWaitMs: parsed.REPLICATION_CONFIRM_WAIT_MS,
  };
}

/** The defaults (what {@link loadReplicationSettings} gives for an empty environment). */
export const DEFAULT_REPLICATION_SETTINGS: ReplicationSettings = loadReplicationSettings({});

/** What the fleet allows: copies required per file, and whether that is short of the factor asked for. */
export interface RequiredCopies {
  /** Copies required per file: `min(factor, datacenters configured)`, at least 1. */
  required: number;
  /** The factor asked for (`REPLICATION_FACTOR`). */
  factor: number;
  /** Datacenters (distinct `location`s) among the configured SEs. */
  datacenters: number;
  /** True when the fleet cannot hold `factor` copies in distinct datacenters (readiness says `degraded`). */
  degraded: boolean;
}

/**
 * Copies required per file on this fleet: each copy must be in another
 * datacenter, so at most one per distinct `location` of the configured SEs.
 */
export function requiredCopies(storageElements: readonly StorageElementConfig[], factor: number): RequiredCopies {
  const datacenters = new Set(storageElements.map((s) => s.location)).size;
  const required = Math.max(1, Math.min(factor, datacenters));
  return { required, factor, datacenters, degraded: required < factor };
}
