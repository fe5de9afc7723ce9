/**
 * The spool: recorded segments on local disk plus their journal
 * (journal.ts), with the rules that keep recorded data safe:
 * - a segment enters the spool by `add()`: the file is fsynced, renamed into
 *   `segments/` under a name that carries its identity
 *   (`<match>__<kind>__<source>__<seq>.mp4`), the folder fsynced, its
 *   SHA-256 computed, and only then the journal row committed; after a crash
 *   between rename and insert, `open()` finds the file and journals it;
 * - a file is deleted only after `confirm()` with the sha256 the core
 *   reported matching the journal's;
 * - the disk guard (`guard()`) frees space by deleting confirmed files that
 *   were kept (`keepConfirmedMs`), camera segments before panoramas, oldest
 *   first, and raises `spool_disk_low` when that is not enough. Unconfirmed
 *   data is never deleted.
 */
import { mkdir, readdir, rename, rm, stat, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type Logger,
  matchEndFileName,
  matchStartFileName,
  PolyvisionError,
  silentLogger,
  ValidationError,
} from '@polyvision/shared';
import type { Alarms } from '../alarms/index.ts';
import { fsyncDir, fsyncFile, sha256File } from './durable-files.ts';
import { Journal, type SegmentKind, type SegmentRow } from './journal.ts';

/** Options of {@link Spool.open}. */
export interface SpoolOptions {
  /** Spool folder (created if missing). */
  dir: string;
  alarms: Alarms;
  logger?: Logger;
  /** Free space the guard keeps on the spool's file system, bytes. @defaultValue 256 MiB */
  minFreeBytes?: number;
  /** Largest total size of the files in the spool, bytes (0: no limit). @defaultValue 0 */
  maxSpoolBytes?: number;
  /** How long confirmed files are kept before deletion, ms (0: delete at once). @defaultValue 0 */
  keepConfirmedMs?: number;
  now?: () => number;
}

/** Identity of a new segment. */
export interface SegmentIdentity {
  matchId: string;
  kind: SegmentKind;
  /** Camera id, or `panorama`. */
  source: string;
  seq: number;
}

const NAME = /^([A-Za-z0-9_-]+?)__(camera|panorama|artifact)__([A-Za-z0-9_-]+?)__(\d+)\.(mp4|json)$/;
const SAFE = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/** The file name that carries a segment's identity (`.json` for an artifact, `.mp4` for video). */
export function segmentFileName(id: SegmentIdentity): string {
  const extension = id.kind === 'artifact' ? 'json' : 'mp4';
  return `${id.matchId}__${id.kind}__${id.source}__${String(id.seq).padStart(6, '0')}.${extension}`;
}

/**
 * The file name the core catalogues for a spooled file (tus `filename`):
 * an artifact is named by its source (`venue` → `venue.json`, which ingest
 * looks up to give the match's jobs their calibration); the start-of-match
 * marker (source `match-start`, seq = the first panorama slot) is
 * `match-start-<slot>.json` (ingest: `match.open`); the end-of-match
 * marker (source `match-end`, seq = the last panorama slot) is
 * `match-end-<slot>.json` (shared `matchEndFileName`), which ingest turns into
 * the match job's `match.end`; video keeps its spool name.
 */
export function uploadFileName(row: Pick<SegmentRow, 'kind' | 'source' | 'fileName' | 'seq'>): string {
  if (row.kind === 'artifact' && row.source === MATCH_END_SOURCE) return matchEndFileName(row.seq);
  if (row.kind === 'artifact' && row.source === MATCH_START_SOURCE) return matchStartFileName(row.seq);
  return row.kind === 'artifact' ? `${row.source}.json` : row.fileName;
}

/** Spool source of a match's end marker (an `artifact`; its seq is the match's last panorama slot). */
export const MATCH_END_SOURCE = 'match-end';

/** Spool source of a match's start marker (an `artifact`; its seq is the match's first panorama slot). */
export const MATCH_START_SOURCE = 'match-start';

/** A disk check's outcome. */
export interface GuardResult {
  ok: boolean;
  freeBytes: number;
  spoolBytes: number;
  /** Files deleted to make room. */
  freedFiles: number;
}

export class Spool {
  readonly dir: string;
  readonly segmentsDir: string;
  readonly journal: Journal;
  readonly #alarms: Alarms;
  readonly #logger: Logger;
  readonly #minFreeBytes: number;
  readonly #maxSpoolBytes: number;
  readonly #keepConfirmedMs: number;
  readonly #now: () => number;
  readonly #listeners = new Set<(row: SegmentRow) => void>();

  private constructor(options: SpoolOptions, journal: Journal) {
    this.dir = options.dir;
    this.segmentsDir = join(options.dir, 'segments');
    this.journal = journal;
    this.#alarms = options.alarms;
    this.#logger = options.logger ?? silentLogger;
    this.#minFreeBytes = options.minFreeBytes ?? 256 * 1024 * 1024;
    this.#maxSpoolBytes = options.maxSpoolBytes ?? 0;
    this.#keepConfirmedMs = options.keepConfirmedMs ?? 0;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Opens the spool, then recovers: files in `segments/` without a row are
   * journaled (crash between rename and insert); rows whose file is missing
   * raise `spool_segment_missing` (critical); leftover temporary files are removed.
   *
   * @throws PolyvisionError `spool_journal_unreadable`; the file system's errors (EACCES).
   */
  static async open(options: SpoolOptions): Promise<Spool> {
    await mkdir(join(options.dir, 'segments'), { recursive: true });
    const spool = new Spool(options, new Journal(join(options.dir, 'journal.sqlite')));
    await spool.#recover();
    return spool;
  }

  async #recover(): Promise<void> {
    const known = new Map(this.journal.all().map((r) => [r.fileName, r]));
    for (const name of await readdir(this.segmentsDir)) {
      if (known.has(name)) continue;
      const m = NAME.exec(name);
      if (!m) {
        await rm(join(this.segmentsDir, name), { force: true });
        this.#logger.warn({ file: name }, 'spool: removed a file that is not a segment');
        continue;
      }
      const path = join(this.segmentsDir, name);
      await fsyncFile(path);
      const { sha256, sizeBytes } = await sha256File(path);
      this.journal.add({
        matchId: m[1] as string,
        kind: m[2] as SegmentKind,
        source: m[3] as string,
        seq: Number(m[4]),
        fileName: name,
        sizeBytes,
        sha256,
        createdAtMs: (await stat(path)).mtimeMs,
      });
      this.#logger.info({ file: name }, 'spool: journaled a segment found after a crash');
    }
    for (const row of this.journal.list(['pending', 'uploading', 'unconfirmed'])) {
      const exists = await stat(this.pathOf(row)).then(
        () => true,
        () => false,
      );
      if (!exists) {
        this.#alarms.raise(
          'spool_segment_missing',
          row.fileName,
          `recorded segment ${row.fileName} is missing from the spool`,
          {
            severity: 'critical',
          },
        );
      }
    }
  }

  /** Absolute path of a row's file. */
  pathOf(row: Pick<SegmentRow, 'fileName'>): string {
    return join(this.segmentsDir, row.fileName);
  }

  /** Called with each newly journaled segment (the uploader wakes up on it). */
  onAdded(listener: (row: SegmentRow) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Moves a completed file into the spool and journals it (see the module
   * comment for the order of fsyncs). Idempotent: adding an identity the
   * journal already has returns the existing row, keeps the journaled file
   * and removes `path` (a re-delivered duplicate).
   *
   * @throws ValidationError `spool_bad_identity` for ids that are not safe file-name parts;
   *   PolyvisionError `spool_file_missing` when `path` does not exist.
   */
  async add(path: string, id: SegmentIdentity): Promise<SegmentRow> {
    // One add at a time: two adds of one identity must not both rename onto the same file.
    const run = this.#adding.then(() => this.#add(path, id));
    this.#adding = run.catch(() => {});
    return run;
  }

  #adding: Promise<unknown> = Promise.resolve();

  async #add(path: string, id: SegmentIdentity): Promise<SegmentRow> {
    for (const [k, v] of [
      ['match id', id.matchId],
      ['source', id.source],
    ] as const) {
      if (!SAFE.test(v) || v.includes('__')) {
        throw new ValidationError(
          'spool_bad_identity',
          `${k} ${JSON.stringify(v)} is not a safe name ([A-Za-z0-9_-], no "__")`,
        );
      }
    }
    if (!Number.isSafeInteger(id.seq) || id.seq < 0) {
      throw new ValidationError('spool_bad_identity', `segment index ${id.seq} must be a non-negative integer`);
    }
    const fileName = segmentFileName(id);
    const target = join(this.segmentsDir, fileName);
    const existing = this.journal.find(id);
    if (existing) {
      if (path !== target) {
        const incoming = await sha256File(path).catch(() => null);
        if (incoming && incoming.sha256 !== existing.sha256) {
          // Same identity, other bytes: never drop data silently; park it and tell the operator.
          const parked = join(this.dir, 'conflicts', `${fileName}.${this.#now()}`);
          await mkdir(join(this.dir, 'conflicts'), { recursive: true });
          await rename(path, parked);
          this.#alarms.raise(
            'spool_identity_conflict',
            fileName,
            `a second, different segment claims ${fileName}; it was kept as ${parked}`,
            { severity: 'critical' },
          );
        } else {
          // Already spooled (re-delivered after a crash): keep the journaled bytes, drop the copy.
          await rm(path, { force: true });
        }
      }
      return existing;
    }
    if (path !== target) {
      try {
        await fsyncFile(path);
      } catch (error) {
        throw new PolyvisionError(
          'spool_file_missing',
          `cannot add ${path} to the spool: ${(error as Error).message}`,
          {
            cause: error,
          },
        );
      }
      await rename(path, target);
      await fsyncDir(this.segmentsDir);
    }
    const { sha256, sizeBytes } = await sha256File(target);
    const { row, created } = this.journal.add({ ...id, fileName, sha256, sizeBytes, createdAtMs: this.#now() });
    if (created) {
      this.#logger.debug({ file: fileName, size_bytes: sizeBytes }, 'spool: segment added');
      for (const listener of this.#listeners) listener(row);
    }
    return row;
  }

  /** Segments waiting for upload (pending or mid-upload), panoramas first, oldest first. */
  waiting(): SegmentRow[] {
    return this.journal.list(['pending', 'uploading']);
  }

  /**
   * Records the core's confirmation. When `coreSha256` matches the journal,
   * the segment is `confirmed` and its file deleted (or kept for
   * `keepConfirmedMs`); otherwise the alarm `upload_sha256_mismatch` is raised
   * and the segment goes back to `pending` for a fresh upload.
   *
   * @returns whether the confirmation matched.
   */
  async confirm(id: number, coreSha256: string): Promise<boolean> {
    const row = this.journal.get(id);
    if (!row) return false;
    if (coreSha256.toLowerCase() !== row.sha256) {
      this.#alarms.raise(
        'upload_sha256_mismatch',
        row.fileName,
        `the core reported sha256 ${coreSha256} for ${row.fileName}, the spool has ${row.sha256}: uploading again`,
        { severity: 'critical' },
      );
      this.journal.clearUploadUrl(id);
      this.journal.setState(id, 'pending');
      return false;
    }
    this.journal.setState(id, 'confirmed', this.#now());
    this.#alarms.clear('upload_unconfirmed', row.fileName);
    if (this.#keepConfirmedMs === 0) await this.#delete(row);
    return true;
  }

  /** The upload completed but the core did not confirm the sha256: keep the file, raise an alarm. */
  markUnconfirmed(id: number, reason: string): void {
    const row = this.journal.get(id);
    if (!row) return;
    this.journal.setState(id, 'unconfirmed');
    this.#alarms.raise('upload_unconfirmed', row.fileName, `${row.fileName} was uploaded but not confirmed: ${reason}`);
  }

  async #delete(row: SegmentRow): Promise<void> {
    await rm(this.pathOf(row), { force: true });
    await fsyncDir(this.segmentsDir);
    this.journal.setState(row.id, 'deleted');
  }

  /** Free bytes on the spool's file system (statfs: available blocks × block size). */
  async freeBytes(): Promise<number> {
    const s = await statfs(this.dir);
    return Number(s.bavail) * Number(s.bsize);
  }

  /** Total size of the files still in the spool, bytes. */
  spoolBytes(): number {
    return this.journal
      .all()
      .filter((r) => r.state !== 'deleted')
      .reduce((sum, r) => sum + r.sizeBytes, 0);
  }

  /**
   * Retention and disk guard: deletes confirmed files older than
   * `keepConfirmedMs`; then, while free space is under `minFreeBytes` or the
   * spool is over `maxSpoolBytes`, deletes the remaining confirmed files
   * (camera segments before panoramas, oldest first). If that is not enough,
   * raises `spool_disk_low` (critical) and returns `ok: false`: the caller
   * stops starting new recordings; nothing unconfirmed is ever deleted.
   */
  async guard(): Promise<GuardResult> {
    let freed = 0;
    const now = this.#now();
    const confirmed = this.journal
      .list(['confirmed'])
      .sort((a, b) => (a.kind === b.kind ? a.createdAtMs - b.createdAtMs : a.kind === 'camera' ? -1 : 1));
    for (const row of confirmed) {
      if (now - (row.confirmedAtMs ?? 0) >= this.#keepConfirmedMs) {
        await this.#delete(row);
        freed++;
      }
    }
    const short = async () => {
      const free = await this.freeBytes();
      const spool = this.spoolBytes();
      return {
        free,
        spool,
        short: free < this.#minFreeBytes || (this.#maxSpoolBytes > 0 && spool > this.#maxSpoolBytes),
      };
    };
    let state = await short();
    for (const row of this.journal
      .list(['confirmed'])
      .sort((a, b) => (a.kind === b.kind ? a.createdAtMs - b.createdAtMs : a.kind === 'camera' ? -1 : 1))) {
      if (!state.short) break;
      await this.#delete(row);
      freed++;
      state = await short();
    }
    if (state.short) {
      this.#alarms.raise(
        'spool_disk_low',
        'disk',
        `the spool has ${state.free} bytes free (needs ${this.#minFreeBytes}) and holds ${state.spool} bytes not yet confirmed by the core: new recordings are paused`,
        { severity: 'critical', details: { free_bytes: state.free, spool_bytes: state.spool } },
      );
    } else {
      this.#alarms.clear('spool_disk_low');
    }
    return { ok: !state.short, freeBytes: state.free, spoolBytes: state.spool, freedFiles: freed };
  }

  close(): void {
    this.journal.close();
  }
}
