/**
 * Every route of every HTTP service, walked without a token and with a wrong
 * one (issue 19, "Auth: 0 endpoints answering data without a valid token").
 * The routes come from the hono apps themselves (`app.routes`), so a route
 * added later is walked too; the requests go to real servers: a storage
 * element process, an ingest replica and an orchestrator on the real Redis
 * and PostgreSQL, and the edge's status app served over HTTP.
 *
 * Open on purpose (no data): `GET /health/live`; `GET /health/ready` answers
 * `{status}` only (a storage element's needs its token altogether); `OPTIONS` of the tus endpoint (protocol discovery);
 * the ops login form, logout redirect and the page's static script and style.
 */
import { randomUUID } from 'node:crypto';
import { createLogger, Registry, serve, silentLogger } from '@polyvision/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEdgeToken, type RunningIngest } from '../../core/src/ingest/index.ts';
import { orchestratorApp } from '../../core/src/orchestrator/http/orchestrator-app.ts';
import { JobCommandClient } from '../../core/src/orchestrator/job-command-client.ts';
import { loadOrchestratorConfig } from '../../core/src/orchestrator/service/orchestrator-config.ts';
import {
  type OrchestratorService,
  startOrchestratorService,
} from '../../core/src/orchestrator/service/orchestrator-service.ts';
import { ingestEnv, startIngestInProcess, storageElementsJson } from '../../core/test/ingest/support/harness.ts';
import { statusApp } from '../../edge/src/status/index.ts';
import { createSeApp } from '../../storage-element/src/http/app.ts';
import { type SeProcess, startSe } from '../../storage-element/test/support/se-process.ts';
import {
  createTestRedis,
  createTestSchema,
  type TestRedis,
  type TestSchema,
  uniqueName,
  waitFor,
} from '../support/index.ts';

const OPERATOR_TOKEN = 'route-walk-operator-token-0123456789';
const METRICS_TOKEN = 'route-walk-metrics-token-0123456789';
const EDGE_STATUS_TOKEN = 'route-walk-edge-status-token-0123456789';
const WRONG_TOKEN = 'pve_0000000000000000_not-a-real-token-aaaaaaaaaaaaaaaaaaaaaaaaaaa';

/** A route as hono lists it. */
interface Route {
  method: string;
  path: string;
}

/** What the walk needs of a hono app: its route list. */
type Routed = { routes: readonly Route[] };

/** What may answer without a token, and what it may show. */
const OPEN: Array<{ method: string; path: string; why: string }> = [
  { method: 'GET', path: '/health/live', why: 'liveness: {status} only' },
  { method: 'GET', path: '/health/ready', why: 'readiness: {status} only (details need a token)' },
  { method: 'OPTIONS', path: '/api/v1/uploads', why: 'tus protocol discovery: headers only' },
  { method: 'OPTIONS', path: '/api/v1/uploads/:id', why: 'tus protocol discovery: headers only' },
  { method: 'GET', path: '/ops', why: 'the login form (401)' },
  { method: 'POST', path: '/ops/login', why: 'the login form (401 without an operator token)' },
  { method: 'POST', path: '/ops/logout', why: 'clears the cookie, redirects' },
  { method: 'GET', path: '/ops/assets/:name', why: "the page's static script and style" },
];

/** The routes of an app with a handler (not middleware), one per method and path. */
function routesOf(app: Routed): Route[] {
  const seen = new Map<string, Route>();
  for (const r of app.routes) {
    if (r.method === 'ALL') continue; // middleware (`use`)
    seen.set(`${r.method} ${r.path}`, { method: r.method, path: r.path });
  }
  return [...seen.values()];
}

/** A concrete path for a route pattern: parameters become plausible ids. */
function concrete(path: string): string {
  return path.replace(/:[A-Za-z_]+(\{[^}]*\})?/g, 'x0123456789abcdef').replace(/\*/g, 'x');
}

/**
 * Sends `route` with `authorization` (or none) and returns what a client
 * without a valid token got. Fails the test when it got data.
 */
async function walk(baseUrl: string, route: Route, authorization: string | null): Promise<number> {
  const headers: Record<string, string> = { 'tus-resumable': '1.0.0' };
  if (authorization) headers.authorization = authorization;
  const init: RequestInit = { method: route.method, headers, redirect: 'manual' };
  if (route.method === 'POST' || route.method === 'PATCH' || route.method === 'PUT') {
    headers['content-type'] = route.path.startsWith('/ops') ? 'application/x-www-form-urlencoded' : 'application/json';
    init.body = route.path.startsWith('/ops') ? '' : '{}';
  }
  const response = await fetch(`${baseUrl}${concrete(route.path)}`, init);
  const text = route.method === 'HEAD' ? '' : await response.text();
  const open = OPEN.find((o) => o.method === route.method && o.path === route.path);
  const label = `${route.method} ${route.path} (${authorization ? 'wrong token' : 'no token'}) → ${response.status} ${text.slice(0, 200)}`;
  if (!open) {
    expect(response.status, label).toBe(401);
    expect(response.headers.get('www-authenticate'), label).toMatch(/^Bearer/);
    return response.status;
  }
  expect(response.status, label).not.toBe(500);
  if (response.status === 401) return response.status; // stricter than needed (the SE's readiness) is fine
  if (route.path === '/health/ready') expect(Object.keys(JSON.parse(text)), label).toEqual(['status']);
  if (route.path === '/health/live') expect(JSON.parse(text).status, label).toBe('ok');
  return response.status;
}

async function walkAll(baseUrl: string, app: Routed): Promise<Route[]> {
  const routes = routesOf(app);
  for (const route of routes) {
    await walk(baseUrl, route, null);
    await walk(baseUrl, route, `Bearer ${WRONG_TOKEN}`);
  }
  return routes;
}

let schema: TestSchema;
let redis: TestRedis;
let se: SeProcess;
let ingest: RunningIngest;
let orchestrator: OrchestratorService;
const prefix = uniqueName('auth');

beforeAll(async () => {
  schema = await createTestSchema('route_auth');
  redis = await createTestRedis('route-auth');
  se = await startSe({ STORAGE_ELEMENT_ID: 'se-auth' });
  ingest = await startIngestInProcess(
    ingestEnv({
      DATABASE_SCHEMA: schema.schema,
      REDIS_KEY_PREFIX: redis.prefix,
      STORAGE_ELEMENTS: storageElementsJson([{ se, id: 'se-auth', location: 'dc1' }]),
      OPS_TOKENS: OPERATOR_TOKEN,
      METRICS_TOKENS: METRICS_TOKEN,
    }),
  );
  // The orchestrator on the same PostgreSQL schema (edge tokens live there), with its in-memory bus.
  orchestrator = await startOrchestratorService(
    loadOrchestratorConfig({
      DATABASE_URL: process.env.DATABASE_URL,
      DATABASE_SCHEMA: schema.schema,
      ORCHESTRATOR_HTTP_PORT: '0',
      POLYVISION_TOPIC_PREFIX: prefix,
      OPS_TOKENS: OPERATOR_TOKEN,
      METRICS_TOKENS: METRICS_TOKEN,
    }),
    createLogger('test', { level: 'warn' }),
  );
});

afterAll(async () => {
  await orchestrator?.close();
  await ingest?.close();
  await se?.stop();
  await redis?.close();
  await schema?.close();
});

describe('every route of every service refuses a request without a valid token', () => {
  it('storage element', async () => {
    const app = createSeApp({ config: { tokens: ['x'.repeat(16)] }, logger: silentLogger } as never, new Registry());
    const routes = await walkAll(se.url, app);
    expect(routes.length).toBeGreaterThan(8);
    expect((await se.fetch('/metrics')).status).toBe(200);
  });

  it('ingest (tus, ops map, metrics, health)', async () => {
    const routes = await walkAll(ingest.url, ingest.app);
    expect(routes.map((r) => `${r.method} ${r.path}`)).toEqual(
      expect.arrayContaining(['POST /api/v1/uploads', 'GET /api/v1/capacity-map', 'GET /metrics']),
    );
    // With a token: metrics and readiness details.
    const metrics = await fetch(`${ingest.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(metrics.status).toBe(200);
    const ready = await fetch(`${ingest.url}/health/ready`, {
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}` },
    });
    expect(Object.keys((await ready.json()) as object)).toEqual(expect.arrayContaining(['checks', 'capacity_monitor']));
    // An edge token is not a metrics token.
    const { token } = await createEdgeToken(ingest.db, 'acme');
    expect((await fetch(`${ingest.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(401);
  });

  it('orchestrator (jobs, metrics, health)', async () => {
    const app = orchestratorApp({
      db: {} as never,
      registry: new Registry(),
      ready: {},
      operatorTokens: [],
      metricsTokens: [],
    });
    const routes = await walkAll(orchestrator.http.url, app);
    expect(routes.map((r) => `${r.method} ${r.path}`)).toEqual(
      expect.arrayContaining(['GET /api/v1/jobs', 'GET /api/v1/jobs/:id', 'GET /metrics']),
    );
    const metrics = await fetch(`${orchestrator.http.url}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(metrics.status).toBe(200);
    // A metrics token reads metrics, not jobs.
    const jobs = await fetch(`${orchestrator.http.url}/api/v1/jobs`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(jobs.status).toBe(401);
  });

  it('edge status API', async () => {
    const source = {
      status: async () => ({ edge_id: 'edge-1' }) as never,
      ready: () => true,
    };
    const app = statusApp(source, new Registry(), { token: EDGE_STATUS_TOKEN });
    const server = await serve(app);
    try {
      const routes = await walkAll(server.url, app);
      expect(routes.map((r) => `${r.method} ${r.path}`)).toEqual(
        expect.arrayContaining(['GET /api/v1/status', 'GET /metrics']),
      );
      const status = await fetch(`${server.url}/api/v1/status`, {
        headers: { authorization: `Bearer ${EDGE_STATUS_TOKEN}` },
      });
      expect(await status.json()).toEqual({ edge_id: 'edge-1' });
    } finally {
      await server.close();
    }
  });
});

describe("the orchestrator's jobs API is scoped by organization", () => {
  it('an edge token sees its own organization only; an operator token sees all', async () => {
    const producer = orchestrator.connections.bus.createProducer();
    const client = new JobCommandClient(producer, prefix);
    const jobA = `job-${randomUUID()}`;
    try {
      await client.submit({
        job_id: jobA,
        organization_id: 'org-a',
        match_id: 'm-1',
        inputs: [
          {
            kind: 'panorama',
            storage_id: 'se-auth',
            object_key: 'org-a/m-1/panorama.mp4',
            size_bytes: 1024,
            sha256: 'a'.repeat(64),
          },
        ],
        stages: ['detect'],
      });
    } finally {
      await producer.close();
    }
    const url = orchestrator.http.url;
    const as = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
    await waitFor(async () => (await fetch(`${url}/api/v1/jobs/${jobA}`, as(OPERATOR_TOKEN))).status === 200, {
      timeoutMs: 20_000,
      message: 'the job is recorded',
    });
    const a = (await createEdgeToken(orchestrator.connections.db, 'org-a')).token;
    const b = (await createEdgeToken(orchestrator.connections.db, 'org-b')).token;

    expect((await fetch(`${url}/api/v1/jobs/${jobA}`, as(a))).status).toBe(200);
    const foreign = await fetch(`${url}/api/v1/jobs/${jobA}`, as(b));
    expect(foreign.status).toBe(404);
    expect(await foreign.json()).toMatchObject({ code: 'job_not_found' });

    const listB = (await (await fetch(`${url}/api/v1/jobs`, as(b))).json()) as { jobs: { job_id: string }[] };
    expect(listB.jobs.map((j) => j.job_id)).not.toContain(jobA);
    const listA = (await (await fetch(`${url}/api/v1/jobs`, as(a))).json()) as { jobs: { job_id: string }[] };
    expect(listA.jobs.map((j) => j.job_id)).toContain(jobA);
    const forbidden = await fetch(`${url}/api/v1/jobs?organization_id=org-a`, as(b));
    expect(forbidden.status).toBe(403);
    expect(await forbidden.json()).toMatchObject({ code: 'organization_forbidden' });
    const all = (await (await fetch(`${url}/api/v1/jobs`, as(OPERATOR_TOKEN))).json()) as {
      jobs: { job_id: string }[];
    };
    expect(all.jobs.map((j) => j.job_id)).toContain(jobA);

    // A NUL byte in an id or a filter is a 400 with a code, never PostgreSQL's error.
    for (const path of ['/api/v1/jobs/job-%00x', '/api/v1/jobs?match_id=m%00', '/api/v1/jobs?organization_id=%00']) {
      const response = await fetch(`${url}${path}`, as(OPERATOR_TOKEN));
      expect(response.status, path).toBe(400);
      expect(await response.json()).toMatchObject({ code: 'invalid_characters' });
    }
  });
});
