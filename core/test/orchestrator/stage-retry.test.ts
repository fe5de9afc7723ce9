import { describe, expect, it } from 'vitest';
import { compileOrchestratorTuning } from '../../src/orchestrator/options.ts';
import type { StageRow } from '../../src/orchestrator/state/job-rows.ts';
import { retryOf } from '../../src/orchestrator/state/stage-retry.ts';

const tuning = compileOrchestratorTuning({});

/** A stage whose run has used `attempt` attempts, `waiting` of them on waiting errors, started `ageMs` ago. */
function stage(attempt: number, waiting: number, ageMs = 1_000): StageRow {
  return {
    attempt,
    run_first_attempt: 1,
    max_attempts: 3,
    waiting_attempts: waiting,
    run_started_at: new Date(Date.now() - ageMs),
  } as StageRow;
}

const lost = { code: 'heartbeat_timeout', message: 'the worker stopped heartbeating', retriable: true };
const crashed = { code: 'stage_crashed', message: 'boom', retriable: true };

describe('retryOf', () => {
  it('retries a lost worker as a waiting attempt, however many attempts were lost, within the retry window', () => {
    // Three workers killed under the same stage (the soak's failed match): the fourth attempt still comes.
    expect(retryOf(tuning, stage(3, 2), lost)).toMatchObject({ waiting: true });
    expect(retryOf(tuning, stage(9, 8), lost)).toMatchObject({ waiting: true });
  });

  it('after the retry window counts lost workers against max_attempts, as it counts other errors', () => {
    const old = tuning.retryWindowMs + 1_000;
    expect(retryOf(tuning, stage(3, 2, old), lost)).toMatchObject({ waiting: false });
    expect(retryOf(tuning, stage(5, 2, old), lost)).toBeNull();
    expect(retryOf(tuning, stage(2, 0), crashed)).toMatchObject({ waiting: false });
    expect(retryOf(tuning, stage(3, 0), crashed)).toBeNull();
  });
});
