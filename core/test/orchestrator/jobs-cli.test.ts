import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/index.ts';
import { KafkaBus } from '../../src/bus/kafka/kafka-bus.ts';
import { PgDatabase } from '../../src/db/drivers/pg-database.ts';
import { databaseUrl, randomSchema } from './support/databases.ts';
import { Harness, PANORAMA } from './support/harness.ts';

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const kafkaBrokers = process.env.KAFKA_BROKERS;

describe.skipIf(!kafkaBrokers || !databaseUrl)('pnpm polyvision jobs', () => {
  let harness: Harness | undefined;
  let schema = '';
  afterEach(async () => {
    await harness?.close();
    await harness?.db.exec(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
    await harness?.db.close();
  });

  async function cli(args: string[]) {
    try {
      const { stdout, stderr } = await run(process.execPath, ['deploy/src/cli/main.ts', 'jobs', ...args], {
        cwd: repoRoot,
        env: {
          ...process.env,
          DATABASE_URL: databaseUrl!,
          DATABASE_SCHEMA: schema,
          KAFKA_BROKERS: kafkaBrokers!,
          POLYVISION_TOPIC_PREFIX: harness!.prefix,
          LOG_LEVEL: 'silent',
        },
      });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const e = error as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  }

  it('lists, shows, cancels and reprocesses jobs; refuses bad input with exit status 2', async () => {
    schema = randomSchema();
    harness = new Harness(
      new KafkaBus({ brokers: kafkaBrokers!.split(','), clientId: 'jobs-cli-test' }),
      new PgDatabase({ connectionString: databaseUrl!, schema }),
    );
    const h = harness;
    await h.setup();
    await h.startOrchestrator();
    await h.startWorker({ sleepMs: 5 });
    const [done] = await h.submit(1, ['detect', 'track']);
    await h.waitForStatus([done!], 'completed');

    const list = await cli(['list', '--status', 'completed']);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain(done);
    const show = await cli(['show', done!, '--json']);
    expect(show.code).toBe(0);
    expect(JSON.parse(show.stdout)).toMatchObject({ job_id: done, status: 'completed', progress_percent: 100 });
    expect((await cli(['show', 'no-such-job'])).code).toBe(1);
    expect((await cli(['reprocess', done!, '--from', 'nope', '--model-version', 'v2'])).code).toBe(2);
    expect((await cli(['frobnicate'])).code).toBe(2);

    const reprocess = await cli(['reprocess', done!, '--from', 'track', '--model-version', 'v2']);
    expect(reprocess.code).toBe(0);
    await waitFor(
      async () =>
        (
          await h.db.query(
            `SELECT 1 FROM job_stages WHERE job_id = $1 AND stage = 'track' AND attempt = 2 AND status = 'completed'`,
            [done],
          )
        ).rowCount === 1,
      { timeoutMs: 30_000 },
    );
    await h.waitForStatus([done!], 'completed', 30_000);
    const track = await h.db.query<{ model_version: string; attempt: number }>(
      `SELECT model_version, attempt FROM job_stages WHERE job_id = $1 AND stage = 'track'`,
      [done],
    );
    expect(track.rows[0]).toEqual({ model_version: 'v2', attempt: 2 });

    await Promise.all(h.workers.splice(0).map((w) => w.close()));
    const [pending] = await h.submit(1, ['detect']);
    await h.waitForStatus([pending!], 'running', 30_000);
    expect((await cli(['cancel', pending!, '--reason', 'operator test'])).code).toBe(0);
    await h.waitForStatus([pending!], 'cancelled', 30_000);
    const error = await h.db.query<{ error: { code: string; message: string } }>(
      `SELECT error FROM jobs WHERE job_id = $1`,
      [pending],
    );
    expect(error.rows[0]!.error).toMatchObject({ code: 'cancelled', message: 'operator test' });
  });

  it("shows a match job's progress, cancels and reprocesses a range of its segments, ends it", async () => {
    schema = randomSchema();
    harness = new Harness(
      new KafkaBus({ brokers: kafkaBrokers!.split(','), clientId: 'jobs-cli-test' }),
      new PgDatabase({ connectionString: databaseUrl!, schema }),
    );
    const h = harness;
    await h.setup();
    await h.startOrchestrator();
    await h.startWorker({ sleepMs: 5 }, ['detect', 'track']);
    const seg = (slot: number) =>
      h.client.segment({
        organization_id: 'acme',
        match_id: 'cli-match',
        slot,
        duration_s: 10,
        input: { ...PANORAMA, object_key: `acme/cli-match/${slot}.mp4` },
        stages: ['detect', 'track'],
      });
    const id = await seg(500);
    await seg(502);
    const track0 = async () =>
      (
        await h.db.query<{ status: string; model_version: string }>(
          `SELECT status, model_version FROM job_stages WHERE job_id = $1 AND stage = 'track' AND segment_index = 0`,
          [id],
        )
      ).rows[0];
    await waitFor(async () => (await track0())?.status === 'completed', { timeoutMs: 30_000 });
    const show = await cli(['show', id]);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain('live  segments 2');
    expect(show.stdout).toContain('gaps 1');
    expect((await cli(['cancel', id, '--segments', 'x-1'])).code).toBe(2);
    expect((await cli(['cancel', id, '--segments', '1-1'])).code).toBe(0);
    expect((await cli(['end', id, '--last-slot', '502'])).code).toBe(0);
    await h.waitForStatus([id], 'completed', 30_000);
    expect((await cli(['reprocess', id, '--from', 'track', '--model-version', 'v2', '--segments', '0'])).code).toBe(0);
    await waitFor(async () => (await track0())?.model_version === 'v2', { timeoutMs: 30_000 });
    await h.waitForStatus([id], 'completed', 30_000);
    const list = await cli(['list', '--match', 'cli-match']);
    expect(list.stdout).toContain('ended (operator) at segment 2  segments 2  processed detect 2 track 2');
    expect(list.stdout).toContain('cancelled 1');
    const [file] = await h.submit(1, ['detect']);
    expect((await cli(['cancel', file!, '--segments', '0-1'])).code).toBe(2);
  });
});
