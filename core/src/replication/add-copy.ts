import { type Logger, PolyvisionError, silentLogger } from '@polyvision/shared';
import type { StorageElementConfig } from '../capacity/index.ts';
import type { Database } from '../db/index.ts';
import { type CapacityView, type PlacementOptions, placeFile } from '../ingest/placement.ts';
import { isStatus, peerCode, type StorageElementClient } from '../ingest/se-client.ts';
import { type CatalogFile, dropCopy, type FileCopy, insertPendingCopy, listCopies, markVerified } from './copies.ts';

/** What {@link addCopy} needs. */
export interface AddCopyDeps {
  db: Database;
  client: StorageElementClient;
  /** The capacity cache view placement reads (the same as ingest's). */
  capacity: CapacityView;
  storageElements: readonly StorageElementConfig[];
  /** Placement settings (`preferredLocations` is ignored: a copy goes to another datacenter). */
  placement: PlacementOptions;
  logger?: Logger;
}

/** Options of one {@link addCopy}. */
export interface AddCopyOptions {
  /** SEs not to read from nor write to (lost or unreachable). */
  avoidStorageIds?: ReadonlySet<string>;
  signal?: AbortSignal;
}

/**
 * Adds one copy of a catalogued file on an SE in a datacenter that holds
 * none of its copies yet:
 *
 * 1. target: placement (placement.ts + selector.ts: writable, healthy,
 *    reachable, room beyond the headroom, reservation before bytes, `507` →
 *    next SE) over the SEs of the other datacenters only;
 * 2. claim: a `pending` row in `file_copies` (one copier per file and SE);
 * 3. stream: `GET` from a verified copy → `PATCH` to the target's resumable
 *    upload (never buffered); another verified copy is tried when the source fails;
 * 4. verify: the target's `complete` checks size and SHA-256 end to end; the
 *    row becomes `verified`. A target that already holds the same bytes counts.
 *
 * On failure the target upload is aborted, its reservation released and the
 * pending row removed.
 *
 * @returns the verified copy.
 * @throws PolyvisionError `replica_not_placeable` (retriable) when no other
 *   datacenter has a usable SE, `replica_source_unavailable` (retriable) when
 *   no verified copy could be read, `insufficient_storage` from placement, or
 *   the SE client's errors.
 */
export async function addCopy(deps: AddCopyDeps, file: CatalogFile, options: AddCopyOptions = {}): Promise<FileCopy> {
  const logger = deps.logger ?? silentLogger;
  const avoid = options.avoidStorageIds ?? new Set<string>();
  const copies = await listCopies(deps.db, file.file_id);
  const configured = new Map(deps.storageElements.map((s) => [s.storage_id, s]));
  const sources = copies.filter(
    (c) => c.state === 'verified' && configured.has(c.storage_id) && !avoid.has(c.storage_id),
  );
  // Datacenters that hold a copy; copies on avoided (lost) SEs do not count, so a copy may go next to them.
  const held = new Set(
    copies
      .filter((c) => !avoid.has(c.storage_id))
      .map((c) => configured.get(c.storage_id)?.location)
      .filter((l): l is string => l !== undefined),
  );
  const targets = deps.storageElements.filter(
    (s) => !held.has(s.location) && !avoid.has(s.storage_id) && !copies.some((c) => c.storage_id === s.storage_id),
  );
  const first = sources[0];
  if (!first) {
    throw new PolyvisionError('replica_source_unavailable', `file ${file.file_id} has no readable verified copy`, {
      retriable: true,
      details: { file_id: file.file_id },
    });
  }
  if (targets.length === 0) {
    throw new PolyvisionError(
      'replica_not_placeable',
      `file ${file.file_id}: no usable storage element in a datacenter without a copy`,
      { retriable: true, details: { file_id: file.file_id, datacenters_with_copies: [...held] } },
    );
  }
  const allowed = new Set(targets.map((t) => t.storage_id));
  const capacity: CapacityView = {
    candidates: async () => (await deps.capacity.candidates()).filter((c) => allowed.has(c.storage_id)),
    triggerLazyUpdate: (id) => deps.capacity.triggerLazyUpdate(id),
    noteReservation: (id, bytes) => deps.capacity.noteReservation(id, bytes),
  };
  const placed = await placeFile(
    { capacity, reserver: deps.client, storageElements: targets },
    Math.max(1, file.size_bytes),
    { ...deps.placement, preferredLocations: [] },
  );
  const target = placed.se;
  const objectKey = first.object_key;
  if (
    !(await insertPendingCopy(deps.db, {
      file_id: file.file_id,
      storage_id: target.storage_id,
      object_key: objectKey,
      sha256: file.sha256,
    }))
  ) {
    await deps.client.releaseReservation(target, placed.reservationId).catch(() => undefined);
    throw new PolyvisionError('replica_busy', `file ${file.file_id} already has a copy on ${target.storage_id}`, {
      retriable: true,
    });
  }
  try {
    await writeCopy(
      deps.client,
      target,
      placed.reservationId,
      file,
      objectKey,
      sources.map((s) => ({ copy: s, se: configured.get(s.storage_id) as StorageElementConfig })),
      options.signal,
    );
  } catch (error) {
    await dropCopy(deps.db, file.file_id, target.storage_id).catch(() => undefined);
    throw error;
  }
  await markVerified(deps.db, file.file_id, target.storage_id);
  logger.info(
    { file_id: file.file_id, from: first.storage_id, to: target.storage_id, size_bytes: file.size_bytes },
    'copy verified',
  );
  const now = new Date().toISOString();
  return {
    file_id: file.file_id,
    storage_id: target.storage_id,
    object_key: objectKey,
    state: 'verified',
    sha256: file.sha256,
    verified_at: now,
    created_at: now,
  };
}

/** Streams the file from the first source that answers to a resumable upload on `target`, then completes it. */
async function writeCopy(
  client: StorageElementClient,
  target: StorageElementConfig,
  reservationId: string,
  file: CatalogFile,
  objectKey: string,
  sources: ReadonlyArray<{ copy: FileCopy; se: StorageElementConfig }>,
  signal: AbortSignal | undefined,
): Promise<void> {
  let uploadId: string;
  try {
    uploadId = (
      await client.createUpload(target, {
        file_id: objectKey,
        size_bytes: file.size_bytes,
        sha256: file.sha256,
        reservation_id: reservationId,
      })
    ).upload_id;
  } catch (error) {
    await client.releaseReservation(target, reservationId).catch(() => undefined);
    if (isStatus(error, 409) && peerCode(error) === 'file_exists') {
      // The target already holds a file under this name: a copy if its bytes are the same.
      const existing = await client.statFile(target, objectKey);
      if (existing?.sha256 === file.sha256 && existing.sizeBytes === file.size_bytes) return;
    }
    throw error;
  }
  try {
    let offset = 0;
    let lastError: unknown;
    for (const { se } of sources) {
      if (offset >= file.size_bytes) break;
      try {
        const opened = await client.openFile(se, objectKey, { startByte: offset, ...(signal ? { signal } : {}) });
        if (opened.status === 200 && offset > 0) {
          opened.body.destroy();
          throw new PolyvisionError(
            'replica_range_ignored',
            `${se.storage_id} sent ${objectKey} whole, not from ${offset}`,
          );
        }
        offset = await client.append(target, uploadId, offset, opened.body, signal);
      } catch (error) {
        lastError = error;
        offset = await client.uploadOffset(target, uploadId).catch(() => offset);
      }
    }
    if (offset < file.size_bytes) {
      throw new PolyvisionError(
        'replica_source_unavailable',
        `file ${file.file_id}: no source copy could be read to the end`,
        {
          retriable: true,
          cause: lastError,
          details: { file_id: file.file_id, offset_bytes: offset },
        },
      );
    }
    await client.complete(target, uploadId, file.sha256);
  } catch (error) {
    await client.abort(target, uploadId).catch(() => undefined);
    await client.releaseReservation(target, reservationId).catch(() => undefined);
    throw error;
  }
}
