import { PolyvisionError } from '@polyvision/shared';
import { Hono } from 'hono';
import { seErrors } from '../errors.ts';
import { assertSafeId, parseSizeBytes } from '../ids.ts';
import type { Reservation } from '../reservations/reservation.ts';
import type { SeEnv, SeServices } from './context.ts';
import { assertWritable, readJsonObject } from './request-helpers.ts';

function view(r: Reservation) {
  return {
    reservation_id: r.reservationId,
    size_bytes: r.sizeBytes,
    written_bytes: r.writtenBytes,
    expires_at: new Date(r.expiresAtMs).toISOString(),
    upload_id: r.uploadId,
  };
}

/**
 * Books `sizeBytes` for `ttlMs`: measures free space, then checks and books
 * synchronously in the ledger (never oversubscribes), then persists.
 *
 * @throws PolyvisionError `insufficient_storage` (507).
 */
export async function reserveBytes(
  s: SeServices,
  sizeBytes: number,
  ttlMs: number,
  reason: string,
): Promise<Reservation> {
  const free = await s.capacity.freeForReservations();
  try {
    const r = s.ledger.reserve(sizeBytes, ttlMs, free);
    await s.ledger.persist();
    return r;
  } catch (error) {
    if (error instanceof PolyvisionError && error.code === 'insufficient_storage') {
      s.metrics.insufficientStorage.inc({ reason });
    }
    throw error;
  }
}

/** Reservation routes: `POST /api/v1/reservations`, `GET|DELETE /api/v1/reservations/:id`. */
export function reservationRoutes(s: SeServices): Hono<SeEnv> {
  const app = new Hono<SeEnv>();
  app.post('/api/v1/reservations', async (c) => {
    assertWritable(s.config);
    const body = await readJsonObject(c);
    const sizeBytes = parseSizeBytes('size_bytes', body.size_bytes, { allowZero: false });
    let ttlMs = s.config.reservationTtlMs;
    if (body.ttl_ms !== undefined) {
      const ttl = body.ttl_ms;
      if (typeof ttl !== 'number' || !Number.isSafeInteger(ttl) || ttl < 1 || ttl > s.config.reservationMaxTtlMs) {
        throw seErrors.invalidRequest(`ttl_ms must be an integer from 1 to ${s.config.reservationMaxTtlMs}`);
      }
      ttlMs = ttl;
    }
    const r = await reserveBytes(s, sizeBytes, ttlMs, 'reservation');
    c.header('Location', `/api/v1/reservations/${r.reservationId}`);
    return c.json(view(r), 201);
  });
  app.get('/api/v1/reservations/:id', (c) => {
    const id = assertSafeId('reservation_id', c.req.param('id'));
    return c.json(view(s.ledger.get(id)));
  });
  app.delete('/api/v1/reservations/:id', async (c) => {
    const id = assertSafeId('reservation_id', c.req.param('id'));
    const r = s.ledger.get(id);
    if (r.uploadId !== null) await s.uploads.dropByReservation(id);
    s.ledger.release(id);
    await s.ledger.persist();
    return c.body(null, 204);
  });
  return app;
}
