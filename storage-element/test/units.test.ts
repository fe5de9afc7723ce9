/** In-process checks of the pure parts: the reservation ledger, Range parsing, configuration. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, PolyvisionError } from '@polyvision/shared';
import { afterEach, describe, expect, it } from 'vitest';
import { loadStorageElementConfig } from '../src/config.ts';
import { etagMatches, parseRange } from '../src/files/range.ts';
import { ReservationLedger } from '../src/reservations/ledger.ts';

describe('ReservationLedger', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
  });
  async function ledgerAt(now: () => number) {
    const dir = await mkdtemp(join(tmpdir(), 'ledger-'));
    dirs.push(dir);
    const stateFile = join(dir, 'state', 'reservations.json');
    return { stateFile, ledger: await ReservationLedger.open({ stateFile, now }) };
  }

  it('books only what fits after outstanding bytes; written bytes stop counting as reserved', async () => {
    const { ledger } = await ledgerAt(Date.now);
    const a = ledger.reserve(600, 60_000, 1_000);
    expect(() => ledger.reserve(600, 60_000, 1_000)).toThrowError(
      expect.objectContaining({
        code: 'insufficient_storage',
        httpStatus: 507,
        details: { available: 400, requested: 600 },
      }),
    );
    ledger.bind(a.reservationId, 'u-1', 500);
    expect(ledger.outstandingBytes).toBe(500);
    ledger.recordWritten(a.reservationId, 200);
    expect(ledger.outstandingBytes).toBe(300);
    ledger.recordWritten(a.reservationId, -200);
    expect(ledger.outstandingBytes).toBe(500);
    expect(() => ledger.bind(a.reservationId, 'u-2', 10)).toThrowError(
      expect.objectContaining({ code: 'reservation_in_use' }),
    );
    ledger.release(a.reservationId);
    expect(ledger.outstandingBytes).toBe(0);
  });

  it('expires by its clock (410 afterwards), renews on activity, and survives reopening', async () => {
    let now = 1_000_000;
    const { ledger, stateFile } = await ledgerAt(() => now);
    const a = ledger.reserve(10, 1_000, 100);
    const b = ledger.reserve(20, 5_000, 100);
    await ledger.persist();
    now += 900;
    ledger.renew(a.reservationId);
    now += 900;
    expect(ledger.get(a.reservationId).sizeBytes).toBe(10);
    now += 1_000;
    expect(ledger.sweep().map((r) => r.reservationId)).toEqual([a.reservationId]);
    expect(() => ledger.get(a.reservationId)).toThrowError(
      expect.objectContaining({ code: 'reservation_expired', httpStatus: 410 }),
    );
    expect(() => ledger.get('r-unknown')).toThrowError(
      expect.objectContaining({ code: 'reservation_not_found', httpStatus: 404 }),
    );
    await ledger.persist();
    const reopened = await ReservationLedger.open({ stateFile, now: () => now });
    expect(reopened.get(b.reservationId).sizeBytes).toBe(20);
    expect(reopened.outstandingBytes).toBe(20);
    now += 10_000;
    const later = await ReservationLedger.open({ stateFile, now: () => now });
    expect(later.size).toBe(0);
    expect(() => later.get(b.reservationId)).toThrowError(expect.objectContaining({ code: 'reservation_expired' }));
  });

  it('never oversubscribes under many interleaved requests', async () => {
    const { ledger } = await ledgerAt(Date.now);
    const results = await Promise.allSettled(
      Array.from({ length: 200 }, async (_, i) => {
        await new Promise((r) => setTimeout(r, i % 7));
        return ledger.reserve(7, 60_000, 1_000);
      }),
    );
    const won = results.filter((r) => r.status === 'fulfilled').length;
    expect(won).toBe(Math.floor(1_000 / 7));
    expect(ledger.outstandingBytes).toBe(won * 7);
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(PolyvisionError);
  });
});

describe('parseRange (RFC 9110 §14)', () => {
  it.each([
    [undefined, 100, { kind: 'whole' }],
    ['bytes=0-9', 100, { kind: 'partial', range: { start: 0, end: 9 } }],
    ['bytes=90-', 100, { kind: 'partial', range: { start: 90, end: 99 } }],
    ['bytes=95-200', 100, { kind: 'partial', range: { start: 95, end: 99 } }],
    ['bytes=-10', 100, { kind: 'partial', range: { start: 90, end: 99 } }],
    ['bytes=-500', 100, { kind: 'partial', range: { start: 0, end: 99 } }],
    ['bytes=100-', 100, { kind: 'unsatisfiable' }],
    ['bytes=-0', 100, { kind: 'unsatisfiable' }],
    ['bytes=0-0', 0, { kind: 'unsatisfiable' }],
    ['bytes=5-2', 100, { kind: 'whole' }],
    ['bytes=0-1,5-6', 100, { kind: 'whole' }],
    ['items=0-1', 100, { kind: 'whole' }],
    ['bytes=abc', 100, { kind: 'whole' }],
  ] as const)('%s of %i bytes', (header, size, expected) => {
    expect(parseRange(header, size)).toEqual(expected);
  });

  it('matches entity tags, weak or strong, in lists and *', () => {
    expect(etagMatches('"a", W/"b"', '"b"')).toBe(true);
    expect(etagMatches('*', '"x"')).toBe(true);
    expect(etagMatches('"a"', '"b"')).toBe(false);
    expect(etagMatches(undefined, '"b"')).toBe(false);
  });
});

describe('loadStorageElementConfig', () => {
  const base = {
    STORAGE_ELEMENT_ID: 'se-dc2-01',
    STORAGE_DATACENTER_LOCATION: 'dc2',
    STORAGE_DATA_DIR: '/tmp/x',
    STORAGE_TOKENS: 'a, b ,c',
  };
  it('fills defaults and converts units once', () => {
    const c = loadStorageElementConfig(base);
    expect(c).toMatchObject({ backend: 'local', mode: 'rw', port: 8300, host: '127.0.0.1', tokens: ['a', 'b', 'c'] });
    expect(c.reservationTtlMs).toBe(600_000);
    expect(c.s3).toBeUndefined();
  });
  it('reads the S3 settings with the seed soft limit in bytes', () => {
    const c = loadStorageElementConfig({
      ...base,
      STORAGE_TYPE: 's3',
      STORAGE_S3_SOFT_CAPACITY_LIMIT: '10995116277760',
      STORAGE_S3_ENDPOINT: 'http://127.0.0.1:59000',
      STORAGE_S3_BUCKET: 'bucket',
      STORAGE_S3_ACCESS_KEY_ID: 'k',
      STORAGE_S3_SECRET_ACCESS_KEY: 's',
    });
    expect(c.s3).toMatchObject({ softCapacityLimitBytes: 10995116277760, prefix: 'se-dc2-01/', forcePathStyle: true });
  });
  it.each([
    [{ STORAGE_ELEMENT_ID: '../x' }, 'STORAGE_ELEMENT_ID'],
    [{ STORAGE_PORT: '70000' }, 'STORAGE_PORT'],
    [{ STORAGE_RESERVED_BYTES: '-1' }, 'STORAGE_RESERVED_BYTES'],
    [{ STORAGE_CAPACITY_LIMIT_BYTES: '1.5' }, 'STORAGE_CAPACITY_LIMIT_BYTES'],
    [{ STORAGE_TYPE: 's3' }, 'STORAGE_S3_ENDPOINT'],
    [{ STORAGE_RESERVATION_TTL_MS: '90000000' }, 'STORAGE_RESERVATION_TTL_MS'],
  ])('rejects %o naming %s', (override, variable) => {
    try {
      loadStorageElementConfig({ ...base, ...override });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).variable).toBe(variable);
    }
  });
});
