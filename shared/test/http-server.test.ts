import { Writable } from 'node:stream';
import { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { pino } from 'pino';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  bearerAuth,
  errorHandler,
  healthRoutes,
  notFoundHandler,
  PolyvisionError,
  type RunningServer,
  serve,
} from '../src/index.ts';

const logLines: string[] = [];
const logger = pino(
  { level: 'info' },
  new Writable({
    write(chunk, _enc, cb) {
      logLines.push(String(chunk));
      cb();
    },
  }),
);

let server: RunningServer;
let redisUp = true;

beforeAll(async () => {
  const app = new Hono();
  app.onError(errorHandler({ logger }));
  app.notFound(notFoundHandler);
  app.route(
    '/',
    healthRoutes({
      ready: {
        redis: () => {
          if (!redisUp) throw new Error('connect ECONNREFUSED 127.0.0.1:6379');
        },
        disk: () => true,
        hung: () => (redisUp ? true : new Promise(() => {})),
      },
      checkTimeoutMs: 200,
    }),
  );
  app.get('/full', () => {
    throw new PolyvisionError('insufficient_storage', 'no room', {
      httpStatus: 507,
      details: { available: 5, requested: 10 },
    });
  });
  app.get('/later', () => {
    throw new PolyvisionError('no_capacity', 'all full', { httpStatus: 507, details: { retry_after_ms: 1_500 } });
  });
  app.post('/parse', async (c) => c.json(z.object({ size_bytes: z.number().int().min(1) }).parse(await c.req.json())));
  app.get('/bug', () => {
    throw new TypeError('secret internals at /srv/app.ts:12');
  });
  app.get('/teapot', () => {
    throw new HTTPException(418, { message: 'short and stout' });
  });
  const secured = new Hono();
  secured.use('*', bearerAuth({ tokens: ['s3cr3t-token', 'second-token'] }));
  secured.get('/whoami', (c) => c.json({ ok: true }));
  app.route('/api', secured);
  const verified = new Hono();
  verified.use('*', bearerAuth({ verify: (token) => token.startsWith('ok-') }));
  verified.get('/x', (c) => c.json({ ok: true }));
  app.route('/verified', verified);
  server = await serve(app);
});

afterAll(async () => {
  await server?.close();
});

async function call(path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) {
  const response = await request(`${server.url}${path}`, {
    method: (init.method ?? 'GET') as 'GET',
    headers: init.headers,
    body: init.body,
  });
  const text = await response.body.text();
  return { status: response.statusCode, headers: response.headers, json: text ? JSON.parse(text) : undefined };
}

describe('errorHandler and notFoundHandler', () => {
  it('answers a PolyvisionError with its status and {code, message, ...details}', async () => {
    const { status, json } = await call('/full');
    expect(status).toBe(507);
    expect(json).toEqual({ code: 'insufficient_storage', message: 'no room', available: 5, requested: 10 });
  });

  it('sets Retry-After from details.retry_after_ms, in whole seconds', async () => {
    const { status, headers, json } = await call('/later');
    expect(status).toBe(507);
    expect(headers['retry-after']).toBe('2');
    expect(json.code).toBe('no_capacity');
    expect((await call('/full')).headers['retry-after']).toBeUndefined();
  });

  it('answers a zod error with 400 validation_failed and the path', async () => {
    const { status, json } = await call('/parse', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ size_bytes: -1 }),
    });
    expect(status).toBe(400);
    expect(json.code).toBe('validation_failed');
    expect(json.message).toMatch(/^size_bytes: /);
    expect(json.issues[0].path).toEqual(['size_bytes']);
  });

  it('answers an unexpected error with 500 internal_error, logs it, and leaks nothing', async () => {
    logLines.length = 0;
    const { status, json } = await call('/bug');
    expect(status).toBe(500);
    expect(json).toEqual({ code: 'internal_error', message: 'internal error' });
    expect(JSON.stringify(json)).not.toMatch(/secret|srv/);
    expect(logLines.join('')).toMatch(/secret internals/);
  });

  it('keeps hono HTTPExceptions as http_<status>', async () => {
    const { status, json } = await call('/teapot');
    expect(status).toBe(418);
    expect(json).toEqual({ code: 'http_418', message: 'short and stout' });
  });

  it('answers unknown routes with 404 not_found', async () => {
    const { status, json } = await call('/nowhere');
    expect(status).toBe(404);
    expect(json.code).toBe('not_found');
  });
});

describe('bearerAuth', () => {
  it('refuses a missing header with 401 unauthorized and a challenge', async () => {
    const { status, json, headers } = await call('/api/whoami');
    expect(status).toBe(401);
    expect(json.code).toBe('unauthorized');
    expect(headers['www-authenticate']).toBe('Bearer realm="polyvision"');
  });

  it('refuses a wrong token with 401 and error="invalid_token"', async () => {
    const { status, json, headers } = await call('/api/whoami', { headers: { authorization: 'Bearer s3cr3t-tokem' } });
    expect(status).toBe(401);
    expect(json.code).toBe('unauthorized');
    expect(headers['www-authenticate']).toBe('Bearer error="invalid_token"');
  });

  it('refuses a malformed header with 400 invalid_request (RFC 6750 §3.1)', async () => {
    const { status, json } = await call('/api/whoami', { headers: { authorization: 'Basic abc' } });
    expect(status).toBe(400);
    expect(json.code).toBe('invalid_request');
  });

  it('accepts any listed token, and a verify function', async () => {
    expect((await call('/api/whoami', { headers: { authorization: 'Bearer s3cr3t-token' } })).status).toBe(200);
    expect((await call('/api/whoami', { headers: { authorization: 'Bearer second-token' } })).status).toBe(200);
    expect((await call('/verified/x', { headers: { authorization: 'Bearer ok-1' } })).status).toBe(200);
    expect((await call('/verified/x', { headers: { authorization: 'Bearer no-1' } })).status).toBe(401);
  });

  it('refuses an empty token list at construction', () => {
    expect(() => bearerAuth({ tokens: [] })).toThrow(PolyvisionError);
    expect(() => bearerAuth({ tokens: [''] })).toThrow(/non-empty/);
  });
});

describe('healthRoutes', () => {
  it('answers live and ready with 200 when checks pass', async () => {
    redisUp = true;
    expect((await call('/health/live')).status).toBe(200);
    const ready = await call('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.json.status).toBe('ok');
    expect(Object.keys(ready.json.checks).sort()).toEqual(['disk', 'hung', 'redis']);
  });

  it('answers ready with 503 and the failing checks, bounded by the check timeout', async () => {
    redisUp = false;
    // The `hung` check never settles: an answer at all shows the check timeout bounds it.
    const ready = await call('/health/ready');
    expect(ready.status).toBe(503);
    expect(ready.json.status).toBe('fail');
    expect(ready.json.checks.redis).toMatchObject({ ok: false, error: expect.stringMatching(/ECONNREFUSED/) });
    expect(ready.json.checks.hung).toMatchObject({ ok: false, error: expect.stringMatching(/timed out/) });
    expect(ready.json.checks.disk.ok).toBe(true);
    expect((await call('/health/live')).status).toBe(200);
    redisUp = true;
  });
});

describe('serve', () => {
  it('binds port 0 to a real port and closes kept-alive connections at once', async () => {
    const app = new Hono().get('/', (c) => c.json({ ok: true }));
    // A grace far beyond the test timeout: close() returning at all shows idle connections were closed at once.
    const running = await serve(app, { closeGraceMs: 3_600_000 });
    expect(running.port).toBeGreaterThan(0);
    expect(running.url).toBe(`http://127.0.0.1:${running.port}`);
    const agent = new Agent({ keepAliveTimeout: 60_000 });
    const response = await request(running.url, { dispatcher: agent });
    expect(await response.body.json()).toEqual({ ok: true });
    await running.close();
    await expect(request(running.url, { dispatcher: agent })).rejects.toThrow();
    await agent.close();
  });

  it('cuts in-flight requests after closeGraceMs', async () => {
    let arrived: () => void = () => undefined;
    const inHandler = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    // The handler never answers: only the grace cut can end the request (and close()).
    const app = new Hono().get('/slow', async () => {
      arrived();
      return new Promise<never>(() => undefined);
    });
    const running = await serve(app, { closeGraceMs: 100 });
    const pending = request(`${running.url}/slow`).then(
      () => 'answered',
      () => 'cut',
    );
    await inHandler;
    await running.close();
    expect(await pending).toBe('cut');
  });

  it('closes when its signal aborts', async () => {
    const controller = new AbortController();
    const running = await serve(new Hono(), { signal: controller.signal });
    controller.abort();
    await running.close();
    expect(running.server.listening).toBe(false);
  });

  it('reports a taken port as listen_failed', async () => {
    const first = await serve(new Hono());
    try {
      await expect(serve(new Hono(), { port: first.port })).rejects.toMatchObject({ code: 'listen_failed' });
    } finally {
      await first.close();
    }
  });
});
