import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { type ArtifactRef, type Logger, PolyvisionError, silentLogger } from '@polyvision/shared';
import type { StorageElementConfig } from '../../capacity/index.ts';
import type { Database } from '../../db/index.ts';
import { type CapacityView, type PlacementOptions, placeFile } from '../../ingest/placement.ts';
import { InsufficientStorageError, type StorageElementClient } from '../../ingest/se-client.ts';
import { copiesOfLocation } from '../../replication/copies.ts';
import { type ArtifactIo, digestFile, type OutputFile } from './artifact-io.ts';
import { downloadFile } from './download.ts';
import { findOutput, forgetOutput, type OutputRow, recordOutput } from './output-catalog.ts';
import { outputFileId } from './output-file-id.ts';
import { uploadFile } from './upload.ts';

/** Options of {@link StorageElementArtifactIo}. */
export interface StorageElementArtifactIoOptions {
  /** The configured SEs (`STORAGE_ELEMENTS` / `STORAGE_ELEMENTS_FILE`). */
  storageElements: readonly StorageElementConfig[];
  client: StorageElementClient;
  /** Capacity cache reader (ingest's monitor as a follower), or a blind view without Redis. */
  capacity: CapacityView;
  /** The database holding the `files` catalog. */
  db: Database;
  /** Placement settings, as ingest's (`WORKER_PLACEMENT_MAX_ATTEMPTS`, …). */
  placement: PlacementOptions;
  /** Tries of a download or an append loop (shared `retry()`). @defaultValue 5 */
  transferAttempts?: number;
  logger?: Logger;
}

/**
 * Stage inputs and outputs on storage elements (issue 7: "every stage reads
 * its inputs from storage elements … writes its outputs back to storage
 * elements and the catalog … idempotent").
 *
 * Reading ({@link openInput}): the ref's `storage_id` names the SE in the
 * configured list; its file `object_key` is downloaded into the task's work
 * folder (download.ts: streamed, resumed with `Range` after a cut, SHA-256
 * checked). The tools need files (ffmpeg seeks, onnxruntime), so a local copy
 * is made once per task.
 *
 * Writing ({@link writeOutput}), idempotent per output identity
 * (`job_id`, logical key `<org>/<match>/<stage>/<model_version>/<name>`):
 * 1. hash the local file; if the catalog already has this identity with the
 *    same SHA-256 and its SE still has the file, return that row: nothing is written;
 * 2. otherwise place it as ingest does (placement.ts + selector.ts over the
 *    capacity cache: reservation before bytes, `507` → lazy update and the
 *    next SE), upload it (upload.ts) under the deterministic file id
 *    (output-file-id.ts), and record it (output-catalog.ts);
 * 3. new bytes for an existing identity replace its row; the old file is
 *    then deleted on its SE where the SE's mode allows (`edit`), otherwise
 *    left there (logged) — SEs in `rw` keep every byte they were given.
 *
 * The ref returned carries the SE (`storage_id`) and the SE file id as
 * `object_key`, so the next stage reads it with {@link openInput}.
 */
export class StorageElementArtifactIo implements ArtifactIo {
  readonly #o: StorageElementArtifactIoOptions;
  readonly #logger: Logger;
  readonly #attempts: number;

  constructor(options: StorageElementArtifactIoOptions) {
    this.#o = options;
    this.#logger = options.logger ?? silentLogger;
    this.#attempts = options.transferAttempts ?? 5;
  }

  #se(storageId: string): StorageElementConfig | undefined {
    return this.#o.storageElements.find((s) => s.storage_id === storageId);
  }

  /**
   * Downloads the artifact into `<workDir>/inputs/<storage_id>/<object_key>`
   * (again only if it is not there yet) and returns that path.
   *
   * Replicas (core/src/replication): when the catalog knows other verified
   * copies of the file, each copy is tried once in turn, the ref's own SE
   * first, so a read falls back to another SE when the first one is down.
   *
   * @throws PolyvisionError `input_unavailable` — not retriable when the SE is
   *   not configured here (and no copy is), retriable when no copy can be
   *   reached or they answer 5xx; `input_missing` (not retriable) when the SE has no such file;
   *   `input_checksum_mismatch` (not retriable); `aborted`.
   */
  async openInput(ref: ArtifactRef, workDir: string, signal?: AbortSignal): Promise<string> {
    const path = join(workDir, 'inputs', ref.storage_id, ...ref.object_key.split('/'));
    const copies = await copiesOfLocation(this.#o.db, ref.storage_id, ref.object_key).catch(() => []);
    const others = copies.filter((c) => c.storage_id !== ref.storage_id && this.#se(c.storage_id));
    if (others.length === 0) return this.#download(ref, ref.storage_id, ref.object_key, path, this.#attempts, signal);
    const tries = [{ storage_id: ref.storage_id, object_key: ref.object_key }, ...others];
    const errors: unknown[] = [];
    for (const copy of tries) {
      if (!this.#se(copy.storage_id)) continue;
      try {
        return await this.#download(ref, copy.storage_id, copy.object_key, path, 1, signal);
      } catch (error) {
        if (error instanceof PolyvisionError && error.code === 'aborted') throw error;
        errors.push(error);
        this.#logger.warn(
          { err: error, storage_id: copy.storage_id, object_key: copy.object_key },
          'input copy not readable; trying the next copy',
        );
      }
    }
    const retriable = errors.some((e) => e instanceof PolyvisionError && e.retriable);
    if (!retriable && errors[0]) throw errors[0];
    throw new PolyvisionError(
      'input_unavailable',
      `no copy of ${ref.object_key} could be read (${tries.map((t) => t.storage_id).join(', ')})`,
      { retriable: true, cause: errors.at(-1), details: { storage_id: ref.storage_id, copies: tries.length } },
    );
  }

  async #download(
    ref: ArtifactRef,
    storageId: string,
    objectKey: string,
    path: string,
    attempts: number,
    signal: AbortSignal | undefined,
  ): Promise<string> {
    const se = this.#se(storageId);
    if (!se) {
      throw new PolyvisionError(
        'input_unavailable',
        `artifact ${objectKey} is on ${storageId}, which is not in this worker's STORAGE_ELEMENTS (${this.#o.storageElements
          .map((s) => s.storage_id)
          .join(', ')})`,
        { retriable: false, details: { storage_id: storageId } },
      );
    }
    const result = await downloadFile(this.#o.client, se, objectKey, path, {
      sizeBytes: ref.size_bytes,
      sha256: ref.sha256,
      retry: { attempts },
      ...(signal ? { signal } : {}),
    });
    this.#logger.debug(
      {
        storage_id: se.storage_id,
        object_key: objectKey,
        size_bytes: result.sizeBytes,
        requests: result.requests,
      },
      'input downloaded',
    );
    return path;
  }

  /**
   * Stores a stage output on an SE and in the catalog (see the class comment).
   *
   * @throws PolyvisionError `output_identity_missing` (not retriable) without
   *   `output.task`; `insufficient_storage` (HTTP 507, retriable at the stage
   *   level) when no SE takes it; `output_busy` (retriable) when open uploads
   *   of other writers hold both the file id and a second, random name; the SE client's errors.
   */
  async writeOutput(output: OutputFile, signal?: AbortSignal): Promise<ArtifactRef> {
    const task = output.task;
    if (!task) {
      throw new PolyvisionError(
        'output_identity_missing',
        `output ${output.objectKey}: the storage-element store needs the producing task (job id) to catalog it`,
      );
    }
    const { sha256, sizeBytes } = await digestFile(output.localPath);
    const existing = await findOutput(this.#o.db, task.job_id, output.objectKey);
    if (existing && existing.sha256 === sha256) {
      if (await this.#stillThere(existing)) return this.#ref(existing, output);
      // Catalogued, but its SE lost the file (or is no longer configured): write it again, somewhere.
      this.#logger.warn({ storage_id: existing.storage_id, file_id: existing.file_id }, 'catalogued output missing');
      await forgetOutput(this.#o.db, existing.file_id);
    }
    let fileId = outputFileId(task.job_id, output.objectKey, sha256);
    const excluded: string[] = [];
    let renamed = false;
    for (;;) {
      const placed = await placeFile(
        {
          capacity: this.#o.capacity,
          reserver: this.#o.client,
          storageElements: this.#o.storageElements.filter((s) => !excluded.includes(s.storage_id)),
        },
        Math.max(1, sizeBytes),
        this.#o.placement,
      );
      try {
        await uploadFile(this.#o.client, placed.se, {
          fileId,
          localPath: output.localPath,
          sizeBytes,
          sha256,
          reservationId: placed.reservationId,
          retry: { attempts: this.#attempts },
          ...(output.contentType ? { contentType: output.contentType } : {}),
          ...(signal ? { signal } : {}),
        });
      } catch (error) {
        if (error instanceof InsufficientStorageError && excluded.length + 1 < this.#o.placement.maxAttempts) {
          // The SE filled up under the write: mark it, place the file elsewhere.
          excluded.push(placed.se.storage_id);
          void this.#o.capacity.triggerLazyUpdate(placed.se.storage_id);
          continue;
        }
        if (error instanceof PolyvisionError && error.code === 'output_busy' && !renamed) {
          // An open upload of a dead run holds the id until its reservation lapses: take another name now.
          // The catalog, not the file id, is the output's identity, so a second name changes nothing else.
          renamed = true;
          fileId = `${fileId}-${randomBytes(4).toString('hex')}`;
          continue;
        }
        throw error;
      }
      const recorded = await recordOutput(this.#o.db, {
        file_id: fileId,
        storage_id: placed.se.storage_id,
        object_key: fileId,
        size_bytes: sizeBytes,
        sha256,
        kind: output.kind,
        content_type: output.contentType ?? null,
        job_id: task.job_id,
        stage: task.stage,
        model_version: task.model_version,
        organization_id: task.organization_id,
        match_id: task.match_id,
        output_key: output.objectKey,
        filename: output.objectKey.split('/').at(-1) ?? fileId,
        location: placed.se.location,
      });
      if (!recorded.inserted && recorded.row.storage_id !== placed.se.storage_id) {
        // A concurrent run recorded the same bytes on another SE first: ours are surplus.
        await this.#delete(placed.se.storage_id, fileId, 'duplicate of a concurrent run');
      }
      if (recorded.replaced && recorded.replaced.file_id !== recorded.row.file_id) {
        await this.#delete(recorded.replaced.storage_id, recorded.replaced.file_id, 'replaced by a re-run');
      }
      return this.#ref(recorded.row, output);
    }
  }

  /**
   * Whether a catalogued file is still on its SE (a configured SE answering HEAD with the same sha256). An SE
   * that cannot be reached counts as not having it: the output is written again elsewhere (availability first;
   * the old copy is left where it is).
   */
  async #stillThere(row: OutputRow): Promise<boolean> {
    const se = this.#se(row.storage_id);
    if (!se) return false;
    const stat = await this.#o.client.statFile(se, row.file_id).catch(() => null);
    return stat?.sha256 === row.sha256;
  }

  async #delete(storageId: string, fileId: string, why: string): Promise<void> {
    const se = this.#se(storageId);
    if (!se) return;
    const outcome = await this.#o.client.deleteFile(se, fileId).catch((error: unknown) => {
      this.#logger.warn({ err: error, storage_id: storageId, file_id: fileId }, 'old output not deleted');
      return 'failed' as const;
    });
    if (outcome === 'not_allowed') {
      this.#logger.info(
        { storage_id: storageId, file_id: fileId, why },
        'old output kept: its storage element allows deletes only in edit mode',
      );
    }
  }

  #ref(row: OutputRow, output: OutputFile): ArtifactRef {
    const contentType = row.content_type ?? output.contentType;
    return {
      kind: output.kind,
      storage_id: row.storage_id,
      object_key: row.object_key,
      size_bytes: row.size_bytes,
      sha256: row.sha256,
      ...(contentType ? { content_type: contentType } : {}),
    };
  }
}
