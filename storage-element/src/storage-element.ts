import { join } from 'node:path';
import { createMetricsRegistry, type Logger, serve, silentLogger } from '@polyvision/shared';
import type { BlobBackend } from './backends/blob-backend.ts';
import { LocalBackend } from './backends/local/local-backend.ts';
import { CapacityService } from './capacity/capacity-service.ts';
import type { StorageElementConfig } from './config.ts';
import { createSeApp } from './http/app.ts';
import { registerSeMetrics } from './http/metrics.ts';
import { ReservationLedger } from './reservations/ledger.ts';
import { UploadStore } from './uploads/upload-store.ts';

/** Options of {@link startStorageElement}. */
export interface StartOptions {
  logger?: Logger;
  /** How often expired reservations and their uploads are swept, ms. @defaultValue 5_000 */
  sweepIntervalMs?: number;
  /** Closes the SE when aborted. */
  signal?: AbortSignal;
}

/** A running storage element. */
export interface RunningStorageElement {
  /** Base URL it listens on. */
  url: string;
  port: number;
  /** Stops accepting, lets in-flight requests end (2 s), stops the sweeper, closes the backend. Idempotent. */
  close(): Promise<void>;
}

type Backend = BlobBackend & { readonly storedBytes: number };

/**
 * Starts a storage element: opens the backend, the reservation ledger and
 * the upload staging area under `config.dataDir` (recovering what a
 * previous run left, even after `kill -9`), and serves the HTTP API.
 *
 * Layout of `dataDir`: `files/` + `meta/` (local backend), `staging/`
 * (upload bytes and records), `state/reservations.json`.
 *
 * @throws PolyvisionError `storage_failure` when the backend cannot be reached, `listen_failed` when the port is taken.
 */
export async function startStorageElement(
  config: StorageElementConfig,
  options: StartOptions = {},
): Promise<RunningStorageElement> {
  const logger = options.logger ?? silentLogger;
  const stagingDir = join(config.dataDir, 'staging');
  let backend: Backend;
  if (config.backend === 's3' && config.s3) {
    // Loaded on demand: the AWS SDK costs most of a second to import.
    const { S3Backend } = await import('./backends/s3/s3-backend.ts');
    backend = new S3Backend({ s3: config.s3, stagingDir: config.dataDir });
  } else {
    backend = new LocalBackend({ dataDir: config.dataDir, capacityLimitBytes: config.capacityLimitBytes });
  }
  await backend.init();
  const ledger = await ReservationLedger.open({ stateFile: join(config.dataDir, 'state', 'reservations.json') });
  const registry = createMetricsRegistry({ service: 'storage-element', labels: { storage_id: config.storageId } });
  let uploads: UploadStore | undefined;
  // The real URL is known once listening (port 0 picks one).
  let endpoint = config.externalEndpoint ?? `http://${config.host}:${config.port}`;
  const capacity = new CapacityService({
    storageId: config.storageId,
    location: config.location,
    endpoint: () => endpoint,
    mode: config.mode,
    backend,
    ledger,
    stagedBytes: () => uploads?.stagedBytes ?? 0,
    headroomBytes: config.reservedBytes,
    probeMaxAgeMs: config.capacityProbeIntervalMs,
    etagGranularityBytes: config.capacityEtagGranularityBytes,
  });
  const metrics = registerSeMetrics(registry, { ledger, uploads: () => uploads, capacity });
  uploads = await UploadStore.open({
    stagingDir,
    backend,
    ledger,
    onBytesWritten: (bytes) => metrics.bytesWritten.inc(bytes),
    onIoError: (error) => capacity.noteIoError(error),
    log: (message, error) => logger.warn({ err: error }, message),
  });
  await ledger.persist();
  const store = uploads;

  const app = createSeApp({ config, backend, ledger, uploads: store, capacity, metrics, logger }, registry);
  const server = await serve(
    { fetch: app.fetch as (request: Request, env?: unknown) => Response | Promise<Response> },
    { host: config.host, port: config.port },
  );
  endpoint = config.externalEndpoint ?? server.url;

  let sweeping = false;
  const sweeper = setInterval(() => {
    if (sweeping) return;
    sweeping = true;
    const expired = ledger.sweep().map((r) => r.reservationId);
    store
      .sweep(expired)
      .then(async (dropped) => {
        if (expired.length > 0 || dropped.length > 0) {
          logger.info({ expired: expired.length, dropped: dropped.length }, 'swept expired reservations and uploads');
          await ledger.persist();
        }
      })
      .catch((error) => logger.error({ err: error }, 'sweep failed'))
      .finally(() => {
        sweeping = false;
      });
  }, options.sweepIntervalMs ?? 5_000);
  sweeper.unref();

  logger.info(
    { url: server.url, storage_id: config.storageId, backend: config.backend, mode: config.mode },
    'storage element listening',
  );
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      clearInterval(sweeper);
      await server.close();
      await ledger.persist().catch(() => {});
      await backend.close();
    })();
    return closing;
  };
  options.signal?.addEventListener('abort', () => void close(), { once: true });
  return { url: server.url, port: server.port, close };
}
