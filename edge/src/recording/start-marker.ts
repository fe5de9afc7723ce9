import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { MatchStartMarker } from '@polyvision/shared';
import { MATCH_START_SOURCE, type SegmentRow, type Spool } from '../spool/index.ts';

/**
 * Spools a match's start marker just before its first panorama: an `artifact` of source `match-start`
 * whose seq is the first panorama's slot, uploaded as `match-start-<slot>.json` ahead of every panorama
 * (the spool sends artifacts first). Ingest turns it into `match.open`, which opens the match job at
 * that slot (shared/src/contracts/match-files.ts). Nothing when the match already has a panorama or a
 * marker in the spool (a restart mid-match: the core's job is open already).
 *
 * @param options.dir - a folder of the recorder's own for the marker file (the spool moves it in).
 * @returns the spooled row, or null when nothing was spooled.
 */
export async function spoolStartMarker(
  spool: Spool,
  options: { matchId: string; firstSlot: number; segmentDurationS: number; dir: string },
): Promise<SegmentRow | null> {
  const rows = spool.journal.all().filter((r) => r.matchId === options.matchId);
  if (rows.some((r) => r.kind === 'panorama' || (r.kind === 'artifact' && r.source === MATCH_START_SOURCE))) {
    return null;
  }
  const marker: MatchStartMarker = {
    match_id: options.matchId,
    first_slot: options.firstSlot,
    segment_duration_s: options.segmentDurationS,
    started_at: new Date().toISOString(),
  };
  await mkdir(options.dir, { recursive: true });
  const path = join(options.dir, 'match-start.json');
  await writeFile(path, `${JSON.stringify(marker, null, 2)}\n`);
  return spool.add(path, {
    matchId: options.matchId,
    kind: 'artifact',
    source: MATCH_START_SOURCE,
    seq: options.firstSlot,
  });
}
