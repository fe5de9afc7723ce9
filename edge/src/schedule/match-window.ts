/**
 * Match windows: recording runs from `lead_s` before kickoff until `tail_s`
 * after the match's end (`kickoff + duration_s`).
 */

/** A scheduled match. */
export interface ScheduledMatch {
  match_id: string;
  /** ISO 8601 with offset. */
  kickoff: string;
  duration_s: number;
  /** An explicit recording window (epoch ms) that replaces lead and tail (ad-hoc recordings). */
  window?: { startMs: number; endMs: number };
}

/** The recording window of a match, epoch ms. */
export function recordingWindow(
  match: ScheduledMatch,
  leadS: number,
  tailS: number,
): { startMs: number; endMs: number } {
  if (match.window) return match.window;
  const kickoff = Date.parse(match.kickoff);
  return { startMs: kickoff - leadS * 1000, endMs: kickoff + (match.duration_s + tailS) * 1000 };
}

/** The match to record at `nowMs` (the earliest kickoff whose window contains it), or null. */
export function activeMatch(
  matches: readonly ScheduledMatch[],
  nowMs: number,
  leadS: number,
  tailS: number,
): ScheduledMatch | null {
  let best: ScheduledMatch | null = null;
  for (const m of matches) {
    const w = recordingWindow(m, leadS, tailS);
    if (nowMs >= w.startMs && nowMs < w.endMs && (!best || Date.parse(m.kickoff) < Date.parse(best.kickoff))) best = m;
  }
  return best;
}
