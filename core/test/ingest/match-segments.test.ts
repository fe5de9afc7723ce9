import { jobSubmitSchema, matchEndSchema, matchJobId, matchOpenSchema, matchSegmentSchema } from '@polyvision/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEdgeToken, type RunningIngest } from '../../src/ingest/index.ts';
import { metadataFor, sha256Hex, TusClient, testBytes } from './support/harness.ts';
import { type IngestWorld, startIngestWorld } from './support/world.ts';

/**
 * Ingest turns the edge's files of a match into the commands of its one job
 * (real SE, PostgreSQL, Redis; the commands read from the outbox the
 * orchestrator's relay publishes): a panorama named like an edge segment is
 * `match.segment` with its slot, the start marker `match.open`, the end marker `match.end`, any other
 * panorama stays a whole-file `job.submit`.
 */
let world: IngestWorld;
let ingest: RunningIngest;

beforeAll(async () => {
  world = await startIngestWorld({
    name: 'ingest_match',
    ses: [{ id: 'se-m', location: 'dc1' }],
    env: { INGEST_SEGMENT_DURATION_S: '6' },
  });
  ingest = world.ingest;
});

afterAll(async () => {
  await world?.close();
});

async function upload(tus: TusClient, seed: number, over: Record<string, string>): Promise<Buffer> {
  const bytes = testBytes(20_000, seed);
  const path = await tus.createOk(bytes.length, metadataFor(bytes, over));
  expect((await tus.send(path, bytes)).status).toBe(204);
  return bytes;
}

async function commands(matchId: string): Promise<Array<Record<string, unknown>>> {
  const rows = await ingest.db.query<{ payload: Record<string, unknown>; message_key: string }>(
    `SELECT payload, message_key FROM outbox WHERE payload->>'match_id' = $1 ORDER BY id`,
    [matchId],
  );
  for (const row of rows.rows) expect(row.message_key).toBe(`acme:${matchId}`);
  return rows.rows.map((r) => r.payload);
}

describe('a match recorded by the edge, through ingest', () => {
  it('makes edge-named panorama segments match.segment of one job, the start marker match.open, the end marker match.end, other panoramas job.submit', async () => {
    const { token } = await createEdgeToken(ingest.db, 'acme');
    const tus = new TusClient(ingest.url, token);
    const match = 'derby';
    const venue = await upload(tus, 1, { match_id: match, kind: 'artifact', filename: 'venue.json' });
    await upload(tus, 7, { match_id: match, kind: 'artifact', filename: 'match-start-296666667.json' });
    const second = await upload(tus, 2, {
      match_id: match,
      filename: `${match}__panorama__panorama__296666668.mp4`,
    });
    await upload(tus, 3, { match_id: match, filename: `${match}__panorama__panorama__296666667.mp4` });
    // Another match's name in the file: not a segment of this match, a whole-file job.
    const stray = await upload(tus, 4, { match_id: match, filename: 'other__panorama__panorama__000001.mp4' });
    await upload(tus, 5, { match_id: match, kind: 'artifact', filename: 'match-end-296666668.json' });
    await upload(tus, 6, { match_id: match, kind: 'artifact', filename: 'notes.json' }); // no command

    const sent = await commands(match);
    expect(sent.map((c) => c.type)).toEqual([
      'match.open',
      'match.segment',
      'match.segment',
      'job.submit',
      'match.end',
    ]);
    const open = matchOpenSchema.parse(sent.shift());
    expect(open).toMatchObject({ job_id: matchJobId('acme', match), first_slot: 296666667 });
    expect(open.match_inputs).toEqual([expect.objectContaining({ kind: 'calibration', sha256: sha256Hex(venue) })]);
    const [a, b] = [matchSegmentSchema.parse(sent[0]), matchSegmentSchema.parse(sent[1])];
    expect(a.job_id).toBe(matchJobId('acme', match));
    expect(b.job_id).toBe(a.job_id);
    expect([a.slot, b.slot]).toEqual([296666668, 296666667]);
    expect(a.duration_s).toBe(6);
    expect(a.input).toMatchObject({ kind: 'panorama', storage_id: 'se-m', sha256: sha256Hex(second) });
    expect(a.match_inputs).toEqual([expect.objectContaining({ kind: 'calibration', sha256: sha256Hex(venue) })]);
    const submit = jobSubmitSchema.parse(sent[2]);
    expect(submit.job_id).not.toBe(a.job_id);
    expect(submit.inputs[0]).toMatchObject({ kind: 'panorama', sha256: sha256Hex(stray) });
    const end = matchEndSchema.parse(sent[3]);
    expect(end).toMatchObject({ job_id: a.job_id, last_slot: 296666668, reason: 'marker' });
  });
});
