/**
 * The venue calibration travels with the match: the MatchRecorder spools the
 * stitcher's `venue.json` once per match as an `artifact`, the uploader sends
 * it before the panorama under the file name `venue.json`, and journals made
 * before the `artifact` kind existed accept it after an upgrade.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { buildRig, venueCalibrationOf, venueCalibrationSchema } from '@polyvision/shared';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Alarms } from '../src/alarms/index.ts';
import { MatchRecorder } from '../src/recording/index.ts';
import { Spool } from '../src/spool/index.ts';
import { createStitcher } from '../src/stitch/index.ts';
import { Uploader } from '../src/upload/index.ts';
import { startTestIngest } from './support/tus-server.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edge-venue-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const venue = venueCalibrationOf(
  buildRig({ cameraCount: 3, widthPx: 320, heightPx: 180, heightM: 20, setbackM: 30, panoramaWidthPx: 720 }),
  'venue-test',
);

describe('venue calibration artifact', () => {
  it('the MatchRecorder spools the stitcher venue.json once per match, before any panorama', async () => {
    const alarms = new Alarms();
    const spool = await Spool.open({ dir: join(dir, 'spool'), alarms, minFreeBytes: 0 });
    try {
      const stitcher = await createStitcher(venue, { workDir: join(dir, 'maps'), encoder: 'libx264' });
      const record = () =>
        new MatchRecorder({ matchId: 'm-7', cameras: [], segmentDurationS: 2, spool, alarms, stitcher }).run(
          AbortSignal.abort(),
        );
      await record();
      await record(); // the match starts again (restart): still one calibration
      const rows = spool.journal.all().filter((r) => r.kind === 'artifact');
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ matchId: 'm-7', source: 'venue', seq: 0, state: 'pending' });
      const spooled = venueCalibrationSchema.parse(JSON.parse(await readFile(spool.pathOf(rows[0]!), 'utf8')));
      expect(spooled).toEqual(JSON.parse(JSON.stringify(stitcher.venue)));
      // Without a stitcher (cameras only) there is no calibration to send.
      await new MatchRecorder({ matchId: 'm-8', cameras: [], segmentDurationS: 2, spool, alarms, stitcher: null }).run(
        AbortSignal.abort(),
      );
      expect(spool.journal.all().filter((r) => r.matchId === 'm-8')).toHaveLength(0);
    } finally {
      spool.close();
    }
  });

  it('the uploader sends the artifact first, as kind artifact named venue.json, and the core confirms it', async () => {
    const token = 'edge-token-venue';
    const ingest = await startTestIngest({ dir: join(dir, 'ingest'), token });
    const alarms = new Alarms();
    const spool = await Spool.open({ dir: join(dir, 'spool'), alarms, minFreeBytes: 0 });
    try {
      const panoramaPath = join(dir, 'p.mp4');
      await writeFile(panoramaPath, randomBytes(200_000));
      const panorama = await spool.add(panoramaPath, { matchId: 'm-9', kind: 'panorama', source: 'panorama', seq: 1 });
      const venuePath = join(dir, 'venue.json');
      await writeFile(venuePath, JSON.stringify(venue));
      const artifact = await spool.add(venuePath, { matchId: 'm-9', kind: 'artifact', source: 'venue', seq: 0 });
      expect(artifact.fileName).toBe('m-9__artifact__venue__000000.json');
      // Queued after the panorama, sent before it.
      expect(spool.waiting().map((r) => r.kind)).toEqual(['artifact', 'panorama']);
      await new Uploader({
        spool,
        alarms,
        ingestUrl: ingest.url,
        token,
        organizationId: 'org-1',
        baseDelayMs: 100,
      }).drain(AbortSignal.timeout(20_000));
      const done = await ingest.completed();
      expect(done.find((d) => d.sha256 === artifact.sha256)?.metadata).toMatchObject({
        kind: 'artifact',
        filename: 'venue.json',
        match_id: 'm-9',
      });
      const confirmedArtifact = spool.journal.get(artifact.id);
      const confirmedPanorama = spool.journal.get(panorama.id);
      expect(confirmedArtifact?.state).toBe('deleted');
      expect(confirmedPanorama?.state).toBe('deleted');
      expect(confirmedArtifact?.confirmedAtMs ?? Infinity).toBeLessThanOrEqual(confirmedPanorama?.confirmedAtMs ?? 0);
    } finally {
      spool.close();
      await ingest.stop();
    }
  });

  it('a journal made before the artifact kind keeps its rows and accepts artifacts after an upgrade', async () => {
    const spoolDir = join(dir, 'spool');
    const first = await Spool.open({ dir: spoolDir, alarms: new Alarms(), minFreeBytes: 0 });
    const oldPath = join(dir, 'old.mp4');
    await writeFile(oldPath, randomBytes(1000));
    const old = await first.add(oldPath, { matchId: 'm-1', kind: 'panorama', source: 'panorama', seq: 3 });
    first.close();
    // Put the table back to the schema of older journals (CHECK without 'artifact').
    const db = new DatabaseSync(join(spoolDir, 'journal.sqlite'));
    const sql = (db.prepare("SELECT sql FROM sqlite_master WHERE name = 'segments'").get() as { sql: string }).sql;
    db.exec(`ALTER TABLE segments RENAME TO s_new; DROP INDEX segments_state;
      ${sql.replace(", 'artifact'", '')};
      INSERT INTO segments SELECT * FROM s_new; DROP TABLE s_new;`);
    expect(() =>
      db.exec(
        `INSERT INTO segments (match_id, kind, source, seq, file_name, size_bytes, sha256, state, created_at_ms)
         VALUES ('x', 'artifact', 'venue', 0, 'x.json', 1, 'a', 'pending', 0)`,
      ),
    ).toThrow(/CHECK/);
    db.close();

    const upgraded = await Spool.open({ dir: spoolDir, alarms: new Alarms(), minFreeBytes: 0 });
    try {
      expect(upgraded.journal.get(old.id)).toMatchObject({
        fileName: old.fileName,
        sha256: old.sha256,
        state: 'pending',
      });
      const venuePath = join(dir, 'venue.json');
      await writeFile(venuePath, JSON.stringify(venue));
      const row = await upgraded.add(venuePath, { matchId: 'm-1', kind: 'artifact', source: 'venue', seq: 0 });
      expect(upgraded.journal.get(row.id)?.kind).toBe('artifact');
    } finally {
      upgraded.close();
    }
  });
});
