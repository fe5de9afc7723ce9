/**
 * A fleet of one storage element (one datacenter) cannot hold a second copy:
 * uploads still work and are confirmed with one copy (`Polyvision-Copies:
 * 1/1`), and readiness says `degraded` with the reason (REPLICATION_FACTOR 2
 * asked, 1 datacenter). A factor of 1 asked for is not degraded.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEdgeToken, type RunningIngest } from '../../src/ingest/index.ts';
import { requiredCopies } from '../../src/replication/index.ts';
import { METRICS_AUTH, metadataFor, sha256Hex, TusClient, testBytes } from '../ingest/support/harness.ts';
import { type IngestWorld, startIngestWorld } from '../ingest/support/world.ts';

let world: IngestWorld;
let ingest: RunningIngest;

beforeAll(async () => {
  world = await startIngestWorld({
    name: 'replication_one_se',
    ses: [{ id: 'se-only', location: 'dc1' }],
    env: { POLYVISION_TOPIC_PREFIX: 'replicationone' },
  });
  ingest = world.ingest;
});

afterAll(async () => {
  await world?.close();
});

describe('a one-SE fleet', () => {
  it('uploads and confirms with one copy, and readiness says degraded', async () => {
    const tus = new TusClient(ingest.url, (await createEdgeToken(ingest.db, 'acme')).token);
    const bytes = testBytes(50_000, 5);
    const path = await tus.createOk(bytes.length, metadataFor(bytes, { kind: 'camera', match_id: 'm-one' }));
    const last = await tus.send(path, bytes);
    expect(last.status).toBe(204);
    expect(last.headers.get('polyvision-copies')).toBe('1/1');
    expect(last.headers.get('x-content-sha256')).toBe(sha256Hex(bytes));
    const { rows } = await world.schema.pool.query(`SELECT storage_id, state FROM file_copies`);
    expect(rows).toEqual([{ storage_id: 'se-only', state: 'verified' }]);

    const open = await fetch(`${ingest.url}/health/ready`);
    expect(open.status).toBe(200);
    expect(await open.json()).toEqual({ status: 'degraded' });
    const detailed = (await (await fetch(`${ingest.url}/health/ready`, METRICS_AUTH)).json()) as Record<string, never>;
    expect(detailed.replication).toEqual({ factor: 2, required_copies: 1, datacenters: 1, under_replicated_files: 0 });
    expect(detailed.degraded).toMatchObject({ replication: expect.stringContaining('REPLICATION_FACTOR 2') });
  });

  it('a factor of 1 on one datacenter is what the fleet allows: not degraded', () => {
    const ses = [{ storage_id: 'a', endpoint: 'http://a', token: 't', location: 'dc1' }];
    expect(requiredCopies(ses, 1)).toEqual({ required: 1, factor: 1, datacenters: 1, degraded: false });
    expect(requiredCopies(ses, 2)).toMatchObject({ required: 1, degraded: true });
    expect(requiredCopies([...ses, { ...ses[0]!, storage_id: 'b', location: 'dc2' }], 3)).toMatchObject({
      required: 2,
      degraded: true,
    });
  });
});
