import { readFileSync } from 'node:fs';
import { Hono } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { streamSSE } from 'hono/streaming';
import { isOperatorToken, opsAuth } from './auth.ts';
import type { CapacityMap } from './capacity-map.ts';
import type { OpsMap } from './ops-map.ts';
import { loginPage, mapPage } from './page/html.ts';
import { OPS_SESSION_COOKIE, type OpsSessions } from './session.ts';

/** Path of the page. */
export const OPS_PAGE_PATH = '/ops';
/** Path of the JSON API. */
export const CAPACITY_MAP_PATH = '/api/v1/capacity-map';
/** Path of the server-sent events. */
export const CAPACITY_MAP_EVENTS_PATH = '/api/v1/capacity-map/events';

/** Options of {@link opsRoutes}. */
export interface OpsRoutesOptions {
  map: OpsMap;
  tokens: readonly string[];
  sessions: OpsSessions;
  /** Ends every open SSE stream when aborted (the replica is closing). */
  signal: AbortSignal;
  /** Seconds between SSE comment lines that keep proxies from closing an idle stream. @defaultValue 15 */
  heartbeatSeconds?: number;
}

const ASSETS: Record<string, { body: string; type: string }> = {
  'app.js': {
    body: readFileSync(new URL('./page/app.js', import.meta.url), 'utf8'),
    type: 'text/javascript; charset=utf-8',
  },
  'app.css': {
    body: readFileSync(new URL('./page/app.css', import.meta.url), 'utf8'),
    type: 'text/css; charset=utf-8',
  },
};

/** No inline script, no style sheet from elsewhere (bar widths are style attributes), nothing fetched from another origin: the page works offline. */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; style-src-attr 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; " +
  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/**
 * The ops capacity map over HTTP (core/README.md, "Ops capacity map"):
 *
 * - `GET /ops` — the page with a valid session cookie, else a login form (401);
 *   `POST /ops/login` (form field `token`) checks an operator token and sets
 *   the HttpOnly, SameSite=Strict session cookie, then redirects to `/ops`
 *   (303); a wrong token gets the form again (401). `POST /ops/logout` clears it.
 * - `GET /ops/assets/app.js|app.css` — the page's script and style (no data, no auth).
 * - `GET /api/v1/capacity-map` — the {@link CapacityMap} as JSON (cookie or bearer).
 * - `GET /api/v1/capacity-map/events` — `text/event-stream` (WHATWG HTML
 *   "Server-sent events"): `event: capacity-map` with the map as `data`, at
 *   once and whenever it changes; `retry: 2000`; a comment every
 *   `heartbeatSeconds`.
 */
export function opsRoutes(options: OpsRoutesOptions): Hono {
  const { map, tokens, sessions, signal } = options;
  const heartbeatMs = (options.heartbeatSeconds ?? 15) * 1000;
  const app = new Hono();
  const auth = opsAuth(tokens, sessions);

  const html = (body: string, status: 200 | 401) =>
    new Response(body, {
      status,
      headers: {
        'content-type': 'text/html; charset=utf-8',
        'content-security-policy': CSP,
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
      },
    });

  app.get(OPS_PAGE_PATH, (c) =>
    sessions.verify(getCookie(c, OPS_SESSION_COOKIE)) ? html(mapPage(), 200) : html(loginPage(), 401),
  );
  app.post(`${OPS_PAGE_PATH}/login`, async (c) => {
    const form = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
    const token = typeof form.token === 'string' ? form.token.trim() : '';
    if (!token || token.length > 512 || !isOperatorToken(tokens, token)) {
      return html(loginPage(token ? 'That token is not an operator token.' : 'Enter an operator token.'), 401);
    }
    setCookie(c, OPS_SESSION_COOKIE, sessions.issue(token), {
      httpOnly: true,
      sameSite: 'Strict',
      path: '/',
      secure: new URL(c.req.url).protocol === 'https:' || c.req.header('x-forwarded-proto') === 'https',
      maxAge: Math.floor(sessions.ttlMs / 1000),
    });
    return c.redirect(OPS_PAGE_PATH, 303);
  });
  app.post(`${OPS_PAGE_PATH}/logout`, (c) => {
    deleteCookie(c, OPS_SESSION_COOKIE, { path: '/' });
    return c.redirect(OPS_PAGE_PATH, 303);
  });
  app.get(`${OPS_PAGE_PATH}/assets/:name`, (c) => {
    const asset = ASSETS[c.req.param('name')];
    if (!asset) return c.json({ code: 'not_found', message: 'no such asset' }, 404);
    return c.body(asset.body, 200, { 'content-type': asset.type, 'cache-control': 'no-cache' });
  });

  app.get(CAPACITY_MAP_PATH, auth, async (c) => {
    c.header('cache-control', 'no-store');
    return c.json(await map.read());
  });

  app.get(CAPACITY_MAP_EVENTS_PATH, auth, (c) => {
    c.header('cache-control', 'no-store');
    c.header('x-accel-buffering', 'no');
    return streamSSE(c, async (stream) => {
      let seq = 0;
      let pending: Promise<void> = Promise.resolve();
      let lastSentAt = '';
      const send = (m: CapacityMap) => {
        // the first read and a pushed refresh may finish in either order: never go back in time
        if (m.generated_at < lastSentAt) return;
        lastSentAt = m.generated_at;
        pending = pending.then(() =>
          stream.writeSSE({ event: 'capacity-map', data: JSON.stringify(m), id: String(++seq), retry: 2000 }),
        );
      };
      const done = new Promise<void>((resolve) => {
        if (signal.aborted) resolve();
        signal.addEventListener('abort', () => resolve(), { once: true });
        stream.onAbort(() => resolve());
      });
      const unsubscribe = map.subscribe(send);
      const heartbeat = setInterval(() => {
        pending = pending.then(() => stream.write(': heartbeat\n\n')).then(() => undefined);
      }, heartbeatMs);
      try {
        send(await map.read());
        await done;
      } finally {
        clearInterval(heartbeat);
        unsubscribe();
        await pending.catch(() => undefined);
      }
    });
  });
  return app;
}
