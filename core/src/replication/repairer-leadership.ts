import { abortableSleep, type Logger, silentLogger, startLeaderLoop, type TtlStore } from '@polyvision/shared';
import type { Repairer } from './repairer.ts';

/** Election key of the repairer. */
export const REPAIRER_LEADER_KEY = 'replication:repairer_leader';

/** Options of {@link startRepairerLeadership}. */
export interface RepairerLeadershipOptions {
  repairer: Repairer;
  /** Where leadership is decided (the ingest replicas' Redis TtlStore). */
  store: TtlStore;
  instanceId: string;
  /** `REPLICATION_LEADER_LEASE_MS`. */
  leaseMs: number;
  /** `REPLICATION_SCAN_INTERVAL_MS`. */
  scanIntervalMs: number;
  /** `REPLICATION_AUDIT_INTERVAL_MS`. */
  auditIntervalMs: number;
  logger?: Logger;
  /** Called if the repairer does not stop within lease/4 after losing leadership. @defaultValue process.exit(1) */
  kill?: () => void;
}

/**
 * Runs the repairer on one ingest replica only (shared `LeadershipRunner`
 * over `replication:repairer_leader`): the leader scans every
 * `scanIntervalMs` and audits every `auditIntervalMs` until it loses
 * leadership or `stop()` is called; the others keep campaigning.
 *
 * @returns `stop()`, which ends the passes and releases leadership.
 */
export function startRepairerLeadership(options: RepairerLeadershipOptions): { stop(): Promise<void> } {
  const logger = options.logger ?? silentLogger;
  const service = async (signal: AbortSignal) => {
    let lastAuditMs = Date.now();
    while (!signal.aborted) {
      try {
        await options.repairer.scan(signal);
        if (Date.now() - lastAuditMs >= options.auditIntervalMs) {
          lastAuditMs = Date.now();
          await options.repairer.audit(signal);
        }
      } catch (error) {
        logger.warn({ err: error }, 'replication pass failed');
      }
      await abortableSleep(options.scanIntervalMs, signal).catch(() => undefined);
    }
  };
  return startLeaderLoop({
    store: options.store,
    key: REPAIRER_LEADER_KEY,
    instanceId: options.instanceId,
    leaseMs: options.leaseMs,
    service,
    logger,
    ...(options.kill ? { kill: options.kill } : {}),
  });
}
