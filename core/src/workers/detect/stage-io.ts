import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
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
   * Stores a local file under `objectKey` (overwriting: a re-run writes the same keys) and returns its ref.
   */
  writeOutput(
    output: { kind: string; objectKey: string; localPath: string; contentType?: string },
    signal?: AbortSignal,
  ): Promise<ArtifactRef>;
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

  async writeOutput(output: {
    kind: string;
    objectKey: string;
    localPath: string;
    contentType?: string;
  }): Promise<ArtifactRef> {
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

/**
 * The first input of one of `kinds` (in order of preference).
 *
 * @throws PolyvisionError `input_missing` (not retriable) when none is there.
 */
export function findInput(task: StageTask, kinds: readonly string[]): ArtifactRef {
  for (const kind of kinds) {
    const ref = task.inputs.find((i) => i.kind === kind);
    if (ref) return ref;
  }
  throw new PolyvisionError(
    'input_missing',
    `stage ${task.stage} of job ${task.job_id} needs an input of kind ${kinds.join(' or ')}; got ${
      task.inputs.map((i) => i.kind).join(', ') || 'none'
    }`,
  );
}

/** The object key of a stage output: `<org>/<match>/<stage>/<model_version>/<name…>` (same on every re-run). */
export function outputKey(task: StageTask, ...name: string[]): string {
  const version = task.model_version.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '_');
  return [task.organization_id, task.match_id, task.stage, version, ...name].join('/');
}

/** Runs `fn` with a fresh work folder under `baseDir` (the system temp folder by default), removed afterwards. */
export async function withWorkDir<T>(fn: (dir: string) => Promise<T>, baseDir = tmpdir()): Promise<T> {
  await mkdir(baseDir, { recursive: true });
  const dir = await mkdtemp(join(baseDir, 'pv-stage-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Calls `report` at most every `intervalMs` (always for the final 1). */
export function throttle(report: (fraction: number) => void, intervalMs = 500): (fraction: number) => void {
  let last = 0;
  return (fraction) => {
    const now = Date.now();
    if (fraction >= 1 || now - last >= intervalMs) {
      last = now;
      report(fraction);
    }
  };
}

/** Where the stage handlers keep artifacts and scratch files, from the environment. */
export interface StageIoConfig {
  /** `WORKER_ARTIFACT_DIR`: root of the local artifact store. @defaultValue `.work/artifacts` */
  artifactDir: string;
  /** `WORKER_ARTIFACT_STORAGE_ID`: the storage id its refs carry. @defaultValue `local` */
  storageId: string;
  /** `WORKER_WORK_DIR`: scratch folders for one task each. @defaultValue the system temp folder */
  workDir: string;
}

/** Reads {@link StageIoConfig} from the environment. */
export function stageIoConfig(env: Record<string, string | undefined>): StageIoConfig {
  return {
    artifactDir: env.WORKER_ARTIFACT_DIR || '.work/artifacts',
    storageId: env.WORKER_ARTIFACT_STORAGE_ID || 'local',
    workDir: env.WORKER_WORK_DIR || tmpdir(),
  };
}
