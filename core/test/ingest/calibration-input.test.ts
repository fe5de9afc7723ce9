import { createHash, randomUUID } from 'node:crypto';
import { jobSubmitSchema } from '@polyvision/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.ts';
import { migrate } from '../../src/db/migrate.ts';
import { recordCompletedUpload } from '../../src/ingest/catalog.ts';
import type { UploadRow } from '../../src/ingest/upload-rows.ts';
import { testDatabaseDrivers } from '../orchestrator/support/databases.ts';

/**
 * A panorama's `job.submit` carries the match's venue calibration (the latest
 * `venue.json` artifact of the same organization and match, as kind
 * `calibration`), so the analyze stage works in pitch metres; without one it
 * carries the panorama only.
 */
function sha(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

async function completeUpload(
  db: Database,
  over: Pick<UploadRow, 'organization_id' | 'match_id' | 'kind' | 'filename'>,
): Promise<UploadRow> {
  const uploadId = randomUUID();
  const row: UploadRow = {
    upload_id: uploadId,
    size_bytes: 1234,
    offset_bytes: 1234,
    sha256: sha(uploadId),
    storage_id: 'se-1',
    file_id: `f-${uploadId}`,
    se_upload_id: `se-${uploadId}`,
    reservation_id: `r-${uploadId}`,
    edge_id: null,
    token_id: null,
    status: 'receiving',
    relocations: 0,
    created_at: new Date().toISOString(),
    expires_at: new Date(Date.now() + 60_000).toISOString(),
    ...over,
  };
  await db.query(
    `INSERT INTO uploads (upload_id, organization_id, match_id, kind, filename, size_bytes, sha256, storage_id, file_id, status)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'receiving')`,
    [
      row.upload_id,
      row.organization_id,
      row.match_id,
      row.kind,
      row.filename,
      row.size_bytes,
      row.sha256,
      row.storage_id,
      row.file_id,
    ],
  );
  expect(await recordCompletedUpload(db, row, { location: 'dc1' })).toBe(true);
  return row;
}

async function jobSubmitOf(db: Database, matchId: string) {
  const { rows } = await db.query<{ payload: unknown }>(
    `SELECT payload FROM outbox WHERE message_key = $1 ORDER BY id`,
    [`acme:${matchId}`],
  );
  expect(rows).toHaveLength(1);
  return jobSubmitSchema.parse(rows[0]?.payload);
}

for (const driver of testDatabaseDrivers) {
  describe.skipIf(driver.skip)(`job.submit calibration input (${driver.name})`, () => {
    let db: Database;
    let drop: () => Promise<void>;
    beforeAll(async () => {
      ({ db, drop } = await driver.open());
      await migrate(db);
    });
    afterAll(async () => {
      await drop?.();
    });

    it('a panorama after a venue.json artifact carries the latest one as kind calibration', async () => {
      await completeUpload(db, {
        organization_id: 'acme',
        match_id: 'm-cal',
        kind: 'artifact',
        filename: 'venue.json',
      });
      const latest = await completeUpload(db, {
        organization_id: 'acme',
        match_id: 'm-cal',
        kind: 'artifact',
        filename: 'venue.json',
      });
      // Neither another match's calibration nor another artifact of this match is taken.
      await completeUpload(db, {
        organization_id: 'acme',
        match_id: 'm-other',
        kind: 'artifact',
        filename: 'venue.json',
      });
      await completeUpload(db, {
        organization_id: 'other',
        match_id: 'm-cal',
        kind: 'artifact',
        filename: 'venue.json',
      });
      await completeUpload(db, {
        organization_id: 'acme',
        match_id: 'm-cal',
        kind: 'artifact',
        filename: 'notes.json',
      });
      const panorama = await completeUpload(db, {
        organization_id: 'acme',
        match_id: 'm-cal',
        kind: 'panorama',
        filename: 'panorama.mp4',
      });

      const submit = await jobSubmitOf(db, 'm-cal');
      expect(submit.inputs.map((i) => i.kind)).toEqual(['panorama', 'calibration']);
      expect(submit.inputs[0]?.object_key).toBe(panorama.file_id);
      expect(submit.inputs[1]).toEqual({
        kind: 'calibration',
        storage_id: 'se-1',
        object_key: latest.file_id,
        size_bytes: 1234,
        sha256: latest.sha256,
        content_type: 'application/json',
      });
    });

    it('a panorama without a venue.json artifact carries the panorama only', async () => {
      await completeUpload(db, {
        organization_id: 'acme',
        match_id: 'm-plain',
        kind: 'artifact',
        filename: 'notes.json',
      });
      await completeUpload(db, {
        organization_id: 'acme',
        match_id: 'm-plain',
        kind: 'panorama',
        filename: 'panorama.mp4',
      });
      const submit = await jobSubmitOf(db, 'm-plain');
      expect(submit.inputs.map((i) => i.kind)).toEqual(['panorama']);
    });
  });
}
