import { randomUUID } from 'node:crypto';
import {
  type ArtifactRef,
  JOB_TOPIC_PARTITIONS,
  type JobCommand,
  type JobSubmit,
  jobKey,
  type MatchEnd,
  type MatchOpen,
  type MatchSegment,
  matchEndSlot,
  matchJobId,
  matchStartSlot,
  panoramaSegmentSlot,
  TOPICS,
} from '@polyvision/shared';
import { partitionForKey } from '../bus/index.ts';
import type { Database, Queryable } from '../db/index.ts';
import { enqueueOutbox } from '../orchestrator/outbox/outbox-writer.ts';
import type { UploadRow } from './upload-rows.ts';

/** The job a panorama upload starts: one per upload, so a retried completion never starts two. */
export function jobIdForUpload(uploadId: string): string {
  return `job-${uploadId}`;
}

/** The file name under which the edge uploads a match's venue calibration (kind `artifact`). */
export const VENUE_CALIBRATION_FILENAME = 'venue.json';

/**
 * The latest catalogued `artifact` named `venue.json` of an organization's
 * match, as an ArtifactRef of kind `calibration` (what the analyze stage reads
 * to turn panorama pixels into pitch metres), or null when the edge has not
 * uploaded one. "Latest" is by catalog time, then file id (a re-calibrated
 * venue uploaded later wins).
 */
export async function findVenueCalibration(
  db: Queryable,
  organizationId: string,
  matchId: string,
): Promise<ArtifactRef | null> {
  const { rows } = await db.query<{
    storage_id: string;
    object_key: string;
    size_bytes: string | number;
    sha256: string;
  }>(
    `SELECT storage_id, object_key, size_bytes, sha256 FROM files
     WHERE organization_id = $1 AND match_id = $2 AND kind = 'artifact' AND filename = $3
     ORDER BY created_at DESC, file_id DESC LIMIT 1`,
    [organizationId, matchId, VENUE_CALIBRATION_FILENAME],
  );
  const row = rows[0];
  if (!row) return null;
  return {
    kind: 'calibration',
    storage_id: row.storage_id,
    object_key: row.object_key,
    size_bytes: Number(row.size_bytes),
    sha256: row.sha256,
    content_type: 'application/json',
  };
}

/**
 * Records a finished upload, in ONE transaction:
 * 1. `uploads.status` `receiving` → `completed` (only the first caller wins);
 * 2. the `files` catalog row (file id, SE, size, sha256, organization, match, kind);
 * 3. for an edge-named panorama segment (`<match>__panorama__panorama__<slot>.mp4`),
 *    a `match.segment` of the match's one job ({@link matchJobId}) with its
 *    slot and `segmentDurationS`; for the edge's start marker (`match-start-<first slot>.json`,
 *    an `artifact`), a `match.open` of that job at its first slot (with the venue calibration
 *    when catalogued); for the edge's end marker (`match-end-<last slot>.json`,
 *    an `artifact`), a `match.end` (reason `marker`); for any other
 *    `panorama`, a whole-file `job.submit` row in the orchestrator's transactional
 *    outbox (table `outbox`, migration 0003) for `polyvision.jobs.commands`,
 *    key `${organization_id}:${match_id}`, partition by Kafka's murmur2.
 *    The relay of the replica that owns that commands partition publishes it.
 *    Its inputs are the panorama and, when the catalog holds one for the same
 *    organization and match, the latest `venue.json` artifact as kind
 *    `calibration` ({@link findVenueCalibration}, read in the same transaction).
 *
 * So the catalog row and the message exist together or not at all; a
 * repeated call (a retried PATCH, a HEAD after a crash) changes nothing.
 *
 * @returns true when this call recorded it, false when it was already recorded.
 */
export async function recordCompletedUpload(
  db: Database,
  row: UploadRow,
  options: {
    location: string | null;
    jobCommandsTopic?: string;
    partitions?: number;
    /** Length of the edges' panorama segments (`INGEST_SEGMENT_DURATION_S`). @defaultValue 10 */
    segmentDurationS?: number;
  },
): Promise<boolean> {
  return db.transaction(async (tx) => {
    const updated = await tx.query(
      `UPDATE uploads SET status = 'completed', offset_bytes = size_bytes, updated_at = now()
       WHERE upload_id = $1 AND status = 'receiving'`,
      [row.upload_id],
    );
    if (updated.rowCount !== 1) return false;
    await tx.query(
      `INSERT INTO files (file_id, organization_id, match_id, kind, filename, size_bytes, sha256, storage_id, object_key, location)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [
        row.file_id,
        row.organization_id,
        row.match_id,
        row.kind,
        row.filename,
        row.size_bytes,
        row.sha256,
        row.storage_id,
        row.file_id,
        options.location,
      ],
    );
    const message = await commandFor(tx, row, options.segmentDurationS ?? 10);
    if (message) {
      const key = jobKey(row.organization_id, row.match_id);
      await enqueueOutbox(tx, partitionForKey(key, options.partitions ?? JOB_TOPIC_PARTITIONS), [
        { topic: options.jobCommandsTopic ?? TOPICS.jobCommands, key, payload: message },
      ]);
    }
    return true;
  });
}

/** The job command a completed upload causes, or null (see {@link recordCompletedUpload}). */
async function commandFor(tx: Queryable, row: UploadRow, segmentDurationS: number): Promise<JobCommand | null> {
  const envelope = {
    message_id: randomUUID(),
    organization_id: row.organization_id,
    match_id: row.match_id,
    created_at: new Date().toISOString(),
  };
  if (row.kind === 'artifact') {
    const firstSlot = matchStartSlot(row.filename);
    if (firstSlot !== undefined) {
      const calibration = await findVenueCalibration(tx, row.organization_id, row.match_id);
      const open: MatchOpen = {
        type: 'match.open',
        ...envelope,
        job_id: matchJobId(row.organization_id, row.match_id),
        first_slot: firstSlot,
        ...(calibration ? { match_inputs: [calibration] } : {}),
        requested_by: 'ingest',
      };
      return open;
    }
    const lastSlot = matchEndSlot(row.filename);
    if (lastSlot === undefined) return null;
    const end: MatchEnd = {
      type: 'match.end',
      ...envelope,
      job_id: matchJobId(row.organization_id, row.match_id),
      ...(lastSlot === null ? {} : { last_slot: lastSlot }),
      reason: 'marker',
      requested_by: 'ingest',
    };
    return end;
  }
  if (row.kind !== 'panorama') return null;
  const panorama: ArtifactRef = {
    kind: 'panorama',
    storage_id: row.storage_id,
    object_key: row.file_id,
    size_bytes: row.size_bytes,
    sha256: row.sha256,
  };
  const calibration = await findVenueCalibration(tx, row.organization_id, row.match_id);
  const slot = panoramaSegmentSlot(row.filename, row.match_id);
  if (slot !== null) {
    const segment: MatchSegment = {
      type: 'match.segment',
      ...envelope,
      job_id: matchJobId(row.organization_id, row.match_id),
      slot,
      duration_s: segmentDurationS,
      input: panorama,
      ...(calibration ? { match_inputs: [calibration] } : {}),
      requested_by: 'ingest',
    };
    return segment;
  }
  const submit: JobSubmit = {
    type: 'job.submit',
    ...envelope,
    job_id: jobIdForUpload(row.upload_id),
    inputs: [panorama, ...(calibration ? [calibration] : [])],
    priority: 'normal',
    requested_by: 'ingest',
  };
  return submit;
}
