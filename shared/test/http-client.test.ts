import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createHttpAgent,
  httpJson,
  httpJsonResponse,
  PolyvisionError,
  parseRetryAfterMs,
  type RunningServer,
  retry,
  serve,
} from '../src/index.ts';

const itemSchema = z.object({ id: z.string(), sizeBytes: z.number().int() });

let peer: RunningServer;
let other: RunningServer;
let otherHits = 0;
let flaky = 0;

beforeAll(async () => {
  const app = new Hono();
  app.get('/item', (c) => c.json({ id: 'a', sizeBytes: 42 }));
  app.get('/wrong-shape', (c) => c.json({ id: 7 }));
  app.get('/garbage', (c) => c.body('{"id": "a", oops', 200, { 'content-type': 'application/json' }));
  app.get('/empty', (c) => c.body(null, 204));
  app.get('/unavailable', (c) => c.json({ code: 'draining', message: 'going down' }, 503));
  app.get('/full', (c) => c.json({ code: 'insufficient_storage', message: 'full', available: 10, requested: 99 }, 507));
  app.get('/rate-limited', (c) => c.json({ code: 'slow_down', message: 'later' }, 429, { 'retry-after': '2' }));
  app.get('/missing', (c) => c.json({ code: 'not_found', message: 'no such item' }, 404));
  app.get('/slow', async (c) => {
    await new Promise((r) => setTimeout(r, 2_000));
    return c.json({ id: 'late', sizeBytes: 1 });
  });
  app.get('/big', (c) => c.json({ id: 'x'.repeat(2 * 1024 * 1024), sizeBytes: 1 }));
  app.post('/echo', async (c) => c.json({ got: await c.req.json(), type: c.req.header('content-type') }));
  app.get('/hop', (c) => c.redirect('/item', 302));
  app.post('/post-hop', (c) => c.redirect('/item', 303));
  app.get('/loop', (c) => c.redirect('/loop', 302));
  app.get('/away', (c) => c.redirect(`${other.url}/item`, 302));
  app.get('/flaky', (c) => {
    flaky++;
    return flaky < 3 ? c.json({ code: 'busy', message: 'try later' }, 503) : c.json({ id: 'f', sizeBytes: flaky });
  });
  peer = await serve(app, { closeGraceMs: 100 });
  const otherApp = new Hono();
  otherApp.all('*', (c) => {
    otherHits++;
    return c.json({ id: 'stolen', sizeBytes: 0 });
  });
  other = await serve(otherApp);
});

afterAll(async () => {
  await peer?.close();
  await other?.close();
});

async function failure(promise: Promise<unknown>): Promise<PolyvisionError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PolyvisionError);
  return error as PolyvisionError;
}

describe('httpJson against a real server', () => {
  it('returns the body validated by the schema', async () => {
    await expect(httpJson(`${peer.url}/item`, { schema: itemSchema })).resolves.toEqual({ id: 'a', sizeBytes: 42 });
  });

  it('sends objects as JSON', async () => {
    const body = await httpJson(`${peer.url}/echo`, { method: 'POST', body: { size_bytes: 5 } });
    expect(body).toEqual({ got: { size_bytes: 5 }, type: 'application/json' });
  });

  it('refuses a body that does not match the contract (not retriable)', async () => {
    const error = await failure(httpJson(`${peer.url}/wrong-shape`, { schema: itemSchema }));
    expect(error).toMatchObject({ code: 'invalid_response', retriable: false });
    expect(error.message).toMatch(/id/);
  });

  it('refuses garbage JSON (not retriable)', async () => {
    const error = await failure(httpJson(`${peer.url}/garbage`));
    expect(error).toMatchObject({ code: 'invalid_response', retriable: false });
    expect(error.details.body_start).toBe('{"id": "a", oops');
  });

  it('treats 204 as no body, and refuses it when the schema needs one', async () => {
    const response = await httpJsonResponse(`${peer.url}/empty`);
    expect(response).toMatchObject({ status: 204, body: undefined });
    expect(await failure(httpJson(`${peer.url}/empty`, { schema: itemSchema }))).toMatchObject({
      code: 'invalid_response',
    });
  });

  it('maps 5xx to retriable http_unavailable and keeps the peer code', async () => {
    const error = await failure(httpJson(`${peer.url}/unavailable`));
    expect(error).toMatchObject({ code: 'http_unavailable', retriable: true });
    expect(error.details).toMatchObject({ status: 503, peer_code: 'draining', peer_message: 'going down' });
    const full = await failure(httpJson(`${peer.url}/full`));
    expect(full.details).toMatchObject({
      status: 507,
      peer_code: 'insufficient_storage',
      peer_body: { available: 10, requested: 99 },
    });
  });

  it('maps 429 to retriable http_rate_limited with Retry-After in ms', async () => {
    const error = await failure(httpJson(`${peer.url}/rate-limited`));
    expect(error).toMatchObject({ code: 'http_rate_limited', retriable: true });
    expect(error.details.retry_after_ms).toBe(2_000);
  });

  it('maps other 4xx to http_rejected, not retriable', async () => {
    const error = await failure(httpJson(`${peer.url}/missing`));
    expect(error).toMatchObject({ code: 'http_rejected', retriable: false });
    expect(error.details).toMatchObject({ status: 404, peer_code: 'not_found' });
  });

  it('times out with retriable http_timeout', async () => {
    // /slow answers after 2 s, so only the client's own timeout can make this fail (no wall-clock bound needed).
    const error = await failure(httpJson(`${peer.url}/slow`, { timeoutMs: 150 }));
    expect(error).toMatchObject({ code: 'http_timeout', retriable: true, details: { timeout_ms: 150 } });
  });

  it('stops with `aborted` when the caller aborts', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const error = await failure(httpJson(`${peer.url}/slow`, { signal: controller.signal }));
    expect(error).toMatchObject({ code: 'aborted', retriable: false });
  });

  it('maps a refused connection to retriable http_unavailable', async () => {
    const gone = await serve(new Hono());
    await gone.close();
    const error = await failure(httpJson(`${gone.url}/item`));
    expect(error).toMatchObject({ code: 'http_unavailable', retriable: true });
    expect(error.details.network_code).toBe('ECONNREFUSED');
  });

  it('caps the body size', async () => {
    const error = await failure(httpJson(`${peer.url}/big`, { maxBodyBytes: 1024 * 1024 }));
    expect(error).toMatchObject({ code: 'response_too_large', retriable: false });
  });

  it('follows same-origin redirects, switching to GET after 303', async () => {
    const hop = await httpJsonResponse(`${peer.url}/hop`, { schema: itemSchema });
    expect(hop).toMatchObject({ status: 200, url: `${peer.url}/item`, body: { id: 'a' } });
    const post = await httpJson(`${peer.url}/post-hop`, { method: 'POST', body: { x: 1 }, schema: itemSchema });
    expect(post.id).toBe('a');
    expect(await failure(httpJson(`${peer.url}/loop`, { maxRedirects: 3 }))).toMatchObject({
      code: 'redirect_refused',
    });
  });

  it('refuses a redirect to another origin and never contacts it', async () => {
    const before = otherHits;
    const error = await failure(
      httpJson(`${peer.url}/away`, { headers: { authorization: 'Bearer secret' }, schema: itemSchema }),
    );
    expect(error).toMatchObject({ code: 'redirect_refused', retriable: false });
    expect(error.details.location).toBe(`${other.url}/item`);
    expect(otherHits).toBe(before);
  });

  it('composes with retry() for transient failures', async () => {
    flaky = 0;
    const body = await retry(() => httpJson(`${peer.url}/flaky`, { schema: itemSchema }), { baseDelayMs: 5 });
    expect(body).toEqual({ id: 'f', sizeBytes: 3 });
  });
});

describe('httpJson against a raw socket peer', () => {
  let raw: Server;
  let rawUrl: string;
  const okSockets = new Set<unknown>();

  beforeAll(async () => {
    raw = createServer((req, res) => {
      if (req.url === '/stall') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
        res.write('{"id":');
        return;
      }
      if (req.url === '/cut') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
        res.write('{"id":');
        setTimeout(() => res.socket?.destroy(), 20);
        return;
      }
      okSockets.add(req.socket);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'k', sizeBytes: 1 }));
    });
    await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
    rawUrl = `http://127.0.0.1:${(raw.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    raw.closeAllConnections();
    await new Promise((resolve) => raw.close(resolve));
  });

  it('maps a connection cut mid-body to retriable http_unavailable', async () => {
    const error = await failure(httpJson(`${rawUrl}/cut`));
    expect(error).toMatchObject({ code: 'http_unavailable', retriable: true });
  });

  it('times out a body that stalls after the headers', async () => {
    // /stall never sends the rest of its body: only the client's timeout ends this.
    const error = await failure(httpJson(`${rawUrl}/stall`, { timeoutMs: 200 }));
    expect(error).toMatchObject({ code: 'http_timeout', retriable: true, details: { timeout_ms: 200 } });
  });

  it('reuses kept-alive connections through createHttpAgent', async () => {
    const agent = createHttpAgent({ connections: 4 });
    try {
      okSockets.clear();
      for (let i = 0; i < 10; i++) {
        await httpJson(`${rawUrl}/ok`, { dispatcher: agent, schema: itemSchema });
      }
      // undici may open a second socket when a request follows the first response within the same tick.
      expect(okSockets.size).toBeLessThanOrEqual(2);
    } finally {
      await agent.close();
    }
  });
});

describe('parseRetryAfterMs', () => {
  it('reads seconds and HTTP dates', () => {
    expect(parseRetryAfterMs('3')).toBe(3_000);
    expect(parseRetryAfterMs(new Date(10_000).toUTCString(), 4_000)).toBe(6_000);
    expect(parseRetryAfterMs('soon')).toBeUndefined();
    expect(parseRetryAfterMs(undefined)).toBeUndefined();
  });
});
