/**
 * The spool journal: one `node:sqlite` database (`journal.sqlite` in the
 * spool folder) holding every recorded segment and its upload state.
 *
 * Durability: WAL mode with `synchronous = FULL`, so every committed change
 * is fsynced to the write-ahead log before the call returns (SQLite, "Write-
 * Ahead Logging" and "PRAGMA synchronous"); the journal therefore survives
 * kill -9 and power loss as of its last committed statement. Segment files
 * are fsynced (with their folder) BEFORE their row is inserted, so a row
 * always points at a complete, durable file.
 *
 * Segment states: `pending` (recorded, not yet uploaded) → `uploading` (a tus
 * upload URL exists; resumable) → `confirmed` (the core answered with a
 * matching sha256) → `deleted` (file removed; the row stays as history so
 * that a re-scan never uploads the segment twice). `unconfirmed`: the upload
 * completed but the core did not confirm the sha256 (kept, alarm raised).
 */
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { PolyvisionError } from '@polyvision/shared';

/** The state of a segment in the spool. */
export type SegmentState = 'pending' | 'uploading' | 'unconfirmed' | 'confirmed' | 'deleted';
/**
 * `camera`: one camera's raw segment; `panorama`: a stitched segment;
 * `artifact`: a small file of the match (the venue calibration `venue.json`),
 * uploaded before the match's video.
 */
export type SegmentKind = 'camera' | 'panorama' | 'artifact';

/** A journal row. */
export interface SegmentRow {
  id: number;
  matchId: string;
  kind: SegmentKind;
  /** Camera id for camera segments, `panorama` for panoramas. */
  source: string;
  /** Segment index within the match. */
  seq: number;
  /** File name inside the spool folder. */
  fileName: string;
  sizeBytes: number;
  sha256: string;
  state: SegmentState;
  uploadUrl: string | null;
  attempts: number;
  lastError: string | null;
  createdAtMs: number;
  confirmedAtMs: number | null;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS segments (
  id INTEGER PRIMARY KEY,
  match_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('camera', 'panorama', 'artifact')),
  source TEXT NOT NULL,
  seq INTEGER NOT NULL,
  file_name TEXT NOT NULL UNIQUE,
  size_bytes INTEGER NOT NULL,
  sha256 TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'uploading', 'unconfirmed', 'confirmed', 'deleted')),
  upload_url TEXT,
  attempts INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  created_at_ms INTEGER NOT NULL,
  confirmed_at_ms INTEGER,
  UNIQUE (match_id, kind, source, seq)
);
CREATE INDEX IF NOT EXISTS segments_state ON segments (state, kind, created_at_ms);
`;

/**
 * Journals created before the `artifact` kind have a CHECK that refuses it;
 * SQLite cannot alter a CHECK, so the table is rebuilt (same rows, same ids)
 * in one transaction ("Making Other Kinds Of Table Schema Changes",
 * sqlite.org/lang_altertable.html).
 */
function allowArtifacts(db: DatabaseSync): void {
  const table = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'segments'").get() as
    | { sql: string }
    | undefined;
  if (!table || table.sql.includes("'artifact'")) return;
  db.exec('BEGIN IMMEDIATE');
  try {
    db.exec('ALTER TABLE segments RENAME TO segments_before_artifacts; DROP INDEX IF EXISTS segments_state;');
    db.exec(SCHEMA);
    db.exec('INSERT INTO segments SELECT * FROM segments_before_artifacts; DROP TABLE segments_before_artifacts;');
    db.exec('COMMIT');
  } catch (error) {
    db.exec('ROLLBACK');
    throw error;
  }
}

interface RawRow {
  id: number;
  match_id: string;
  kind: SegmentKind;
  source: string;
  seq: number;
  file_name: string;
  size_bytes: number;
  sha256: string;
  state: SegmentState;
  upload_url: string | null;
  attempts: number;
  last_error: string | null;
  created_at_ms: number;
  confirmed_at_ms: number | null;
}

function toRow(r: RawRow): SegmentRow {
  return {
    id: r.id,
    matchId: r.match_id,
    kind: r.kind,
    source: r.source,
    seq: r.seq,
    fileName: r.file_name,
    sizeBytes: r.size_bytes,
    sha256: r.sha256,
    state: r.state,
    uploadUrl: r.upload_url,
    attempts: r.attempts,
    lastError: r.last_error,
    createdAtMs: r.created_at_ms,
    confirmedAtMs: r.confirmed_at_ms,
  };
}

/** The new segment to record. */
export interface NewSegment {
  matchId: string;
  kind: SegmentKind;
  source: string;
  seq: number;
  fileName: string;
  sizeBytes: number;
  sha256: string;
  createdAtMs: number;
}

/** Synchronous access to the journal database (node:sqlite is synchronous). */
export class Journal {
  readonly #db: DatabaseSync;
  readonly #insert: StatementSync;
  readonly #byKey: StatementSync;
  readonly #byId: StatementSync;

  /**
   * Opens (creating if needed) the journal at `path`.
   * @throws PolyvisionError `spool_journal_unreadable` when the file is not a usable SQLite database.
   */
  constructor(path: string) {
    try {
      this.#db = new DatabaseSync(path);
      // WAL, fsync on every commit; the WAL is truncated back to 1 MiB after checkpoints (small disks).
      this.#db.exec(
        'PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA busy_timeout = 5000; PRAGMA journal_size_limit = 1048576;',
      );
      this.#db.exec(SCHEMA);
      allowArtifacts(this.#db);
    } catch (error) {
      throw new PolyvisionError(
        'spool_journal_unreadable',
        `cannot open the spool journal ${path}: ${(error as Error).message}`,
        {
          cause: error,
          details: { path },
        },
      );
    }
    this.#insert = this.#db.prepare(
      `INSERT INTO segments (match_id, kind, source, seq, file_name, size_bytes, sha256, state, created_at_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?) ON CONFLICT DO NOTHING`,
    );
    this.#byKey = this.#db.prepare('SELECT * FROM segments WHERE match_id = ? AND kind = ? AND source = ? AND seq = ?');
    this.#byId = this.#db.prepare('SELECT * FROM segments WHERE id = ?');
  }

  /** Inserts a segment unless one with the same (match, kind, source, seq) or file exists; returns the row. */
  add(s: NewSegment): { row: SegmentRow; created: boolean } {
    const result = this.#insert.run(
      s.matchId,
      s.kind,
      s.source,
      s.seq,
      s.fileName,
      s.sizeBytes,
      s.sha256,
      s.createdAtMs,
    );
    const row = this.#byKey.get(s.matchId, s.kind, s.source, s.seq) as RawRow | undefined;
    if (!row) {
      throw new PolyvisionError(
        'spool_duplicate_file',
        `the spool already holds a different segment in ${s.fileName}`,
        {
          details: { file_name: s.fileName },
        },
      );
    }
    return { row: toRow(row), created: Number(result.changes) > 0 };
  }

  /** The row of a segment identity, if journaled. */
  find(id: { matchId: string; kind: SegmentKind; source: string; seq: number }): SegmentRow | undefined {
    const row = this.#byKey.get(id.matchId, id.kind, id.source, id.seq) as RawRow | undefined;
    return row ? toRow(row) : undefined;
  }

  get(id: number): SegmentRow | undefined {
    const row = this.#byId.get(id) as RawRow | undefined;
    return row ? toRow(row) : undefined;
  }

  /** Segments in the given states, artifacts first (the calibration before the video it describes), then panoramas, then oldest first. */
  list(states: readonly SegmentState[]): SegmentRow[] {
    const marks = states.map(() => '?').join(',');
    const rows = this.#db
      .prepare(
        `SELECT * FROM segments WHERE state IN (${marks})
         ORDER BY CASE kind WHEN 'artifact' THEN 0 WHEN 'panorama' THEN 1 ELSE 2 END, created_at_ms, id`,
      )
      .all(...states) as unknown as RawRow[];
    return rows.map(toRow);
  }

  /** Every row (for status and tests). */
  all(): SegmentRow[] {
    return (this.#db.prepare('SELECT * FROM segments ORDER BY id').all() as unknown as RawRow[]).map(toRow);
  }

  setUploadUrl(id: number, url: string): void {
    this.#db
      .prepare(
        "UPDATE segments SET upload_url = ?, state = 'uploading' WHERE id = ? AND state IN ('pending', 'uploading')",
      )
      .run(url, id);
  }

  /** Forgets a stored upload URL (the core no longer knows it) so that the next attempt creates a new upload. */
  clearUploadUrl(id: number): void {
    this.#db
      .prepare("UPDATE segments SET upload_url = NULL, state = 'pending' WHERE id = ? AND state = 'uploading'")
      .run(id);
  }

  recordAttempt(id: number, error: string | null): void {
    this.#db.prepare('UPDATE segments SET attempts = attempts + 1, last_error = ? WHERE id = ?').run(error, id);
  }

  setState(id: number, state: SegmentState, atMs?: number): void {
    if (state === 'confirmed') {
      this.#db
        .prepare('UPDATE segments SET state = ?, confirmed_at_ms = ?, last_error = NULL WHERE id = ?')
        .run(state, atMs ?? Date.now(), id);
    } else {
      this.#db.prepare('UPDATE segments SET state = ? WHERE id = ?').run(state, id);
    }
  }

  /** Count and bytes of segments not yet confirmed by the core. */
  backlog(): { count: number; sizeBytes: number } {
    const r = this.#db
      .prepare(
        "SELECT COUNT(*) AS n, COALESCE(SUM(size_bytes), 0) AS b FROM segments WHERE state IN ('pending', 'uploading', 'unconfirmed')",
      )
      .get() as { n: number; b: number };
    return { count: Number(r.n), sizeBytes: Number(r.b) };
  }

  close(): void {
    if (this.#db.isOpen) this.#db.close();
  }
}
