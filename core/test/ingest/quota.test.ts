/**
 * Per-organization quotas of reserved + stored bytes, reservations that live
 * minutes (here ~2 s), renewed by upload progress, and a stranded reservation
 * that lapses (issue 19 item 4) — on a real storage element process, Redis
 * and PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestSchema, waitFor } from '../../../test/support/index.ts';
import { createEdgeToken, parseOrganizationQuotas, type RunningIngest } from '../../src/ingest/index.ts';
import { metadataFor, type SeProcess, TusClient, testBytes } from './support/harness.ts';
import { type IngestWorld, startIngestWorld } from './support/world.ts';

const TTL_MS = 2_000;
let world: IngestWorld;
let schema: TestSchema;
let se: SeProcess;
let ingest: RunningIngest;
let acme: TusClient;
let other: TusClient;
let big: TusClient;

beforeAll(async () => {
  world = await startIngestWorld({
    name: 'ingest_quota',
    ses: [{ id: 'se-q', location: 'dc1' }],
    env: {
      INGEST_ORG_QUOTA_BYTES: '1000',
      INGEST_ORG_QUOTAS: JSON.stringify({ big: 1_000_000 }),
      INGEST_RESERVATION_TTL_MS: String(TTL_MS),
    },
  });
  ({ schema, ingest } = world);
  se = world.ses['se-q'] as SeProcess;
  acme = new TusClient(ingest.url, (await createEdgeToken(ingest.db, 'acme')).token);
  other = new TusClient(ingest.url, (await createEdgeToken(ingest.db, 'other')).token);
  big = new TusClient(ingest.url, (await createEdgeToken(ingest.db, 'big')).token);
});

afterAll(async () => {
  await world?.close();
});

async function reservationOf(uploadPath: string): Promise<{ reservation_id: string; expires_at: string } | null> {
  const id = uploadPath.split('/').at(-1);
  const { rows } = await schema.pool.query<{ reservation_id: string }>(
    'SELECT reservation_id FROM uploads WHERE upload_id = $1',
    [id],
  );
  const response = await se.fetch(`/api/v1/reservations/${rows[0]?.reservation_id}`);
  return response.status === 200 ? ((await response.json()) as { reservation_id: string; expires_at: string }) : null;
}

describe('organization quotas', () => {
  it('reserved + stored bytes per organization: a clear 507 quota_exceeded, other organizations unaffected; a stranded reservation lapses', async () => {
    const first = testBytes(600, 1);
    const stranded = await acme.createOk(600, metadataFor(first, { organization_id: 'acme', match_id: 'q-1' }));
    const reservation = await reservationOf(stranded);
    expect(reservation).not.toBeNull();
    // The reservation lives the configured minutes (here TTL_MS), not 24 h.
    expect(Date.parse(reservation?.expires_at ?? '') - Date.now()).toBeLessThanOrEqual(TTL_MS);

    const refused = await acme.create(
      600,
      metadataFor(testBytes(600, 2), { organization_id: 'acme', match_id: 'q-2' }),
    );
    expect(refused.status).toBe(507);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await refused.json()).toMatchObject({
      code: 'quota_exceeded',
      organization_id: 'acme',
      quota_bytes: 1000,
      reserved_bytes: 600,
      stored_bytes: 0,
      requested_bytes: 600,
    });
    // Per organization: another one has its own quota; a listed one its own size.
    expect((await other.create(600, metadataFor(first, { organization_id: 'other' }))).status).toBe(201);
    expect((await big.create(50_000, metadataFor(testBytes(50_000), { organization_id: 'big' }))).status).toBe(201);

    // Nobody writes to the stranded upload: its reservation lapses on the SE, and the quota frees.
    await waitFor(async () => (await reservationOf(stranded)) === null, {
      timeoutMs: 30_000,
      message: 'the stranded reservation lapses on the SE',
    });
    const again = testBytes(600, 3);
    const path = await waitFor(
      async () => {
        const response = await acme.create(600, metadataFor(again, { organization_id: 'acme', match_id: 'q-3' }));
        return response.status === 201 ? new URL(response.headers.get('location') ?? '', ingest.url).pathname : null;
      },
      { timeoutMs: 30_000, message: 'the quota counts no lapsed reservation' },
    );
    // The lapsed upload is gone (410), not resumable.
    expect((await acme.patch(stranded, 0, first)).status).toBe(410);

    // Progress renews the reservation: each PATCH moves its expiry forward.
    const before = await reservationOf(path);
    await waitFor(async () => Date.now() > Date.parse(before?.expires_at ?? '') - TTL_MS + 50, { timeoutMs: 5_000 });
    expect((await acme.patch(path, 0, again.subarray(0, 300))).status).toBe(204);
    const after = await reservationOf(path);
    expect(Date.parse(after?.expires_at ?? '')).toBeGreaterThan(Date.parse(before?.expires_at ?? ''));
    expect((await acme.send(path, again, 300)).status).toBe(204);

    // Stored bytes count too: 600 stored + 600 asked > 1000.
    const full = await acme.create(600, metadataFor(testBytes(600, 4), { organization_id: 'acme', match_id: 'q-4' }));
    expect(full.status).toBe(507);
    expect(await full.json()).toMatchObject({ code: 'quota_exceeded', stored_bytes: 600 });
    expect((await acme.create(400, metadataFor(testBytes(400, 5), { organization_id: 'acme' }))).status).toBe(201);
  });

  it('INGEST_ORG_QUOTAS must be an object of byte counts', () => {
    expect(parseOrganizationQuotas('{"acme": 10}')).toEqual({ acme: 10 });
    expect(() => parseOrganizationQuotas('[1]')).toThrow(/INGEST_ORG_QUOTAS/);
    expect(() => parseOrganizationQuotas('{"acme": -1}')).toThrow(/INGEST_ORG_QUOTAS/);
    expect(() => parseOrganizationQuotas('{"acme": "1"}')).toThrow(/INGEST_ORG_QUOTAS/);
  });
});
