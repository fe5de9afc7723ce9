import { createHash } from 'node:crypto';
import { getCounter, getGauge, type Logger, type Registry, silentLogger } from '@polyvision/shared';
import type { StorageElementConfig } from '../capacity/index.ts';
import type { Database } from '../db/index.ts';
import type { CapacityView } from '../ingest/placement.ts';
import type { StorageElementClient } from '../ingest/se-client.ts';
import {
  copiesToAudit,
  countUnderReplicated,
  dropCopy,
  dropStalePending,
  type FileCopy,
  markVerified,
  underReplicatedFiles,
} from './copies.ts';
import type { ReplicationSettings } from './options.ts';
import type { Replicator } from './replicator.ts';

/** Options of {@link Repairer}. */
export interface RepairerOptions {
  db: Database;
  client: StorageElementClient;
  storageElements: readonly StorageElementConfig[];
  /** The capacity cache view: an SE absent or not `reachable` there counts as unreachable. */
  capacity: Pick<CapacityView, 'candidates'>;
  replicator: Replicator;
  settings: ReplicationSettings;
  registry?: Registry;
  logger?: Logger;
  /** Clock in ms. @defaultValue Date.now */
  nowMs?: () => number;
}

/** What one {@link Repairer.scan} saw and did. */
export interface ScanResult {
  /** SEs unreachable now. */
  unreachable: string[];
  /** SEs unreachable for longer than `REPLICATION_SE_LOST_AFTER_MS`: their copies do not count. */
  lost: string[];
  /** Files found short of copies. */
  underReplicated: number;
  /** Files brought back to the required copies. */
  repaired: number;
  /** Files still short (no source, no target, a failed copy). */
  failed: number;
}

/** What one {@link Repairer.audit} checked. */
export interface AuditResult {
  checked: number;
  /** Bytes re-read and re-hashed (scrub). */
  scrubbedBytes: number;
  /** Copies found missing or with other bytes (their rows removed; the next scan copies again). */
  bad: Array<{ file_id: string; storage_id: string; reason: 'missing' | 'sha256_mismatch' }>;
}

/** Files repaired per scan at most (the next scan goes on). */
const SCAN_BATCH = 200;
/** Copies audited per pass at most. */
const AUDIT_BATCH = 500;

/**
 * Keeps every catalogued file at the required number of verified copies
 * (run by one leader, repairer-leadership.ts):
 *
 * - {@link scan}: notes which SEs the capacity monitor cannot reach and since
 *   when; an SE unreachable longer than `seLostAfterMs` is lost and its copies
 *   stop counting. Files short of copies get new ones (Replicator → add-copy.ts,
 *   a datacenter without a copy, the same placement rules as uploads);
 *   `pending` rows of a dead copier are cleared after `seLostAfterMs` (at least 10 min).
 * - {@link audit}: every verified copy not checked for `auditIntervalMs` is
 *   asked for (HEAD: size and SHA-256 as the SE stored them); up to
 *   `scrubBytesPerPass` bytes are also read back and hashed here. A copy that
 *   is missing or differs loses its row, so the next scan replaces it.
 *
 * Gauges: `replication_files_under_replicated`, `replication_storage_elements_lost`;
 * counter `replication_repairs_total{outcome}`.
 */
export class Repairer {
  readonly #o: RepairerOptions;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #unreachableSince = new Map<string, number>();
  readonly #gauges;
  readonly #repairs;

  constructor(options: RepairerOptions) {
    this.#o = options;
    this.#logger = options.logger ?? silentLogger;
    this.#now = options.nowMs ?? Date.now;
    const self = this;
    this.#gauges = options.registry
      ? {
          under: getGauge(options.registry, {
            name: 'replication_files_under_replicated',
            help: 'Catalogued files with fewer verified copies than required (copies on lost SEs not counted)',
            collect: async function (this: { set(v: number): void }) {
              const n = await countUnderReplicated(
                options.db,
                options.replicator.required,
                self.lostStorageIds(),
              ).catch(() => null);
              if (n !== null) this.set(n);
            },
          }),
          lost: getGauge(options.registry, {
            name: 'replication_storage_elements_lost',
            help: 'Storage elements unreachable for longer than REPLICATION_SE_LOST_AFTER_MS, at the last scan',
          }),
        }
      : null;
    this.#repairs = options.registry
      ? getCounter<'outcome'>(options.registry, {
          name: 'replication_repairs_total',
          help: 'Files the repairer tried to bring back to the required copies, by outcome (repaired, failed)',
          labelNames: ['outcome'],
        })
      : null;
  }

  /** SEs unreachable for longer than `seLostAfterMs` at the last observation. */
  lostStorageIds(): string[] {
    const now = this.#now();
    return [...this.#unreachableSince]
      .filter(([, since]) => now - since >= this.#o.settings.seLostAfterMs)
      .map(([id]) => id);
  }

  /** Reads reachability from the capacity view. @returns the SEs unreachable now. */
  async observe(): Promise<string[]> {
    const candidates = await this.#o.capacity.candidates();
    const now = this.#now();
    for (const se of this.#o.storageElements) {
      const seen = candidates.find((c) => c.storage_id === se.storage_id);
      if (seen?.reachable) this.#unreachableSince.delete(se.storage_id);
      else if (!this.#unreachableSince.has(se.storage_id)) this.#unreachableSince.set(se.storage_id, now);
    }
    return [...this.#unreachableSince.keys()];
  }

  /** One repair pass (see the class comment). */
  async scan(signal?: AbortSignal): Promise<ScanResult> {
    const unreachable = await this.observe();
    const lost = this.lostStorageIds();
    const staleMs = Math.max(600_000, this.#o.settings.seLostAfterMs);
    await dropStalePending(this.#o.db, staleMs);
    const required = this.#o.replicator.required;
    const files = await underReplicatedFiles(this.#o.db, {
      required,
      lostStorageIds: lost,
      pendingStaleMs: staleMs,
      limit: SCAN_BATCH,
    });
    const avoid = new Set(unreachable);
    let repaired = 0;
    let failed = 0;
    for (const file of files) {
      if (signal?.aborted) break;
      const outcome = await this.#o.replicator.ensure(file, avoid);
      if (outcome.verified >= outcome.required) repaired++;
      else failed++;
    }
    this.#repairs?.inc({ outcome: 'repaired' }, repaired);
    this.#repairs?.inc({ outcome: 'failed' }, failed);
    const under = await countUnderReplicated(this.#o.db, required, lost);
    this.#gauges?.under.set(under);
    this.#gauges?.lost.set(lost.length);
    if (files.length > 0 || lost.length > 0) {
      this.#logger.info(
        { lost, unreachable, found: files.length, repaired, failed, under_replicated: under },
        'replication scan',
      );
    }
    return { unreachable, lost, underReplicated: files.length, repaired, failed };
  }

  /** One audit pass (see the class comment). Copies on unreachable SEs wait for a later pass. */
  async audit(signal?: AbortSignal): Promise<AuditResult> {
    const unreachable = new Set(await this.observe());
    const copies = await copiesToAudit(this.#o.db, this.#o.settings.auditIntervalMs, AUDIT_BATCH);
    let budget = this.#o.settings.scrubBytesPerPass;
    const result: AuditResult = { checked: 0, scrubbedBytes: 0, bad: [] };
    for (const copy of copies) {
      if (signal?.aborted) break;
      const se = this.#o.storageElements.find((s) => s.storage_id === copy.storage_id);
      if (!se || unreachable.has(copy.storage_id)) continue;
      let reason: 'missing' | 'sha256_mismatch' | null;
      try {
        const stat = await this.#o.client.statFile(se, copy.object_key);
        reason = !stat
          ? 'missing'
          : stat.sha256 !== copy.sha256 || stat.sizeBytes !== copy.size_bytes
            ? 'sha256_mismatch'
            : null;
        if (reason === null && budget >= copy.size_bytes) {
          budget -= copy.size_bytes;
          result.scrubbedBytes += copy.size_bytes;
          if ((await this.#hash(se, copy)) !== copy.sha256) reason = 'sha256_mismatch';
        }
      } catch (error) {
        this.#logger.warn(
          { err: error, storage_id: copy.storage_id, file_id: copy.file_id },
          'audit: copy not checked',
        );
        continue;
      }
      result.checked++;
      if (reason) {
        result.bad.push({ file_id: copy.file_id, storage_id: copy.storage_id, reason });
        this.#logger.warn({ file_id: copy.file_id, storage_id: copy.storage_id, reason }, 'audit: copy dropped');
        await dropCopy(this.#o.db, copy.file_id, copy.storage_id);
      } else {
        await markVerified(this.#o.db, copy.file_id, copy.storage_id);
      }
    }
    return result;
  }

  async #hash(se: StorageElementConfig, copy: FileCopy): Promise<string> {
    const opened = await this.#o.client.openFile(se, copy.object_key);
    const hash = createHash('sha256');
    for await (const chunk of opened.body) hash.update(chunk as Buffer);
    return hash.digest('hex');
  }
}
