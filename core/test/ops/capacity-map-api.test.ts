import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestRedis,
  createTestSchema,
  type TestRedis,
  type TestSchema,
  uniqueName,
  waitFor,
} from '../../../test/support/index.ts';
import { createEdgeToken, type RunningIngest } from '../../src/ingest/index.ts';
import type { CapacityMap } from '../../src/ops/index.ts';
import { metadataFor, startIngestInProcess, TusClient, testBytes } from '../ingest/support/harness.ts';
import { type FleetSe, OPS_TOKEN, OTHER_OPS_TOKEN, opsIngestEnv, reserveOn, startFleet } from './support/fleet.ts';

const MiB = 2 ** 20;
let schema: TestSchema;
let redis: TestRedis;
let fleet: FleetSe[] = [];
let ingest: RunningIngest;

beforeAll(async () => {
  schema = await createTestSchema('ops_api');
  redis = await createTestRedis('ops-api');
  fleet = await startFleet(2, 64 * MiB);
  ingest = await startIngestInProcess(
    opsIngestEnv(fleet, { schema: schema.schema, redisPrefix: `${redis.prefix}${uniqueName('i')}:` }),
  );
});
afterAll(async () => {
  await ingest?.close();
  await Promise.all(fleet.map((f) => f.se.stop()));
  await redis?.close();
  await schema?.close();
});

const api = (path: string, init: RequestInit = {}) => fetch(`${ingest.url}${path}`, { redirect: 'manual', ...init });
const asOperator = (token = OPS_TOKEN) => ({ headers: { authorization: `Bearer ${token}` } });

async function capacityMap(): Promise<CapacityMap> {
  const response = await api('/api/v1/capacity-map', asOperator());
  expect(response.status).toBe(200);
  return (await response.json()) as CapacityMap;
}

async function login(token: string): Promise<Response> {
  return api('/ops/login', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token }).toString(),
  });
}

describe('GET /api/v1/capacity-map', () => {
  it('refuses no token, wrong tokens and edge tokens with 401 and a JSON code', async () => {
    const { token: edgeToken } = await createEdgeToken(ingest.db, 'acme');
    for (const headers of [
      {},
      { authorization: 'Bearer not-an-operator-token-at-all' },
      { authorization: `Bearer ${OPS_TOKEN}x` },
      { authorization: `Bearer ${edgeToken}` },
    ]) {
      const response = await api('/api/v1/capacity-map', { headers });
      expect(response.status, JSON.stringify(headers)).toBe(401);
      expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(await response.json()).toMatchObject({ code: 'unauthorized' });
    }
    const malformed = await api('/api/v1/capacity-map', { headers: { authorization: 'Basic b3BzOm9wcw==' } });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ code: 'invalid_request' });
    const events = await api('/api/v1/capacity-map/events', { headers: { authorization: 'Bearer wrong-token-wrong' } });
    expect(events.status).toBe(401);
  });

  it('shows every SE with its capacity, the datacenters, this replica as leader, totals and jobs', async () => {
    const map = await waitFor(
      async () => {
        const m = await capacityMap();
        const ready = m.storage_elements.every((se) => se.health === 'healthy' && !se.stale) && m.leader;
        // the leader change is recorded by the refresh after the read that first saw the term
        return ready && m.events.some((e) => e.type === 'leader_changed') ? m : null;
      },
      { timeoutMs: 15_000, message: 'both SEs polled and a leader elected' },
    );
    expect(map.storage_elements.map((se) => se.storage_id)).toEqual(fleet.map((f) => f.id));
    for (const se of map.storage_elements) {
      expect(se.total_bytes).toBe(64 * MiB);
      expect(se.mode).toBe('rw');
      expect(se.writable).toBe(true);
      expect(se.last_poll_age_ms).toBeLessThan(se.stale_after_ms);
    }
    expect(map.datacenters.map((d) => [d.location, d.coordinates])).toEqual(
      fleet.map((f) => [f.location, f.coordinates]),
    );
    expect(map.totals.writable_total_bytes).toBe(128 * MiB);
    expect(map.leader?.instance_id).toBe(map.served_by);
    expect(map.leader?.since).toMatch(/^\d{4}-/);
    expect(map.instances).toEqual([expect.objectContaining({ instance_id: map.served_by, leader: true })]);
    expect(map.jobs).toEqual({ stages: [], latest: [], claim_problems: [] });
    expect(map.events.some((e) => e.type === 'leader_changed' && e.instance_id === map.served_by)).toBe(true);
    // the second operator token works too
    expect((await api('/api/v1/capacity-map', asOperator(OTHER_OPS_TOKEN))).status).toBe(200);
  });
});

describe('/ops page and session', () => {
  it('shows the login form without a session and refuses a wrong token', async () => {
    const page = await api('/ops');
    expect(page.status).toBe(401);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(await page.text()).toContain('name="token"');
    const wrong = await login('wrong-operator-token-123');
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();
    expect(await wrong.text()).toContain('not an operator token');
  });

  it('logs in with an operator token: an HttpOnly SameSite cookie that opens the page, the API and the stream', async () => {
    const response = await login(OPS_TOKEN);
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/ops');
    const setCookie = response.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(/pv_ops_session=v1\./);
    expect(setCookie).toMatch(/HttpOnly/i);
    expect(setCookie).toMatch(/SameSite=Strict/i);
    const cookie = setCookie.split(';')[0] as string;
    const page = await api('/ops', { headers: { cookie } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('/ops/assets/app.js');
    expect((await api('/api/v1/capacity-map', { headers: { cookie } })).status).toBe(200);
    const tampered = `${cookie.slice(0, -3)}AAA`;
    expect((await api('/api/v1/capacity-map', { headers: { cookie: tampered } })).status).toBe(401);
    expect((await api('/ops', { headers: { cookie: tampered } })).status).toBe(401);
    const script = await api('/ops/assets/app.js');
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toContain('javascript');
    expect((await api('/ops/assets/nope.js')).status).toBe(404);
  });

  it('streams the map as server-sent events and pushes a reservation on an SE within the poll interval', async () => {
    const controller = new AbortController();
    const response = await api('/api/v1/capacity-map/events', { ...asOperator(), signal: controller.signal });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const reader = (response.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    const nextMap = async (): Promise<CapacityMap> => {
      for (;;) {
        const end = buffer.indexOf('\n\n');
        if (end >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (!block.includes('event: capacity-map')) continue;
          const data = block
            .split('\n')
            .filter((l) => l.startsWith('data: '))
            .map((l) => l.slice(6))
            .join('\n');
          return JSON.parse(data) as CapacityMap;
        }
        const { value, done } = await reader.read();
        if (done) throw new Error('stream ended');
        buffer += value;
      }
    };
    const target = fleet[0] as FleetSe;
    let reservationId: string | undefined;
    try {
      const first = await nextMap();
      const before = first.storage_elements.find((s) => s.storage_id === target.id);
      expect(before?.reserved_bytes).toBe(0);
      reservationId = await reserveOn(target.se, 24 * MiB);
      // The next maps pushed (poll base interval 0.3 s + refresh 0.25 s) carry it; the test timeout
      // bounds the wait, and how soon it arrives is not asserted (it depends on the host's load).
      let after: CapacityMap | undefined;
      while (!after) {
        const m = await nextMap();
        if ((m.storage_elements.find((s) => s.storage_id === target.id)?.reserved_bytes ?? 0) >= 24 * MiB) after = m;
      }
      expect(after.storage_elements.find((s) => s.storage_id === target.id)?.reserved_bytes).toBeGreaterThanOrEqual(
        24 * MiB,
      );
    } finally {
      controller.abort();
      await reader.cancel().catch(() => undefined);
      if (reservationId) await target.se.fetch(`/api/v1/reservations/${reservationId}`, { method: 'DELETE' });
    }
  });
});

describe('507s', () => {
  it('counts 507s per SE for the last hour and records them with their lazy updates', async () => {
    // A replica polling rarely, so its cache still believes the SEs are empty when another writer fills them.
    const slow = await startIngestInProcess(
      opsIngestEnv(fleet, {
        schema: schema.schema,
        redisPrefix: `${redis.prefix}${uniqueName('slow')}:`,
        CAPACITY_MONITOR_BASE_INTERVAL: '60',
        CAPACITY_MONITOR_MAX_INTERVAL: '120',
      }),
    );
    const reservations: Array<{ f: FleetSe; id: string }> = [];
    try {
      const slowMap = async () => {
        const r = await fetch(`${slow.url}/api/v1/capacity-map`, asOperator());
        return (await r.json()) as CapacityMap;
      };
      await waitFor(async () => (await slowMap()).storage_elements.every((se) => se.total_bytes > 0), {
        timeoutMs: 10_000,
        message: 'first poll of the slow replica',
      });
      for (const f of fleet) reservations.push({ f, id: await reserveOn(f.se, 56 * MiB) });
      const { token } = await createEdgeToken(slow.db, 'acme');
      const response = await new TusClient(slow.url, token).create(32 * MiB, metadataFor(testBytes(1024)));
      expect(response.status).toBe(507);
      const map = await waitFor(
        async () => {
          const m = await slowMap();
          return m.storage_elements.every((se) => se.insufficient_storage_last_hour === 1) ? m : null;
        },
        { timeoutMs: 10_000, message: '507s counted' },
      );
      const types = map.events.map((e) => `${e.type}:${e.storage_id ?? ''}`);
      for (const f of fleet) {
        expect(types).toContain(`insufficient_storage:${f.id}`);
        expect(types).toContain(`lazy_update:${f.id}`);
      }
    } finally {
      for (const r of reservations) await r.f.se.fetch(`/api/v1/reservations/${r.id}`, { method: 'DELETE' });
      await slow.close();
    }
  });
});
