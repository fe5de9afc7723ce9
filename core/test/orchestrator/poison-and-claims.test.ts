import { jobKey } from '@polyvision/shared';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/index.ts';
import { MemoryBus } from '../../src/bus/memory/memory-bus.ts';
import { partitionForKey } from '../../src/bus/murmur2.ts';
import { readJobsSummary } from '../../src/ops/jobs-summary.ts';
import { testDatabaseDrivers } from './support/databases.ts';
import { Harness, PANORAMA } from './support/harness.ts';

const driver = testDatabaseDrivers.find((d) => d.name === 'pg')!;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function world() {
  const { db, drop } = await driver.open();
  const h = new Harness(new MemoryBus({ defaultPartitions: 4 }), db);
  cleanups.push(drop, () => h.close());
  await h.setup();
  return h;
}

/** A match id whose key lands on the commands partition of `key` (4 partitions in these tests). */
function matchOnPartitionOf(organization: string, key: string): string {
  const wanted = partitionForKey(key, 12);
  for (let i = 0; ; i++) {
    const match = `m-${i}`;
    if (partitionForKey(jobKey(organization, match), 12) === wanted) return match;
  }
}

describe.skipIf(driver.skip)('poison commands and unclaimable partitions (pg)', () => {
  it('dead-letters a command that fails deterministically after its retry cap, with the error, and the partition moves on', async () => {
    const h = await world();
    // A real, deterministic database failure for one match (as a bug or a constraint would be).
    await h.db.exec(`CREATE FUNCTION poison_row() RETURNS trigger AS $$
      BEGIN IF NEW.match_id = 'poison' THEN RAISE EXCEPTION 'poisoned row %', NEW.job_id; END IF; RETURN NEW; END $$
      LANGUAGE plpgsql;
      CREATE TRIGGER poison_row BEFORE INSERT ON jobs FOR EACH ROW EXECUTE FUNCTION poison_row();`);
    const dlq = await h.collect(`${h.prefix}.dlq`);
    const orchestrator = await h.startOrchestrator({
      poisonMaxAttempts: 3,
      handlerRetryBackoffMs: 50,
      handlerRetryMaxBackoffMs: 200,
    });
    const outcomes: string[] = [];
    orchestrator.observe((_r, outcome, command) => {
      if (command?.type === 'job.submit') outcomes.push(outcome);
    });
    await h.startWorker({ sleepMs: 5 });
    const poison = await h.client.submit({
      organization_id: 'acme',
      match_id: 'poison',
      inputs: [PANORAMA],
      stages: ['detect'],
    });
    // Behind it on the same partition: a healthy job.
    const healthyMatch = matchOnPartitionOf('acme', jobKey('acme', 'poison'));
    const healthy = await h.client.submit({
      organization_id: 'acme',
      match_id: healthyMatch,
      inputs: [PANORAMA],
      stages: ['detect'],
    });
    await h.waitForStatus([healthy], 'completed');
    await waitFor(() => dlq.length === 1, { timeoutMs: 10_000 });
    const letter = JSON.parse(dlq[0]!.value);
    expect(letter).toMatchObject({
      original_topic: `${h.prefix}.jobs.commands`,
      error: { code: 'db_error', retriable: false },
    });
    expect(letter.error.message).toContain('failed 3 times');
    expect(letter.error.message).toContain(`poisoned row ${poison}`);
    expect(outcomes).toEqual(['dead_lettered', 'applied']);
    expect((await h.jobStatuses([poison])).size).toBe(0);
  });

  it('claims a partition again after a claim landed out of order, reporting it until then, and runs its jobs', async () => {
    const h = await world();
    const orchestrator = await h.startOrchestrator({ handlerRetryBackoffMs: 50 });
    await waitFor(() => orchestrator.ownedPartitions().length === 12);
    // A stale claim from a replica that lost the partitions lands after ours: we are fenced everywhere.
    await h.db.query(`UPDATE partition_owners SET epoch = epoch + 1, owner = 'stale-replica'`);
    // ...and for a while the database refuses our claims too.
    await h.db.exec(`CREATE FUNCTION refuse_claim() RETURNS trigger AS $$
      BEGIN IF NEW.owner <> 'stale-replica' THEN RAISE EXCEPTION 'claims refused for now'; END IF; RETURN NEW; END $$
      LANGUAGE plpgsql;
      CREATE TRIGGER refuse_claim BEFORE UPDATE ON partition_owners FOR EACH ROW EXECUTE FUNCTION refuse_claim();`);
    await h.startWorker({ sleepMs: 5 });
    const ids = await h.submit(4, ['detect']);
    await waitFor(() => orchestrator.claimProblems().length > 0, { timeoutMs: 10_000 });
    const problem = orchestrator.claimProblems()[0]!;
    expect(problem.error).toMatch(/claims refused for now|partition .* belongs to epoch/);
    // The ops page's jobs panel lists it too (from the database, as another replica's page would).
    await waitFor(async () =>
      (await readJobsSummary(h.db, 5)).claim_problems.some(
        (p) => p.partition === problem.partition && p.owner === orchestrator.tuning.instanceId && p.failures >= 1,
      ),
    );
    await h.db.exec(`DROP TRIGGER refuse_claim ON partition_owners`);
    await h.waitForStatus(ids, 'completed');
    await waitFor(() => orchestrator.claimProblems().length === 0, { timeoutMs: 60_000 });
    await waitFor(async () => (await readJobsSummary(h.db, 5)).claim_problems.length === 0);
    // Partitions the jobs used are ours again (idle ones find out on their next command).
    const owners = await h.db.query<{ owner: string }>(
      `SELECT DISTINCT o.owner FROM partition_owners o JOIN jobs j ON j.commands_partition = o.partition
       WHERE j.job_id = ANY($1::text[])`,
      [ids],
    );
    expect(owners.rows.map((r) => r.owner)).toEqual([orchestrator.tuning.instanceId]);
  });
});
