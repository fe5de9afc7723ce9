/**
 * How the edge names the files of a match it records, as ingest reads them
 * (issue #18: a match is one job):
 * - a panorama segment: `<match>__panorama__panorama__<slot>.mp4`, where
 *   `slot` = `floor(segment start epoch s / segment_duration_s)` (edge
 *   spool names, edge/src/spool/spool.ts);
 * - the start-of-match marker, an `artifact` spooled just before the match's
 *   first panorama (so uploaded ahead of every panorama: the spool sends
 *   artifacts first): `match-start-<first slot>.json`; ingest turns it into
 *   `match.open`, which opens the match job at that slot, so a first segment
 *   that reaches the core after a later one still gets its index;
 * - the end-of-match marker, uploaded as an `artifact` once a recording
 *   window closed: `match-end-<last slot>.json` (`match-end.json` when the
 *   match has no panorama); it holds the same facts as JSON.
 */
const PANORAMA_SEGMENT = /^([A-Za-z0-9_-]+?)__panorama__panorama__(\d{1,15})\.mp4$/;
const MATCH_END = /^match-end(?:-(\d{1,15}))?\.json$/;
const MATCH_START = /^match-start-(\d{1,15})\.json$/;

/** The start marker's upload file name. */
export function matchStartFileName(firstSlot: number): string {
  return `match-start-${firstSlot}.json`;
}

/** The first slot a start marker's file name carries, or `undefined` when `fileName` is not a start marker. */
export function matchStartSlot(fileName: string): number | undefined {
  const m = MATCH_START.exec(fileName);
  return m ? Number(m[1]) : undefined;
}

/** The end marker's upload file name. */
export function matchEndFileName(lastSlot: number | null): string {
  return lastSlot === null ? 'match-end.json' : `match-end-${lastSlot}.json`;
}

/** The slot of an edge-named panorama segment of `matchId`, or null for any other file name. */
export function panoramaSegmentSlot(fileName: string, matchId: string): number | null {
  const m = PANORAMA_SEGMENT.exec(fileName);
  return m && m[1] === matchId ? Number(m[2]) : null;
}

/**
 * Whether `fileName` is an end marker; its last slot (`null` when the name
 * carries none), else `undefined`.
 */
export function matchEndSlot(fileName: string): number | null | undefined {
  const m = MATCH_END.exec(fileName);
  if (!m) return undefined;
  return m[1] === undefined ? null : Number(m[1]);
}

/** The start marker's content. */
export interface MatchStartMarker {
  match_id: string;
  /** Slot of the match's first panorama segment. */
  first_slot: number;
  /** The edge's `segment_duration_s`. */
  segment_duration_s: number;
  /** ISO 8601: when the edge stitched that first segment. */
  started_at: string;
}

/** The end marker's content. */
export interface MatchEndMarker {
  match_id: string;
  /** Slot of the last panorama segment, or null when none was recorded. */
  last_slot: number | null;
  panorama_segments: number;
  /** The edge's `segment_duration_s`; null when the match is one panorama of any length (the demo). */
  segment_duration_s: number | null;
  /** ISO 8601. */
  ended_at: string;
}
