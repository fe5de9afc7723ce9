/**
 * The bad-input catalogue of issue 19, replayed against real processes: a
 * storage element, an ingest replica and an orchestrator as child processes
 * on the real Redis and PostgreSQL (debug logs captured). It is the
 * regression test for all of it, and asserts at the end:
 * - 0 responses of 500 (every response of the suite is recorded);
 * - 0 secrets in any captured log: none of the suite's tokens, the
 *   database password or the malformed URLs' passwords.
 *
 * Each row says what it replays; the expectation is the fix's answer.
 */
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { formatTusMetadata } from '@polyvision/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, migrate } from '../../core/src/db/index.ts';
import { createEdgeToken } from '../../core/src/ingest/edge-tokens.ts';
import { type IngestProcess, spawnIngest, storageElementsJson } from '../../core/test/ingest/support/harness.ts';
import { TOKEN as SE_TOKEN, type SeProcess, startSe } from '../../storage-element/test/support/se-process.ts';
import {
  createTestRedis,
  createTestSchema,
  type ServiceProcess,
  serviceUrl,
  spawnService,
  spawnTracked,
  type TestRedis,
  type TestSchema,
  uniqueName,
  waitFor,
} from '../support/index.ts';

const OPERATOR_TOKEN = `op-${randomBytes(12).toString('hex')}`;
const METRICS_TOKEN = `mx-${randomBytes(12).toString('hex')}`;
const WRONG_TOKENS = [`pve_deadbeefdeadbeef_${randomBytes(32).toString('base64url')}`, `op-${'z'.repeat(30)}`];
const URL_PASSWORD = `pw-${randomBytes(8).toString('hex')}`;
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/** Every response of the suite: method, url, status. */
const responses: Array<{ what: string; status: number }> = [];
const secrets: string[] = [OPERATOR_TOKEN, METRICS_TOKEN, SE_TOKEN, URL_PASSWORD, ...WRONG_TOKENS];

async function call(what: string, url: string, init: RequestInit = {}): Promise<Response> {
  const response = await fetch(url, { redirect: 'manual', ...init });
  responses.push({ what, status: response.status });
  return response;
}

async function codeOf(response: Response): Promise<string | undefined> {
  const text = await response.text();
  try {
    return (JSON.parse(text) as { code?: string }).code;
  } catch {
    return undefined;
  }
}

let schema: TestSchema;
let redis: TestRedis;
let se: SeProcess;
let ingest: IngestProcess;
let orchestrator: ServiceProcess;
let edgeToken: string;
const otherTokens: string[] = [];

beforeAll(async () => {
  schema = await createTestSchema('bad_input');
  redis = await createTestRedis('bad-input');
  const databasePassword = new URL(serviceUrl('DATABASE_URL')).password;
  if (databasePassword) secrets.push(decodeURIComponent(databasePassword));
  se = await startSe({ STORAGE_ELEMENT_ID: 'se-bad', STORAGE_BODY_IDLE_TIMEOUT_MS: '1000', LOG_LEVEL: 'debug' });
  ingest = await spawnIngest({
    REDIS_URL: serviceUrl('REDIS_URL'),
    DATABASE_URL: serviceUrl('DATABASE_URL'),
    DATABASE_SCHEMA: schema.schema,
    REDIS_KEY_PREFIX: redis.prefix,
    INGEST_PORT: '0',
    STORAGE_ELEMENTS: storageElementsJson([{ se, id: 'se-bad', location: 'dc1' }]),
    CAPACITY_MONITOR_BASE_INTERVAL: '0.3',
    OPS_TOKENS: OPERATOR_TOKEN,
    METRICS_TOKENS: METRICS_TOKEN,
    INGEST_ORG_QUOTAS: JSON.stringify({ tiny: 100 }),
    LOG_LEVEL: 'debug',
  });
  orchestrator = await spawnService(
    'deploy/src/cli/main.ts',
    {
      DATABASE_URL: serviceUrl('DATABASE_URL'),
      DATABASE_SCHEMA: schema.schema,
      KAFKA_BROKERS: '',
      REDIS_URL: '',
      POLYVISION_TOPIC_PREFIX: uniqueName('bad'),
      ORCHESTRATOR_HTTP_PORT: '0',
      OPS_TOKENS: OPERATOR_TOKEN,
      LOG_LEVEL: 'debug',
    },
    { label: 'orchestrator', args: ['orchestrator'], cwd: repoRoot, startTimeoutMs: 60_000 },
  );
  const db = createDatabase({ databaseUrl: serviceUrl('DATABASE_URL'), schema: schema.schema });
  try {
    await migrate(db);
    edgeToken = (await createEdgeToken(db, 'acme', 'edge-1')).token;
    otherTokens.push((await createEdgeToken(db, 'other-org')).token);
    otherTokens.push((await createEdgeToken(db, 'tiny')).token);
  } finally {
    await db.close();
  }
  secrets.push(edgeToken, ...otherTokens);
  await waitFor(async () => (await fetch(`${ingest.url}/health/ready`)).status === 200, { timeoutMs: 20_000 });
}, 120_000);

afterAll(async () => {
  await orchestrator?.stop();
  await ingest?.stop();
  await se?.stop();
  await redis?.close();
  await schema?.close();
});

const tus = (token: string, headers: Record<string, string> = {}) => ({
  authorization: `Bearer ${token}`,
  'tus-resumable': '1.0.0',
  ...headers,
});
const metadata = (over: Record<string, string> = {}) =>
  formatTusMetadata({
    organization_id: 'acme',
    match_id: 'm-1',
    kind: 'panorama',
    filename: 'panorama.mp4',
    sha256: 'a'.repeat(64),
    ...over,
  });

describe('bad input to ingest', () => {
  it('Upload-Length 0 is a clear 400, without Retry-After (not 507)', async () => {
    const response = await call('ingest POST length 0', `${ingest.url}/api/v1/uploads`, {
      method: 'POST',
      headers: tus(edgeToken, { 'upload-length': '0', 'upload-metadata': metadata() }),
    });
    expect(response.status).toBe(400);
    expect(response.headers.get('retry-after')).toBeNull();
    expect(await codeOf(response)).toBe('upload_empty');
  });

  it.each([
    ['-1', 400, 'invalid_upload_length'],
    ['abc', 400, 'invalid_upload_length'],
    ['99999999999999999999', 400, 'invalid_upload_length'],
    [String(2 ** 50), 413, 'upload_too_large'],
  ])('Upload-Length %s → %i %s', async (length, status, code) => {
    const response = await call(`ingest POST length ${length}`, `${ingest.url}/api/v1/uploads`, {
      method: 'POST',
      headers: tus(edgeToken, { 'upload-length': length, 'upload-metadata': metadata() }),
    });
    expect(response.status).toBe(status);
    expect(await codeOf(response)).toBe(code);
  });

  it('a NUL byte in metadata, an upload id or a query is a 400 with a code, never a PostgreSQL error', async () => {
    const nulMeta = await call('ingest POST NUL metadata', `${ingest.url}/api/v1/uploads`, {
      method: 'POST',
      headers: tus(edgeToken, { 'upload-length': '10', 'upload-metadata': metadata({ match_id: 'm\u0000x' }) }),
    });
    expect(nulMeta.status).toBe(400);
    expect(await codeOf(nulMeta)).toBe('invalid_metadata');
    for (const method of ['HEAD', 'PATCH', 'DELETE', 'GET']) {
      const response = await call(`ingest ${method} NUL id`, `${ingest.url}/api/v1/uploads/ab%00cd`, {
        method,
        headers: tus(edgeToken, { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }),
      });
      expect(response.status, method).toBe(400);
      if (method !== 'HEAD') expect(await codeOf(response)).toBe('invalid_characters');
    }
    const text = await (
      await call('ingest GET NUL id body', `${ingest.url}/api/v1/uploads/%00`, { headers: tus(edgeToken) })
    ).text();
    expect(text).not.toMatch(/invalid byte sequence|0x00|postgres/i);
    const query = await call('ingest capacity-map NUL query', `${ingest.url}/api/v1/capacity-map?x=%00`, {
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}` },
    });
    expect(query.status).toBe(400);
  });

  it('an id that is not an upload id, or a path traversal, is a 404; another organization is refused', async () => {
    for (const id of ['not-hex', '..%2F..%2Fetc%2Fpasswd', 'a'.repeat(300)]) {
      const response = await call(`ingest HEAD ${id.slice(0, 20)}`, `${ingest.url}/api/v1/uploads/${id}`, {
        method: 'HEAD',
        headers: tus(edgeToken),
      });
      expect(response.status, id).toBe(404);
    }
    const foreign = await call('ingest POST other org', `${ingest.url}/api/v1/uploads`, {
      method: 'POST',
      headers: tus(otherTokens[0] as string, { 'upload-length': '10', 'upload-metadata': metadata() }),
    });
    expect(foreign.status).toBe(403);
    for (const token of WRONG_TOKENS) {
      const response = await call('ingest POST wrong token', `${ingest.url}/api/v1/uploads`, {
        method: 'POST',
        headers: tus(token, { 'upload-length': '10', 'upload-metadata': metadata() }),
      });
      expect(response.status).toBe(401);
    }
  });
});

describe('more bad input to ingest', () => {
  it('an organization over its quota gets 507 quota_exceeded with Retry-After', async () => {
    const response = await call('ingest POST over quota', `${ingest.url}/api/v1/uploads`, {
      method: 'POST',
      headers: tus(otherTokens[1] as string, {
        'upload-length': '1000',
        'upload-metadata': metadata({ organization_id: 'tiny' }),
      }),
    });
    expect(response.status).toBe(507);
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await codeOf(response)).toBe('quota_exceeded');
  });

  it('a bad Upload-Checksum, an oversized header and a malformed Authorization are 4xx', async () => {
    const created = await call('ingest POST for checksum', `${ingest.url}/api/v1/uploads`, {
      method: 'POST',
      headers: tus(edgeToken, { 'upload-length': '10', 'upload-metadata': metadata({ match_id: 'cks' }) }),
    });
    expect(created.status).toBe(201);
    const path = new URL(created.headers.get('location') ?? '', ingest.url).pathname;
    const patch = (checksum: string) =>
      call('ingest PATCH bad checksum', `${ingest.url}${path}`, {
        method: 'PATCH',
        headers: tus(edgeToken, {
          'upload-offset': '0',
          'content-type': 'application/offset+octet-stream',
          'upload-checksum': checksum,
        }),
        body: Buffer.alloc(10, 1),
      });
    expect((await patch('crc32 AAAA')).status).toBe(400);
    expect((await patch('sha256 AAAA')).status).toBe(460);
    const huge = await call('ingest huge header', `${ingest.url}/api/v1/uploads`, {
      method: 'POST',
      headers: tus(edgeToken, { 'upload-length': '10', 'upload-metadata': `a ${'x'.repeat(20_000)}` }),
    });
    expect([400, 431]).toContain(huge.status);
    const malformed = await call('ingest malformed authorization', `${ingest.url}/api/v1/uploads`, {
      method: 'POST',
      headers: { authorization: 'Basic dXNlcjpwYXNz', 'tus-resumable': '1.0.0', 'upload-length': '10' },
    });
    expect([400, 401]).toContain(malformed.status);
  });
});

describe('bad input to the ops map', () => {
  const ops = (path: string) => `${ingest.url}${path}`;
  const form = (token: string, headers: Record<string, string> = {}) => ({
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: `token=${encodeURIComponent(token)}`,
  });

  it('/ops/assets/__proto__ and friends are 404', async () => {
    for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      const response = await call(`ops asset ${name}`, ops(`/ops/assets/${name}`));
      expect(response.status, name).toBe(404);
    }
    expect((await call('ops asset app.js', ops('/ops/assets/app.js'))).status).toBe(200);
  });

  it('a session cookie no longer works after logout', async () => {
    const login = await call('ops login', ops('/ops/login'), form(OPERATOR_TOKEN));
    expect(login.status).toBe(303);
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] as string;
    expect(cookie).toMatch(/^pv_ops_session=/);
    const before = await call('ops map with cookie', ops('/api/v1/capacity-map'), { headers: { cookie } });
    expect(before.status).toBe(200);
    const logout = await call('ops logout', ops('/ops/logout'), { method: 'POST', headers: { cookie } });
    expect(logout.status).toBe(303);
    const after = await call('ops map after logout', ops('/api/v1/capacity-map'), { headers: { cookie } });
    expect(after.status).toBe(401);
    const page = await call('ops page after logout', ops('/ops'), { headers: { cookie } });
    expect(page.status).toBe(401);
  });

  it('a login or logout form from another origin is refused', async () => {
    const login = await call(
      'ops login cross-origin',
      ops('/ops/login'),
      form(OPERATOR_TOKEN, { origin: 'https://evil.example' }),
    );
    expect(login.status).toBe(403);
    expect(await codeOf(login)).toBe('origin_forbidden');
    expect(login.headers.get('set-cookie')).toBeNull();
    const site = await call(
      'ops login cross-site',
      ops('/ops/login'),
      form(OPERATOR_TOKEN, { 'sec-fetch-site': 'cross-site' }),
    );
    expect(site.status).toBe(403);
    const logout = await call('ops logout cross-origin', ops('/ops/logout'), {
      method: 'POST',
      headers: { origin: 'null' },
    });
    expect(logout.status).toBe(403);
    const same = await call('ops login same origin', ops('/ops/login'), form(OPERATOR_TOKEN, { origin: ingest.url }));
    expect(same.status).toBe(303);
  });

  it('failed logins are rate limited per address: 429 with Retry-After, even for the right token', async () => {
    let limited: Response | undefined;
    for (let i = 0; i < 20 && !limited; i++) {
      const response = await call('ops login wrong', ops('/ops/login'), form(WRONG_TOKENS[1] as string));
      if (response.status === 429) limited = response;
      else expect(response.status).toBe(401);
    }
    expect(limited?.status).toBe(429);
    expect(Number(limited?.headers.get('retry-after'))).toBeGreaterThan(0);
    const right = await call('ops login right while limited', ops('/ops/login'), form(OPERATOR_TOKEN));
    expect(right.status).toBe(429);
  });
});

describe('bad input to the orchestrator', () => {
  const auth = () => ({ headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } });
  it.each([
    ['/api/v1/jobs/%00', 400, 'invalid_characters'],
    ['/api/v1/jobs/job-%0d%0aX', 400, 'invalid_characters'],
    ['/api/v1/jobs?status=%00', 400, 'invalid_characters'],
    ['/api/v1/jobs?organization_id=acme%00', 400, 'invalid_characters'],
    ['/api/v1/jobs?status=exploded', 400, 'invalid_filter'],
    ['/api/v1/jobs?limit=abc', 400, 'invalid_filter'],
    ['/api/v1/jobs?cursor=%E0%A4%A', 400, 'invalid_request'],
    ['/api/v1/jobs?cursor=bm90LWEtY3Vyc29y', 400, 'invalid_filter'],
    [`/api/v1/jobs/${'j'.repeat(500)}`, 400, 'invalid_filter'],
    ['/api/v1/jobs/no-such-job', 404, 'job_not_found'],
  ])('%s → %i %s', async (path, status, code) => {
    const response = await call(`orchestrator ${path.slice(0, 40)}`, `${orchestrator.url}${path}`, auth());
    expect(response.status).toBe(status);
    expect(await codeOf(response)).toBe(code);
  });

  it('another organization cannot list or read jobs with its edge token', async () => {
    const response = await call(
      'orchestrator other org filter',
      `${orchestrator.url}/api/v1/jobs?organization_id=acme`,
      { headers: { authorization: `Bearer ${otherTokens[0]}` } },
    );
    expect(response.status).toBe(403);
  });
});

describe('bad input to a storage element', () => {
  const post = (body: unknown) =>
    call('se POST upload', `${se.url}/api/v1/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SE_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('a content_type with CR/LF or NUL is refused at creation', async () => {
    for (const contentType of ['video/mp4\r\nX-Injected: 1', 'video/mp4\n', 'video/\u0000mp4', 'é/mp4', '']) {
      const response = await post({ size_bytes: 10, content_type: contentType });
      expect(response.status, JSON.stringify(contentType)).toBe(400);
      expect(await codeOf(response)).toBe('invalid_request');
    }
    const ok = await post({ size_bytes: 10, content_type: 'video/mp4; codecs="avc1"' });
    expect(ok.status).toBe(201);
  });

  it('a stalled PATCH sent straight to the SE frees the upload within its body idle timeout', async () => {
    const created = (await (await post({ size_bytes: 4096 })).json()) as { upload_id: string };
    const { port, hostname } = new URL(se.url);
    // A client that announces 4096 bytes, sends 1000 and then goes silent (socket kept open).
    const socket = connect(Number(port), hostname);
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    socket.on('error', () => {});
    socket.write(
      `PATCH /api/v1/uploads/${created.upload_id} HTTP/1.1\r\nHost: ${hostname}:${port}\r\n` +
        `Authorization: Bearer ${SE_TOKEN}\r\nUpload-Offset: 0\r\nContent-Type: application/offset+octet-stream\r\n` +
        'Content-Length: 4096\r\n\r\n',
    );
    socket.write(Buffer.alloc(1000, 7));
    try {
      await waitFor(
        async () => {
          const head = await se.fetch(`/api/v1/uploads/${created.upload_id}`, { method: 'HEAD' });
          return head.headers.get('upload-offset') === '1000';
        },
        { timeoutMs: 30_000, message: 'the stalled request is cut and its 1000 bytes kept' },
      );
      const resumed = await call('se PATCH resume after stall', `${se.url}/api/v1/uploads/${created.upload_id}`, {
        method: 'PATCH',
        headers: {
          authorization: `Bearer ${SE_TOKEN}`,
          'upload-offset': '1000',
          'content-type': 'application/offset+octet-stream',
        },
        body: Buffer.alloc(3096, 7),
      });
      expect(resumed.status).toBe(204);
      expect(resumed.headers.get('upload-offset')).toBe('4096');
    } finally {
      socket.destroy();
    }
  });
});

describe('bad configuration', () => {
  it.each([
    ['DATABASE_URL', `postgres://polyvision:${URL_PASSWORD}@db host:5432/polyvision`],
    ['DATABASE_URL', `postgres://polyvision:${URL_PASSWORD}/with-slash@[::1:5432/x`],
    ['REDIS_URL', `redis://:${URL_PASSWORD}@[bad-host:6379`],
    ['OPS_TOKENS', `short,${URL_PASSWORD}`],
  ])('a malformed %s names the variable and never echoes its secret', async (variable, value) => {
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/root',
      REDIS_URL: serviceUrl('REDIS_URL'),
      STORAGE_ELEMENTS: JSON.stringify([
        { storage_id: 'se-x', endpoint: 'http://127.0.0.1:1', token: 'se-token-x', location: 'dc1' },
      ]),
      [variable]: value,
    };
    const child = spawnTracked(process.execPath, ['core/src/ingest/main.ts'], {
      env,
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout?.on('data', (d) => (output += String(d)));
    child.stderr?.on('data', (d) => (output += String(d)));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code, output).toBe(2);
    expect(output).toContain(variable);
    expect(output).not.toContain(URL_PASSWORD);
  });
});

describe('the whole suite', () => {
  it('got no 500 and left no secret in any log', async () => {
    expect(responses.length).toBeGreaterThan(40);
    // 507 is an answer (quota, storage), with Retry-After; nothing else of the 5xx family is.
    expect(responses.filter((r) => r.status >= 500 && r.status !== 507)).toEqual([]);
    expect(responses.filter((r) => r.status === 507).map((r) => r.what)).toEqual(['ingest POST over quota']);
    const logs = { se: se.stderr(), ingest: ingest.stderr(), orchestrator: orchestrator.stderr() };
    expect(logs.ingest.length).toBeGreaterThan(0);
    for (const [name, log] of Object.entries(logs)) {
      for (const secret of secrets) expect(log.includes(secret), `${name} log holds a secret`).toBe(false);
    }
    const logBytes = Object.values(logs).reduce((n, log) => n + log.length, 0);
    process.stderr.write(
      `[bad-input] ${responses.length} responses, ${responses.filter((r) => r.status === 500).length} of 500; ` +
        `${secrets.length} secrets searched in ${logBytes} bytes of debug logs: 0 found\n`,
    );
  });
});
