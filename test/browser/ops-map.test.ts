/**
 * The ops capacity map in a real browser (issue 10): Debian's Chromium driven
 * by playwright-core against two ingest processes with real storage-element
 * processes, real Redis and PostgreSQL. Screenshots go to test-artifacts/.
 */
import { copyFile, mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Queryable } from '../../core/src/db/index.ts';
import { createEdgeToken } from '../../core/src/ingest/index.ts';
import {
  type IngestProcess,
  metadataFor,
  spawnIngest,
  TusClient,
  testBytes,
} from '../../core/test/ingest/support/harness.ts';
import { type FleetSe, OPS_TOKEN, opsIngestEnv, reserveOn, startFleet } from '../../core/test/ops/support/fleet.ts';
import {
  createTestRedis,
  createTestSchema,
  type TestRedis,
  type TestSchema,
  uniqueName,
  waitFor,
} from '../support/index.ts';
import { launchChromium, type TestBrowser } from './support/chromium.ts';

const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const ARTIFACTS = join(ROOT, 'test-artifacts', 'ops-map');
const MiB = 2 ** 20;
/** CAPACITY_MONITOR_BASE_INTERVAL of these ingests, in ms; idle SEs are polled at most every 4× this. */
const POLL_BASE_MS = 500;
const REFRESH_MS = 250;

let schema: TestSchema;
let redis: TestRedis;
let fleet: FleetSe[] = [];
const ingests: IngestProcess[] = [];
let browser: TestBrowser;
let page: Page;
let pageIngest: IngestProcess;
let leaderIngest: IngestProcess;
const instanceIds = new Map<IngestProcess, string>();

async function screenshot(name: string): Promise<string> {
  await mkdir(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** The few DOM globals the functions run in the page use (the repository compiles without lib "dom"). */
interface PageElement {
  textContent: string | null;
  getAttribute(name: string): string | null;
  style: { width: string };
}
declare const document: {
  querySelector(selector: string): PageElement | null;
  querySelectorAll(selector: string): ArrayLike<PageElement> & Iterable<PageElement>;
};
declare const location: { hash: string };

const row = (id: string) => page.locator(`#storage tr[data-se="${id}"]`);

/**
 * Job rows as the orchestrator writes them (migration 0002): the panel reads
 * these tables and nothing else, so rows in a known state test it exactly.
 */
async function insertJobs(): Promise<void> {
  const stages = ['detect', 'track', 'vcam', 'analyze', 'encode'];
  const jobs: Array<{ id: string; match: string; status: string; states: string[]; progress: number[] }> = [
    {
      id: 'job-ops-1',
      match: 'derby-2026-11-20',
      status: 'running',
      states: ['completed', 'running', 'pending', 'pending', 'pending'],
      progress: [1, 0.45, 0, 0, 0],
    },
    {
      id: 'job-ops-2',
      match: 'cup-semi-final',
      status: 'running',
      states: ['running', 'pending', 'pending', 'pending', 'pending'],
      progress: [0.8, 0, 0, 0, 0],
    },
    {
      id: 'job-ops-3',
      match: 'league-week-12',
      status: 'failed',
      states: ['completed', 'completed', 'failed', 'completed', 'cancelled'],
      progress: [1, 1, 0.3, 1, 0],
    },
    {
      id: 'job-ops-4',
      match: 'friendly-u19',
      status: 'completed',
      states: ['completed', 'completed', 'completed', 'completed', 'completed'],
      progress: [1, 1, 1, 1, 1],
    },
  ];
  for (const [i, job] of jobs.entries()) {
    const mean = job.progress.reduce((a, b) => a + b, 0) / job.progress.length;
    await schema.pool.query(
      `INSERT INTO jobs (job_id, organization_id, match_id, status, stages, progress, commands_partition, created_at, updated_at)
       VALUES ($1, 'acme', $2, $3, $4, $5, 0, now() - ($6 || ' minutes')::interval, now())`,
      [job.id, job.match, job.status, stages, mean, String(10 * (jobs.length - i))],
    );
    for (const [k, stage] of stages.entries()) {
      await schema.pool.query(
        `INSERT INTO job_stages (job_id, stage, status, max_attempts, model_version, progress) VALUES ($1, $2, $3, 3, 'v1', $4)`,
        [job.id, stage, job.states[k], job.progress[k]],
      );
    }
  }
}

beforeAll(async () => {
  schema = await createTestSchema('ops_browser');
  redis = await createTestRedis('ops-browser');
  fleet = await startFleet(5, 256 * MiB);
  const redisPrefix = `${redis.prefix}${uniqueName('i')}:`;
  for (const name of ['ingest-a', 'ingest-b']) {
    const instanceId = uniqueName(name);
    const ingest = await spawnIngest(
      opsIngestEnv(fleet, {
        schema: schema.schema,
        redisPrefix,
        INGEST_INSTANCE_ID: instanceId,
        CAPACITY_MONITOR_BASE_INTERVAL: String(POLL_BASE_MS / 1000),
        OPS_REFRESH_MS: String(REFRESH_MS),
      }),
    );
    ingests.push(ingest);
    instanceIds.set(ingest, instanceId);
  }
  // Open the page on a follower, so that killing the leader leaves the page's replica up.
  const leaderId = await waitFor(
    async () => {
      const r = await fetch(`${ingests[0]?.url}/api/v1/capacity-map`, {
        headers: { authorization: `Bearer ${OPS_TOKEN}` },
      });
      return ((await r.json()) as { leader: { instance_id: string } | null }).leader?.instance_id;
    },
    { timeoutMs: 15_000, message: 'a capacity-monitor leader' },
  );
  leaderIngest = ingests.find((i) => instanceIds.get(i) === leaderId) as IngestProcess;
  await insertJobs();
  pageIngest = ingests.find((i) => i !== leaderIngest) as IngestProcess;
  expect(leaderIngest).toBeDefined();
  browser = await launchChromium();
  page = await browser.context.newPage();
});

afterAll(async () => {
  await browser?.close();
  await Promise.all(ingests.map((i) => i.stop()));
  await Promise.all(fleet.map((f) => f.se.stop()));
  await redis?.close();
  await schema?.close();
});

describe('ops capacity map in Chromium', () => {
  it('asks for an operator token, refuses a wrong one, then shows every SE, datacenter and the leader', async () => {
    await page.goto(`${pageIngest.url}/ops`);
    await expect(page.locator('label[for="token"]').textContent()).resolves.toBe('Operator token');
    await page.fill('#token', 'not-the-operator-token');
    await page.press('#token', 'Enter');
    await page.waitForSelector('#login-error');
    expect(await page.textContent('#login-error')).toContain('not an operator token');
    await screenshot('01-login-refused');

    await page.fill('#token', OPS_TOKEN);
    await page.click('button[type="submit"]');
    await page.waitForSelector('#storage tr[data-se]');
    await page.waitForFunction(
      (n) => document.querySelectorAll('#storage tr[data-se][data-health="healthy"]').length === n,
      fleet.length,
    );
    for (const f of fleet) {
      await expect(row(f.id).locator('th').textContent()).resolves.toBe(f.id);
      await expect(row(f.id).locator('td').nth(0).textContent()).resolves.toBe(f.location);
    }
    const dcs = await page
      .locator('#map svg a[data-dc]')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-dc')));
    expect(dcs.sort()).toEqual([...new Set(fleet.map((f) => f.location))].sort());
    await expect(page.textContent('#leader-id')).resolves.toBe(instanceIds.get(leaderIngest));
    await expect(page.textContent('#followers')).resolves.toContain(instanceIds.get(pageIngest));
    await page.waitForSelector('#connection[data-state="live"]');
    // keyboard: Tab reaches the first datacenter on the map, Enter jumps to its row in the table
    const first = await page.locator('#map svg a[data-dc]').first().getAttribute('data-dc');
    await page.locator('#map svg a[data-dc]').first().focus();
    await page.keyboard.press('Enter');
    await page.waitForFunction((dc) => location.hash === `#dc-${dc}`, first);
    await screenshot('02-fleet');
  });

  it('moves an SE’s bar within its poll interval when the SE fills up', async () => {
    const target = fleet[1] as FleetSe;
    const bar = row(target.id).locator('.bar');
    expect(Number(await bar.getAttribute('data-reserved-bytes'))).toBe(0);
    const before = await row(target.id).locator('[data-field="available"]').textContent();
    const startedAt = performance.now();
    await reserveOn(target.se, 160 * MiB);
    await page.waitForFunction(
      (id) =>
        Number(document.querySelector(`#storage tr[data-se="${id}"] .bar`)?.getAttribute('data-reserved-bytes')) >=
        160 * 2 ** 20,
      target.id,
      // The longest interval of a healthy idle writable SE is 4 × base, then one refresh and the SSE
      // push: at most 4 × 500 + 250 ms and the push on a quiet host. Waited for, not timed (load varies it).
      { polling: 50 },
    );
    const elapsedMs = performance.now() - startedAt;
    expect(await row(target.id).locator('[data-field="available"]').textContent()).not.toBe(before);
    const reservedWidth = await row(target.id)
      .locator('.seg.reserved')
      .evaluate((e) => (e as unknown as PageElement).style.width);
    expect(Number.parseFloat(reservedWidth)).toBeGreaterThan(55);
    console.info(`ops map: reservation visible in the browser after ${Math.round(elapsedMs)} ms`);
  });

  it('raises the used capacity when files are uploaded through ingest', async () => {
    const usedBefore = await page
      .locator('#storage .bar')
      .evaluateAll((bars) => bars.reduce((a, b) => a + Number(b.getAttribute('data-used-bytes')), 0));
    const db: Queryable = {
      query: async <R>(sql: string, params?: unknown[]) => {
        const r = await schema.pool.query(sql, params);
        return { rows: r.rows as R[], rowCount: r.rowCount ?? 0 };
      },
      exec: async (sql: string) => {
        await schema.pool.query(sql);
      },
    };
    const { token } = await createEdgeToken(db, 'acme');
    const tus = new TusClient(pageIngest.url, token);
    for (const [i, size] of [48 * MiB, 72 * MiB].entries()) {
      const bytes = testBytes(size, 11 + i);
      const path = await tus.createOk(size, metadataFor(bytes, { filename: `panorama-${i}.mp4`, match_id: `m-${i}` }));
      const last = await tus.send(path, bytes, 0, 8 * MiB);
      expect(last.status).toBe(204);
    }
    await page.waitForFunction(
      (min) =>
        [...document.querySelectorAll('#storage .bar')].reduce(
          (a, b) => a + Number(b.getAttribute('data-used-bytes')),
          0,
        ) >= min,
      usedBefore + 120 * MiB,
    );
  });

  it('shows per-stage queued, running and failed counts and the latest jobs with progress', async () => {
    await page.waitForSelector('#jobs tr[data-stage="track"]');
    const cells = async (stage: string) =>
      page.locator(`#jobs tr[data-stage="${stage}"] td`).evaluateAll((tds) => tds.map((t) => t.textContent?.trim()));
    expect(await cells('detect')).toEqual(['0', '1', '0', '3']);
    expect(await cells('track')).toEqual(['1', '1', '0', '2']);
    expect(await cells('vcam')).toEqual(['2', '0', '1', '1']);
    const latest = await page
      .locator('#jobs li[data-job]')
      .evaluateAll((lis) => lis.map((l) => l.getAttribute('data-job')));
    expect(latest).toEqual(['job-ops-4', 'job-ops-3', 'job-ops-2', 'job-ops-1']);
    await expect(page.getAttribute('li[data-job="job-ops-1"] [role="progressbar"]', 'aria-valuenow')).resolves.toBe(
      '29',
    );
    await expect(page.textContent('li[data-job="job-ops-1"]')).resolves.toContain('at track');
  });

  it('lists a commands partition that an orchestrator replica cannot claim, and drops it once claimed', async () => {
    await schema.pool.query(
      `INSERT INTO partition_claim_problems (consumer_group, topic, partition, owner, failures, since, error)
       VALUES ('polyvision-orchestrator', 'polyvision.jobs.commands', 7, 'orchestrator-2', 4, now(), 'claims refused')`,
    );
    await page.waitForSelector('#claim-problems li[data-claim-problem="7"]');
    await expect(page.textContent('#claim-problems li[data-claim-problem="7"]')).resolves.toContain(
      'orchestrator-2 cannot claim it: 4 failed claims',
    );
    await expect(page.textContent('#card-jobs')).resolves.toContain('1 partition(s) unclaimed');
    await schema.pool.query('DELETE FROM partition_claim_problems');
    await page.waitForSelector('#claim-problems', { state: 'detached' });
  });

  it('turns a killed SE unhealthy, with a text label, and records the event', async () => {
    const victim = fleet[4] as FleetSe;
    await victim.se.kill9();
    await page.waitForSelector(`#storage tr[data-se="${victim.id}"][data-health="unhealthy"]`);
    await expect(row(victim.id).locator('.badge').textContent()).resolves.toContain('unhealthy');
    await page.waitForSelector(`#events li[data-type="storage_unhealthy"]`);
    expect(await page.textContent('#events')).toContain(`${victim.id}: healthy → unhealthy`);
    await page.waitForSelector('#storage tr[data-se] .poll.stale');
    await screenshot('03-se-unhealthy');
  });

  it('shows the new leader after the leader ingest is killed', async () => {
    const oldTerm = Number(await page.getAttribute('#leader-id', 'data-term'));
    await leaderIngest.kill9();
    const survivor = instanceIds.get(pageIngest) as string;
    await page.waitForFunction(
      ({ id, term }) => {
        const el = document.querySelector('#leader-id');
        return el?.textContent === id && Number(el.getAttribute('data-term')) > term;
      },
      { id: survivor, term: oldTerm },
    );
    // the change is recorded once, by the replica that saw the new term first, and reaches the list
    await page.waitForFunction(
      (id) => document.querySelector('#events')?.textContent?.includes(`${id} leads the capacity monitor`),
      survivor,
    );
    // the dead replica drops out of the followers once its presence expires
    await page.waitForFunction(() => document.querySelector('#followers')?.textContent === 'none');
    // the new leader polls the killed SE again and finds it unhealthy on its own
    const victim = fleet[4] as FleetSe;
    await page.waitForSelector(`#storage tr[data-se="${victim.id}"][data-health="unhealthy"]`);
    const path = await screenshot('04-failover');
    await copyFile(path, join(ARTIFACTS, 'ops-map.png'));
  });
});
