import { randomUUID } from 'node:crypto';
import { type MatchSegment, matchJobId } from '@polyvision/shared';
import { afterEach, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.ts';
import { readJobsSummary } from '../../src/ops/jobs-summary.ts';
import { topicNames } from '../../src/orchestrator/contracts/topics.ts';
import { compileOrchestratorTuning } from '../../src/orchestrator/options.ts';
import { JobStateMachine } from '../../src/orchestrator/state/job-state-machine.ts';
import { testDatabaseDrivers } from '../orchestrator/support/databases.ts';
import { PANORAMA } from '../orchestrator/support/harness.ts';

const driver = testDatabaseDrivers.find((d) => !d.skip)!;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

describe(`ops jobs panel, a match job (${driver.name})`, () => {
  it('shows a live match with its segments, what each stage processed, its lag and its gap', async () => {
    const { db, drop } = await driver.open();
    cleanups.push(drop);
    await migrate(db);
    const machine = new JobStateMachine(compileOrchestratorTuning({ topicPrefix: 'tops' }), topicNames('tops'));
    const segment = (slot: number): MatchSegment => ({
      type: 'match.segment',
      message_id: randomUUID(),
      job_id: matchJobId('acme', 'derby'),
      organization_id: 'acme',
      match_id: 'derby',
      created_at: new Date().toISOString(),
      slot,
      duration_s: 10,
      input: { ...PANORAMA, object_key: `acme/derby/${slot}.mp4` },
      stages: ['detect', 'track'],
    });
    for (const slot of [40, 42]) {
      const result = await db.transaction((tx) => machine.apply(tx, segment(slot), 3));
      expect(result.outcome).toBe('applied');
    }
    expect((await db.transaction((tx) => machine.apply(tx, segment(42), 3))).outcome).toBe('duplicate');
    const summary = await readJobsSummary(db, 10);
    const line = summary.latest.find((j) => j.job_id === matchJobId('acme', 'derby'))!;
    expect(line.match).toMatchObject({
      live: true,
      segments_received: 2,
      gaps: [1],
      processed: { detect: 0, track: 0 },
      lag_segments: 2,
      lag_s: 20,
    });
    // Its unfinished rows, each with its segment: detect dispatched on both, track waiting.
    expect(line.stages.map((s) => `${s.stage}:${s.segment_index}:${s.status}`)).toEqual([
      'detect:0:dispatched',
      'track:0:pending',
      'detect:2:dispatched',
      'track:2:pending',
    ]);
    const counts = summary.stages.find((s) => s.stage === 'detect')!;
    expect(counts.queued).toBe(2);
  });
});
