import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { copyFile, mkdir, rename, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { ArtifactRef, StageTask } from '@polyvision/shared';
import { PolyvisionError } from '@polyvision/shared';

/**
 * How a stage reads its inputs and stores its outputs — the one seam between
 * the pure stage libraries and storage. Stages only need files on local
 * disk (ffmpeg and onnxruntime read paths), so reading means "give me a
 * local path"; an SE-backed implementation downloads (or `Range`-streams)
 * into the work folder, a local one returns the path in place.
 */
export interface ArtifactIo {
  /**
   * A local path holding the artifact's bytes.
   * @throws PolyvisionError `input_unavailable` (retriable) when it cannot be fetched now.
   */
  openInput(ref: ArtifactRef, workDir: string, signal?: AbortSignal): Promise<string>;
  /**
   * Stores a local file as output `objectKey` and returns its ref. Idempotent: a re-run of the same task
   * writes the same keys; the same bytes give the same ref (see StorageElementArtifactIo for the catalog rule).
   */
  writeOutput(output: OutputFile, signal?: AbortSignal): Promise<ArtifactRef>;
}

/** Who produced an output: its identity in the catalog is (job, object key); the key holds stage and model version. */
export type OutputProducer = Pick<StageTask, 'job_id' | 'stage' | 'organization_id' | 'match_id' | 'model_version'>;

/** One output file of a stage. */
export interface OutputFile {
  /** What it is (`detections`, `tracks`, `vcam`, `hls`, …). */
  kind: string;
  /** Its logical key, `<org>/<match>/<stage>/<model_version>/<name…>` (detect/stage-io.ts `outputKey`). */
  objectKey: string;
  /** The local file holding its bytes. */
  localPath: string;
  contentType?: string;
  /** The task that made it; required by stores that keep a catalog (StorageElementArtifactIo). */
  task?: OutputProducer;
}

/** sha256 (hex) and size of a local file. */
export async function digestFile(path: string): Promise<{ sha256: string; sizeBytes: number }> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return { sha256: hash.digest('hex'), sizeBytes: (await stat(path)).size };
}

/**
 * Artifacts in a local folder (`<root>/<object_key>`), reported with
 * `storage_id` = `storageId`: the embedded demo's store and the tests'. Inputs
 * from other storage ids are refused (`input_unavailable`), so a missing SE
 * wiring fails loudly instead of reading the wrong file.
 */
export class LocalArtifactIo implements ArtifactIo {
  readonly root: string;
  readonly storageId: string;
  constructor(root: string, storageId = 'local') {
    this.root = resolve(root);
    this.storageId = storageId;
  }

  #path(objectKey: string): string {
    const path = resolve(this.root, objectKey);
    if (!path.startsWith(`${this.root}/`)) {
      throw new PolyvisionError('object_key_invalid', `object key ${objectKey} leaves the store`);
    }
    return path;
  }

  async openInput(ref: ArtifactRef): Promise<string> {
    if (ref.storage_id !== this.storageId) {
      throw new PolyvisionError(
        'input_unavailable',
        `artifact ${ref.object_key} is on ${ref.storage_id}; this worker reads only ${this.storageId}`,
        { retriable: false },
      );
    }
    const path = this.#path(ref.object_key);
    const exists = await stat(path).then(
      (s) => s.isFile(),
      () => false,
    );
    if (!exists) {
      throw new PolyvisionError('input_unavailable', `artifact ${ref.object_key} not found in ${this.root}`, {
        retriable: true,
      });
    }
    return path;
  }

  async writeOutput(output: OutputFile): Promise<ArtifactRef> {
    const target = this.#path(output.objectKey);
    await mkdir(dirname(target), { recursive: true });
    const temporary = `${target}.${process.pid}.part`;
    await copyFile(output.localPath, temporary);
    await rename(temporary, target);
    const { sha256, sizeBytes } = await digestFile(target);
    return {
      kind: output.kind,
      storage_id: this.storageId,
      object_key: output.objectKey,
      size_bytes: sizeBytes,
      sha256,
      ...(output.contentType ? { content_type: output.contentType } : {}),
    };
  }
}
