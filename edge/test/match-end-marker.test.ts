/**
 * The end of a match travels to the core: once the recording window closed,
 * the MatchRecorder spools `match-end` (an artifact whose seq is the last
 * panorama slot), uploaded as `match-end-<slot>.json`, which ingest turns
 * into the match job's `match.end` (shared `matchEndSlot`). Its start too:
 * `match-start-<first slot>.json`, spooled just before the first panorama,
 * which the spool uploads ahead of every panorama (ingest: `match.open`).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type MatchEndMarker,
  type MatchStartMarker,
  matchEndSlot,
  matchStartSlot,
  panoramaSegmentSlot,
} from '@polyvision/shared';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Alarms } from '../src/alarms/index.ts';
import { MatchRecorder, spoolStartMarker } from '../src/recording/index.ts';
import { Spool, uploadFileName } from '../src/spool/index.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edge-end-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('end-of-match marker', () => {
  it('is spooled once after the last panorama, named with its slot, and not for a match without panoramas', async () => {
    const alarms = new Alarms();
    const spool = await Spool.open({ dir: join(dir, 'spool'), alarms, minFreeBytes: 0 });
    try {
      const recorder = (matchId: string) =>
        new MatchRecorder({ matchId, cameras: [], segmentDurationS: 10, spool, alarms, stitcher: null });
      for (const slot of [178_000_001, 178_000_000, 178_000_002]) {
        const path = join(dir, `${slot}.mp4`);
        await writeFile(path, `panorama ${slot}`);
        const row = await spool.add(path, { matchId: 'm-1', kind: 'panorama', source: 'panorama', seq: slot });
        // Ingest reads the slot of the edge's panorama names.
        expect(panoramaSegmentSlot(uploadFileName(row), 'm-1')).toBe(slot);
      }
      expect(await recorder('m-1').spoolEndMarker()).toBe(true);
      expect(await recorder('m-1').spoolEndMarker()).toBe(false); // once per match
      const markers = spool.journal.all().filter((r) => r.kind === 'artifact');
      expect(markers).toHaveLength(1);
      const marker = markers[0]!;
      expect(uploadFileName(marker)).toBe('match-end-178000002.json');
      expect(matchEndSlot(uploadFileName(marker))).toBe(178_000_002);
      const body = JSON.parse(await readFile(spool.pathOf(marker), 'utf8')) as MatchEndMarker;
      expect(body).toMatchObject({
        match_id: 'm-1',
        last_slot: 178_000_002,
        panorama_segments: 3,
        segment_duration_s: 10,
      });
      expect(await recorder('m-2').spoolEndMarker()).toBe(false);
      expect(spool.journal.all().filter((r) => r.matchId === 'm-2')).toHaveLength(0);
    } finally {
      spool.close();
    }
  });

  it('start: spooled once before the first panorama, uploaded ahead of the panoramas, named with its slot', async () => {
    const alarms = new Alarms();
    const spool = await Spool.open({ dir: join(dir, 'spool'), alarms, minFreeBytes: 0 });
    try {
      const start = (matchId: string, firstSlot: number) =>
        spoolStartMarker(spool, { matchId, firstSlot, segmentDurationS: 4, dir: join(dir, 'incoming') });
      const marker = await start('m-1', 178_000_000);
      expect(marker).not.toBeNull();
      expect(uploadFileName(marker!)).toBe('match-start-178000000.json');
      expect(matchStartSlot(uploadFileName(marker!))).toBe(178_000_000);
      expect(matchStartSlot('match-end-178000000.json')).toBeUndefined();
      const body = JSON.parse(await readFile(spool.pathOf(marker!), 'utf8')) as MatchStartMarker;
      expect(body).toMatchObject({ match_id: 'm-1', first_slot: 178_000_000, segment_duration_s: 4 });
      // The match's panoramas, spooled after it (the later slot first: a camera was late).
      for (const slot of [178_000_001, 178_000_000]) {
        const path = join(dir, `${slot}.mp4`);
        await writeFile(path, `panorama ${slot}`);
        await spool.add(path, { matchId: 'm-1', kind: 'panorama', source: 'panorama', seq: slot });
      }
      expect(await start('m-1', 178_000_000)).toBeNull(); // once per match
      expect(spool.waiting()[0]?.id).toBe(marker!.id); // uploaded first
      // A restart mid-match: the match has panoramas, no second marker.
      const path = join(dir, 'other.mp4');
      await writeFile(path, 'panorama');
      await spool.add(path, { matchId: 'm-2', kind: 'panorama', source: 'panorama', seq: 5 });
      expect(await start('m-2', 6)).toBeNull();
      expect(spool.journal.all().filter((r) => r.matchId === 'm-2' && r.kind === 'artifact')).toHaveLength(0);
    } finally {
      spool.close();
    }
  });
});
