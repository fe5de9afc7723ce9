import { readFileSync } from 'node:fs';
import { type Context, Hono } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { streamSSE } from 'hono/streaming';
import { isOperatorToken, opsAuth, validSession } from './auth.ts';
import type { CapacityMap } from './capacity-map.ts';
import { LoginLimiter } from './login-limiter.ts';
import type { OpsMap } from './ops-map.ts';
import { loginPage, mapPage } from './page/html.ts';
import { OPS_SESSION_COOKIE, type OpsSessions } from './session.ts';
import { SessionRevocations } from './session-revocations.ts';

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
  /** Logged-out cookies. @defaultValue this replica's memory only */
  revocations?: SessionRevocations;
  /** Failed logins per client. @defaultValue 10 per 5 minutes */
  loginLimiter?: LoginLimiter;
}

const ASSETS = new Map<string, { body: string; type: string }>(
  Object.entries({
    'app.js': {
      body: readFileSync(new URL('./page/app.js', import.meta.url), 'utf8'),
      type: 'text/javascript; charset=utf-8',
    },
    'app.css': {
      body: readFileSync(new URL('./page/app.css', import.meta.url), 'utf8'),
      type: 'text/css; charset=utf-8',
    },
  }),
);

/**
 * Whether a state-changing form POST comes from this origin (Fetch Metadata,
 * W3C "Fetch Metadata Request Headers"): a browser's `Sec-Fetch-Site` must be
 * `same-origin` (or `none`: typed by the user). Without it, an `Origin` must
 * name this host — the page's `Referrer-Policy: no-referrer` makes browsers
 * send `Origin: null` on same-origin forms, which is then refused, so such a
 * browser must send Fetch Metadata. A client that sends neither (curl,
 * scripts) is not a browser and cannot be a cross-site form.
 */
function sameOrigin(c: Context): boolean {
  const site = c.req.header('sec-fetch-site');
  if (site !== undefined) return site === 'same-origin' || site === 'none';
  const origin = c.req.header('origin');
  if (origin === undefined) return true;
  if (origin === 'null') return false;
  try {
    return new URL(origin).host === (c.req.header('host') ?? new URL(c.req.url).host);
  } catch {
    return false;
  }
}

/** The client's address as the socket saw it (no proxy header is trusted). */
function clientAddress(c: Context): string {
  const incoming = (c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming;
  return incoming?.socket?.remoteAddress ?? 'unknown';
}

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
 *   (303); a wrong token gets the form again (401); more than 10 failures
 *   from one address in 5 minutes: 429 `login_rate_limited` with
 *   `Retry-After`. `POST /ops/logout` clears the cookie and revokes it (it no
 *   longer works anywhere, even if kept). Both refuse a browser form from
 *   another origin (403 `origin_forbidden`).
 * - `GET /ops/assets/app.js|app.css` — the page's script and style (no data, no auth).
 * - `GET /api/v1/capacity-map` — the {@link CapacityMap} as JSON (cookie or bearer).
 * - `GET /api/v1/capacity-map/events` — `text/event-stream` (WHATWG HTML
 *   "Server-sent events"): `event: capacity-map` with the map as `data`, at
 *   once and whenever it changes; `retry: 2000`; a comment every
 *   `heartbeatSeconds`.
 */
export function opsRoutes(options: OpsRoutesOptions): Hono {
  const { map, tokens, sessions, signal } = options;
  const revocations = options.revocations ?? new SessionRevocations();
  const limiter = options.loginLimiter ?? new LoginLimiter();
  const heartbeatMs = (options.heartbeatSeconds ?? 15) * 1000;
  const app = new Hono();
  const auth = opsAuth(tokens, sessions, revocations);
  const forbidden = (c: Context) =>
    c.json({ code: 'origin_forbidden', message: 'a form from another origin may not sign in or out' }, 403);

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

  app.get(OPS_PAGE_PATH, async (c) =>
    (await validSession(getCookie(c, OPS_SESSION_COOKIE), sessions, revocations))
      ? html(mapPage(), 200)
      : html(loginPage(), 401),
  );
  app.post(`${OPS_PAGE_PATH}/login`, async (c) => {
    if (!sameOrigin(c)) return forbidden(c);
    const client = clientAddress(c);
    const waitMs = limiter.retryAfterMs(client);
    if (waitMs > 0) {
      return c.json(
        { code: 'login_rate_limited', message: 'too many failed sign-ins from this address; try again later' },
        429,
        { 'retry-after': String(Math.ceil(waitMs / 1000)) },
      );
    }
    const form = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
    const token = typeof form.token === 'string' ? form.token.trim() : '';
    if (!token || token.length > 512 || !isOperatorToken(tokens, token)) {
      limiter.fail(client);
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
  app.post(`${OPS_PAGE_PATH}/logout`, async (c) => {
    if (!sameOrigin(c)) return forbidden(c);
    const cookie = getCookie(c, OPS_SESSION_COOKIE);
    const expiresAtMs = cookie ? sessions.expiresAtMs(cookie) : null;
    // The cookie is signed, not stored: it stays refused until it would have expired.
    if (cookie && expiresAtMs !== null) await revocations.revoke(cookie, expiresAtMs);
    deleteCookie(c, OPS_SESSION_COOKIE, { path: '/' });
    return c.redirect(OPS_PAGE_PATH, 303);
  });
  app.get(`${OPS_PAGE_PATH}/assets/:name`, (c) => {
    const asset = ASSETS.get(c.req.param('name'));
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
