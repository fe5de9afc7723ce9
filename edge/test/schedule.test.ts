import { describe, expect, it } from 'vitest';
import { waitFor } from '../../test/support/index.ts';
import { activeMatch, everySecondsExpression, recordingWindow, startScheduler } from '../src/schedule/index.ts';

const kickoff = '2026-11-21T15:00:00Z';
const k = Date.parse(kickoff);
const matches = [
  { match_id: 'a', kickoff, duration_s: 6000 },
  { match_id: 'b', kickoff: '2026-11-21T19:00:00Z', duration_s: 6000 },
];

describe('schedule', () => {
  it('records from lead before kickoff until tail after the end', () => {
    expect(recordingWindow(matches[0] as (typeof matches)[0], 900, 300)).toEqual({
      startMs: k - 900_000,
      endMs: k + 6_300_000,
    });
    expect(activeMatch(matches, k - 901_000, 900, 300)).toBeNull();
    expect(activeMatch(matches, k - 900_000, 900, 300)?.match_id).toBe('a');
    expect(activeMatch(matches, k + 6_299_999, 900, 300)?.match_id).toBe('a');
    expect(activeMatch(matches, k + 6_300_000, 900, 300)).toBeNull();
    expect(activeMatch(matches, Date.parse('2026-11-21T18:50:00Z'), 900, 300)?.match_id).toBe('b');
  });

  it('an explicit window (ad-hoc recording) replaces lead and tail', () => {
    const adHoc = { match_id: 'now', kickoff, duration_s: 5, window: { startMs: 10, endMs: 20 } };
    expect(recordingWindow(adHoc, 900, 300)).toEqual({ startMs: 10, endMs: 20 });
    expect(activeMatch([adHoc], 20, 900, 300)).toBeNull();
  });

  it('builds node-cron expressions and runs the jobs until stopped', async () => {
    expect(everySecondsExpression(5)).toBe('*/5 * * * * *');
    expect(everySecondsExpression(120)).toBe('0 */2 * * * *');
    const seen: Array<string | null> = [];
    let beats = 0;
    const scheduler = startScheduler({
      matches,
      leadS: 900,
      tailS: 300,
      heartbeatS: 1,
      cleanupCron: '* * * * * *',
      now: () => k,
      onMatch: (m) => {
        seen.push(m?.match_id ?? null);
      },
      onHeartbeat: () => {
        beats++;
      },
      onCleanup: () => {},
    });
    await waitFor(() => seen.length >= 2 && beats >= 1, { timeoutMs: 5_000 });
    await scheduler.stop();
    const after = seen.length;
    await new Promise((r) => setTimeout(r, 1_200));
    expect(seen.length).toBe(after);
    expect(seen.every((id) => id === 'a')).toBe(true);
    expect(() =>
      startScheduler({
        matches: [],
        leadS: 0,
        tailS: 0,
        heartbeatS: 1,
        cleanupCron: 'every minute',
        onMatch: () => {},
        onHeartbeat: () => {},
        onCleanup: () => {},
      }),
    ).toThrow(expect.objectContaining({ code: 'edge_schedule_invalid_cron' }));
  });
});
