import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import {
  access,
  constants,
  link,
  mkdir,
  open,
  readdir,
  readFile,
  rename,
  stat,
  statfs,
  unlink,
} from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { seErrors } from '../../errors.ts';
import { fsyncDir } from '../../reservations/snapshot-file.ts';
import type { BackendProbe, BlobBackend, ByteRange, FileMeta } from '../blob-backend.ts';

/** Options of {@link LocalBackend}. */
export interface LocalBackendOptions {
  /** The SE's data folder; files go to `<dataDir>/files`, metadata to `<dataDir>/meta`. */
  dataDir: string;
  /** Optional quota, bytes (`STORAGE_CAPACITY_LIMIT_BYTES`). */
  capacityLimitBytes?: number | undefined;
}

function isErrno(error: unknown, code: string): boolean {
  return (error as NodeJS.ErrnoException | undefined)?.code === code;
}

/**
 * Files on a local filesystem.
 *
 * Layout: `<dataDir>/files/<file_id>` holds the bytes, `<dataDir>/meta/<file_id>.json`
 * the {@link FileMeta}. A file is visible exactly when `files/<file_id>` exists:
 * publishing writes the metadata first (atomic replace), then hard-links the
 * fsynced staged file into `files/` (`link(2)` fails instead of
 * overwriting, so publication is atomic and never clobbers), then fsyncs the
 * folders. Orphan metadata left by a crash is swept at `init`.
 *
 * Capacity (seed CapacityService, local branch): `statfs` of the data folder;
 * with a quota, `total = min(quota, filesystem size)` and `used` = bytes this
 * SE holds (files + staged bytes), `free = min(filesystem free, total − used)`.
 */
export class LocalBackend implements BlobBackend {
  readonly kind = 'local' as const;
  readonly #filesDir: string;
  readonly #metaDir: string;
  readonly #dataDir: string;
  readonly #quotaBytes: number | undefined;
  #storedBytes = 0;

  constructor(options: LocalBackendOptions) {
    this.#dataDir = options.dataDir;
    this.#filesDir = join(options.dataDir, 'files');
    this.#metaDir = join(options.dataDir, 'meta');
    this.#quotaBytes = options.capacityLimitBytes;
  }

  /** Bytes of all visible files. */
  get storedBytes(): number {
    return this.#storedBytes;
  }

  async init(): Promise<void> {
    await mkdir(this.#filesDir, { recursive: true });
    await mkdir(this.#metaDir, { recursive: true });
    let stored = 0;
    const files = new Set(await readdir(this.#filesDir));
    for (const name of files) stored += (await stat(join(this.#filesDir, name))).size;
    for (const name of await readdir(this.#metaDir)) {
      const fileId = name.replace(/\.json(\.tmp)?$/, '');
      if (name.endsWith('.tmp') || !files.has(fileId)) await unlink(join(this.#metaDir, name)).catch(() => {});
    }
    for (const fileId of files) {
      if (!(await this.#readMeta(fileId))) await this.#writeMeta(await this.#describe(fileId));
    }
    this.#storedBytes = stored;
  }

  async probe(stagedBytes: number): Promise<BackendProbe> {
    let failure: string | undefined;
    try {
      await access(this.#dataDir, constants.W_OK);
    } catch (error) {
      failure = isErrno(error, 'EROFS')
        ? 'read-only filesystem'
        : `data folder not writable: ${(error as Error).message}`;
    }
    const fs = await statfs(this.#dataDir);
    const fsTotal = fs.blocks * fs.bsize;
    const fsFree = fs.bavail * fs.bsize;
    const fsUsed = (fs.blocks - fs.bfree) * fs.bsize;
    const freeInodeRatio = fs.files > 0 ? fs.ffree / fs.files : 1;
    if (this.#quotaBytes === undefined) {
      return { totalBytes: fsTotal, usedBytes: fsUsed, freeBytes: fsFree, freeInodeRatio, failure };
    }
    const totalBytes = Math.min(this.#quotaBytes, fsTotal);
    const usedBytes = this.#storedBytes + stagedBytes;
    return {
      totalBytes,
      usedBytes,
      freeBytes: Math.max(0, Math.min(fsFree, totalBytes - usedBytes)),
      freeInodeRatio,
      failure,
    };
  }

  async publish(stagedPath: string, meta: FileMeta): Promise<void> {
    const target = join(this.#filesDir, meta.fileId);
    if (await this.#exists(target)) throw seErrors.fileExists(meta.fileId);
    try {
      await this.#writeMeta(meta);
      await link(stagedPath, target);
    } catch (error) {
      if (isErrno(error, 'EEXIST')) throw seErrors.fileExists(meta.fileId);
      await unlink(join(this.#metaDir, `${meta.fileId}.json`)).catch(() => {});
      throw seErrors.storageFailure(`cannot publish ${meta.fileId}: ${(error as Error).message}`, error);
    }
    await fsyncDir(this.#filesDir);
    await unlink(stagedPath);
    this.#storedBytes += meta.sizeBytes;
  }

  async stat(fileId: string): Promise<FileMeta | undefined> {
    if (!(await this.#exists(join(this.#filesDir, fileId)))) return undefined;
    return (await this.#readMeta(fileId)) ?? (await this.#describe(fileId));
  }

  async read(fileId: string, range?: ByteRange): Promise<Readable> {
    try {
      const handle = await open(join(this.#filesDir, fileId), 'r');
      return handle.createReadStream({
        highWaterMark: 1 << 20,
        ...(range ? { start: range.start, end: range.end } : {}),
      });
    } catch (error) {
      if (isErrno(error, 'ENOENT')) throw seErrors.fileNotFound(fileId);
      throw seErrors.storageFailure(`cannot read ${fileId}: ${(error as Error).message}`, error);
    }
  }

  async delete(fileId: string): Promise<boolean> {
    const target = join(this.#filesDir, fileId);
    let sizeBytes: number;
    try {
      sizeBytes = (await stat(target)).size;
      await unlink(target);
    } catch (error) {
      if (isErrno(error, 'ENOENT')) return false;
      throw seErrors.storageFailure(`cannot delete ${fileId}: ${(error as Error).message}`, error);
    }
    await unlink(join(this.#metaDir, `${fileId}.json`)).catch(() => {});
    await fsyncDir(this.#filesDir);
    this.#storedBytes -= sizeBytes;
    return true;
  }

  async close(): Promise<void> {}

  async #exists(path: string): Promise<boolean> {
    try {
      await stat(path);
      return true;
    } catch (error) {
      if (isErrno(error, 'ENOENT')) return false;
      throw error;
    }
  }

  async #readMeta(fileId: string): Promise<FileMeta | undefined> {
    try {
      return JSON.parse(await readFile(join(this.#metaDir, `${fileId}.json`), 'utf8')) as FileMeta;
    } catch {
      return undefined;
    }
  }

  async #writeMeta(meta: FileMeta): Promise<void> {
    const path = join(this.#metaDir, `${meta.fileId}.json`);
    const handle = await open(`${path}.tmp`, 'w');
    try {
      await handle.writeFile(JSON.stringify(meta), 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(`${path}.tmp`, path);
    await fsyncDir(this.#metaDir);
  }

  /** Metadata for a file found without any (placed by hand): hashes it. */
  async #describe(fileId: string): Promise<FileMeta> {
    const path = join(this.#filesDir, fileId);
    const info = await stat(path);
    const hash = createHash('sha256');
    for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
    return {
      fileId,
      sizeBytes: info.size,
      sha256: hash.digest('hex'),
      contentType: 'application/octet-stream',
      createdAt: info.mtime.toISOString(),
    };
  }
}
