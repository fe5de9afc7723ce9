import { getCounter, getGauge } from '@polyvision/shared';
import type { Counter, Registry } from 'prom-client';
import type { CapacityService } from '../capacity/capacity-service.ts';
import type { ReservationLedger } from '../reservations/ledger.ts';
import type { UploadStore } from '../uploads/upload-store.ts';

/** The SE's own metrics (names `polyvision_se_*`). */
export interface SeMetrics {
  bytesWritten: Counter;
  bytesRead: Counter;
  /** 507 answers, by `reason`: `reservation`, `upload_create`, `append`. */
  insufficientStorage: Counter<'reason'>;
}

/**
 * Registers the SE metrics on `registry`: byte counters, 507 counter, and
 * gauges read at scrape time (active reservations, open uploads, staged
 * bytes, and the capacity report's total/used/available/reserved bytes).
 */
export function registerSeMetrics(
  registry: Registry,
  sources: { ledger: ReservationLedger; uploads: () => UploadStore | undefined; capacity: CapacityService },
): SeMetrics {
  getGauge(registry, {
    name: 'polyvision_se_reservations_active',
    help: 'Live reservations.',
    collect(this: { set(v: number): void }) {
      this.set(sources.ledger.size);
    },
  });
  getGauge(registry, {
    name: 'polyvision_se_uploads_open',
    help: 'Uploads still receiving bytes.',
    collect(this: { set(v: number): void }) {
      this.set(sources.uploads()?.openCount ?? 0);
    },
  });
  getGauge(registry, {
    name: 'polyvision_se_staged_bytes',
    help: 'Bytes in the upload staging area.',
    collect(this: { set(v: number): void }) {
      this.set(sources.uploads()?.stagedBytes ?? 0);
    },
  });
  getGauge<'kind'>(registry, {
    name: 'polyvision_se_capacity_bytes',
    help: 'Capacity report fields, bytes (kind = total, used, available, reserved).',
    labelNames: ['kind'],
    async collect(this: { set(labels: { kind: string }, v: number): void }) {
      const { report } = await sources.capacity.snapshot();
      for (const kind of ['total', 'used', 'available', 'reserved'] as const) this.set({ kind }, report[kind]);
    },
  });
  return {
    bytesWritten: getCounter(registry, {
      name: 'polyvision_se_bytes_written_total',
      help: 'Bytes written to staging.',
    }),
    bytesRead: getCounter(registry, { name: 'polyvision_se_bytes_read_total', help: 'File bytes sent to readers.' }),
    insufficientStorage: getCounter<'reason'>(registry, {
      name: 'polyvision_se_insufficient_storage_total',
      help: '507 Insufficient Storage answers.',
      labelNames: ['reason'],
    }),
  };
}
