import type { Stage } from '@polyvision/shared';
import { describe, expect, it } from 'vitest';
import type { StageStatus } from '../../src/orchestrator/state/job-rows.ts';
import {
  dispatchableTasks,
  lastSegmentInMatch,
  matchComplete,
  type PlanRow,
  type SegmentState,
  segmentGaps,
} from '../../src/orchestrator/state/segment-plan.ts';

const STAGES: Stage[] = ['detect', 'track', 'vcam', 'analyze', 'encode'];
const rows = (spec: Record<number, Partial<Record<Stage, StageStatus>>>): PlanRow[] =>
  Object.entries(spec).flatMap(([k, statuses]) =>
    STAGES.map((stage) => ({ stage, segment_index: Number(k), status: statuses[stage] ?? 'pending' })),
  );
const done = {
  detect: 'completed',
  track: 'completed',
  vcam: 'completed',
  analyze: 'completed',
  encode: 'completed',
} as const;
const plan = (segments: Record<number, SegmentState>, r: PlanRow[], finalIndex: number | null = null) =>
  dispatchableTasks({
    stages: STAGES,
    segments: new Map(Object.entries(segments).map(([k, s]) => [Number(k), s])),
    rows: r,
    finalIndex,
  }).map((t) => `${t.stage}:${t.index}${t.final ? ':final' : ''}${t.carryFrom === null ? '' : `<${t.carryFrom}`}`);

describe('segment plan', () => {
  it('fans detect out over received segments; a sequential stage waits for its previous segment and for gaps', () => {
    expect(plan({ 0: 'received', 2: 'received' }, rows({ 0: {}, 2: {} }))).toEqual(['detect:0', 'detect:2']);
    const r = rows({ 0: { detect: 'completed' }, 2: { detect: 'completed' } });
    expect(plan({ 0: 'received', 2: 'received' }, r)).toEqual(['track:0']);
    // Segment 1 given up (missing): track on 2 continues from 0's carry once track 0 is done.
    const r2 = rows({ 0: { detect: 'completed', track: 'completed' }, 2: { detect: 'completed' } });
    expect(plan({ 0: 'received', 1: 'missing', 2: 'received' }, r2)).toEqual(['vcam:0', 'analyze:0', 'track:2<0']);
  });

  it('with a fan-out window, keeps at most that many detect tasks in flight, the lowest segments first', () => {
    const windowed = (segments: Record<number, SegmentState>, r: PlanRow[], fanOutInFlight: number | null) =>
      dispatchableTasks({
        stages: STAGES,
        segments: new Map(Object.entries(segments).map(([k, s]) => [Number(k), s])),
        rows: r,
        finalIndex: null,
        fanOutInFlight,
      }).map((t) => `${t.stage}:${t.index}`);
    const six = { 0: 'received', 1: 'received', 2: 'received', 3: 'received', 4: 'received', 5: 'received' } as const;
    // Listed out of order (as rows may come back from the database): the window still takes 0 and 1.
    const r = [...rows({ 3: {}, 1: {}, 5: {}, 0: {}, 4: {}, 2: {} })].reverse();
    expect(windowed(six, r, 2).sort()).toEqual(['detect:0', 'detect:1']);
    expect(windowed(six, r, null)).toHaveLength(6);
    // 0 done, 1 running, 2 dispatched: the window of 2 is full; the sequential chain still runs.
    const busy = rows({
      0: { detect: 'completed' },
      1: { detect: 'running' },
      2: { detect: 'dispatched' },
      3: {},
      4: {},
      5: {},
    });
    expect(windowed(six, busy, 2)).toEqual(['track:0']);
    // 1 done: one slot frees and goes to segment 3 (not 5), alongside track 1 after track 0.
    const next = rows({
      0: { detect: 'completed', track: 'completed' },
      1: { detect: 'completed' },
      2: { detect: 'running' },
      3: {},
      4: {},
      5: {},
    });
    expect(windowed(six, next, 2).sort()).toEqual(['analyze:0', 'detect:3', 'track:1', 'vcam:0']);
  });

  it('runs analyze and encode of the newest segment at once, as final only once the end is known', () => {
    const r = rows({ 0: { detect: 'completed', track: 'completed', vcam: 'completed' } });
    // No waiting for a later segment (a segment of live lag): not final while the match goes on.
    expect(plan({ 0: 'received' }, r)).toEqual(['analyze:0']);
    expect(plan({ 0: 'received' }, r, 0)).toEqual(['analyze:0:final']);
    expect(plan({ 0: 'received', 1: 'received' }, [...r, ...rows({ 1: {} })])).toEqual(['analyze:0', 'detect:1']);
    // The final segment failed: segment 0 is the last one still in the match, and runs as final.
    expect(plan({ 0: 'received', 1: 'failed' }, [...r, ...rows({ 1: {} })], 1)).toEqual(['analyze:0:final']);
  });

  it('names the last segment still in the match only once nothing after it can arrive', () => {
    const states = (spec: Record<number, SegmentState>) =>
      new Map(Object.entries(spec).map(([k, v]) => [Number(k), v]));
    expect(lastSegmentInMatch(states({ 0: 'received', 1: 'received' }), null)).toBeNull();
    expect(lastSegmentInMatch(states({ 0: 'received', 1: 'received' }), 1)).toBe(1);
    expect(lastSegmentInMatch(states({ 0: 'received', 1: 'failed', 2: 'missing' }), 2)).toBe(0);
    expect(lastSegmentInMatch(states({ 0: 'received', 2: 'failed' }), 2)).toBeNull(); // 1 may still arrive
    expect(lastSegmentInMatch(states({ 0: 'failed', 1: 'cancelled' }), 1)).toBeNull();
  });

  it('completes when the end is known, no gap is left and every received segment went through every stage', () => {
    const input = (segments: Record<number, SegmentState>, r: PlanRow[], finalIndex: number | null) => ({
      stages: STAGES,
      segments: new Map(Object.entries(segments).map(([k, s]) => [Number(k), s])),
      rows: r,
      finalIndex,
    });
    expect(matchComplete(input({ 0: 'received' }, rows({ 0: done }), null))).toBe(false);
    expect(matchComplete(input({ 0: 'received' }, rows({ 0: done }), 1))).toBe(false);
    expect(matchComplete(input({ 0: 'received', 1: 'cancelled' }, rows({ 0: done, 1: {} }), 1))).toBe(true);
    expect(
      segmentGaps(
        new Map([
          [0, 'received'],
          [3, 'received'],
        ]),
        null,
      ),
    ).toEqual([1, 2]);
    expect(segmentGaps(new Map([[0, 'received']]), 2)).toEqual([1, 2]);
  });
});
