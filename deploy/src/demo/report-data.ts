import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DemoResult } from './run-demo.ts';

/** One player row of `summary.json` (fields the report reads; others are ignored). */
export interface ReportPlayer {
  trackId: number;
  class?: string;
  team?: string;
  /** outfield, goalkeeper, referee, assistant_referee or unknown (analyze's `roles.ts`); absent in older files. */
  role?: string;
  durationSeconds?: number;
  distance?: number;
  maxSpeed?: number;
  meanSpeed?: number;
  sprints?: number | null;
}

/** What the report knows about the analysis, read from the collected files (absent files give nulls). */
export interface ReportData {
  /** Per analysed frame: people detections (all / score ≥ 0.5), and people tracked (not interpolated). */
  perFrame: { detections: number; confident: number; tracked: number }[];
  analysedFrames: number;
  analysisFps: number | null;
  /** Median score of people detections; null without detections. */
  medianPeopleScore: number | null;
  /** Detector warnings from the detections header (`warnings`), when it has some. */
  detectionWarnings: string[];
  trackCount: number;
  peopleTrackCount: number;
  ballTrackFrames: number;
  /** camera-path.json as written by the vcam stage (loosely typed: older paths lack fields). */
  cameraPath: {
    quality?: {
      ballInCropShare?: number | null;
      framesWithBall?: number;
      cropOnPitchShare?: number | null;
      rmsJerk?: number;
    };
    output?: {
      outputWidth: number;
      outputHeight: number;
      sizeSource?: string;
      worstUpscale?: number;
      maxUpscale?: number;
      warning?: string | null;
    };
    ballSource?: 'ball-track' | 'tracks' | 'none';
    /** Where the centre of play came from: `tracks` or `detections (score ≥ …)`. */
    peopleSource?: string;
    pitch?: { source: string };
    people?: { onPitch: number; total: number };
    follow?: {
      ballFrames: number;
      playerFrames: number;
      heldFrames: number;
      firstObservedFrame: number | null;
      /** Absent in paths planned before the ball had to be in play. */
      ballOutOfPlayFrames?: number;
    };
  } | null;
  analytics: {
    unit?: string;
    durationSeconds?: number;
    /** Teams by name, and the analyze stage's `balanced` flag beside them (summary.json). */
    teams?: Record<string, ReportTeam | boolean | null>;
    players?: ReportPlayer[];
    /** Why figures are limited (e.g. no calibration), when the analyze stage says so. */
    notes?: string[];
  } | null;
}

const PEOPLE = new Set(['player', 'goalkeeper', 'referee']);

async function readJson<T>(dir: string, path: string | null): Promise<T | null> {
  if (!path) return null;
  try {
    return JSON.parse(await readFile(join(dir, path), 'utf8')) as T;
  } catch {
    return null;
  }
}

/** Reads what the report shows from the match folder; a missing or unreadable file gives empty figures. */
export async function readReportData(result: DemoResult): Promise<ReportData> {
  const o = result.outputs;
  const perFrame: ReportData['perFrame'] = [];
  const scores: number[] = [];
  let detectionWarnings: string[] = [];
  let analysisFps: number | null = null;
  if (o.detections) {
    const text = await readFile(join(result.outDir, o.detections), 'utf8').catch(() => '');
    for (const line of text.split('\n')) {
      if (!line.startsWith('{')) continue;
      const row = JSON.parse(line) as {
        frame?: number;
        detections?: { class: string; score: number }[];
        analysisFps?: number;
        warnings?: unknown;
      };
      if (row.frame === undefined) {
        analysisFps = row.analysisFps ?? null;
        if (Array.isArray(row.warnings)) detectionWarnings = row.warnings.map(String);
        continue;
      }
      const people = (row.detections ?? []).filter((d) => PEOPLE.has(d.class));
      for (const d of people) scores.push(d.score);
      perFrame[row.frame] = {
        detections: people.length,
        confident: people.filter((d) => d.score >= 0.5).length,
        tracked: 0,
      };
    }
  }
  const tracks = await readJson<{ tracks?: { class: string; frames: { frame: number; interpolated?: boolean }[] }[] }>(
    result.outDir,
    o.tracks,
  );
  let ballTrackFrames = 0;
  for (const t of tracks?.tracks ?? []) {
    for (const f of t.frames) {
      if (t.class === 'ball') {
        ballTrackFrames += 1;
        continue;
      }
      if (!PEOPLE.has(t.class) || f.interpolated) continue;
      perFrame[f.frame] ??= { detections: 0, confident: 0, tracked: 0 };
      perFrame[f.frame]!.tracked += 1;
    }
  }
  for (let i = 0; i < perFrame.length; i++) perFrame[i] ??= { detections: 0, confident: 0, tracked: 0 };
  scores.sort((a, b) => a - b);
  return {
    perFrame,
    analysedFrames: perFrame.length,
    analysisFps,
    medianPeopleScore: scores.length > 0 ? scores[Math.floor(scores.length / 2)]! : null,
    detectionWarnings,
    trackCount: tracks?.tracks?.length ?? 0,
    peopleTrackCount: tracks?.tracks?.filter((t) => PEOPLE.has(t.class)).length ?? 0,
    ballTrackFrames,
    cameraPath: await readJson(result.outDir, o.cameraPath),
    analytics: await readJson(result.outDir, o.analytics),
  };
}

/** A team of summary.json: its mean kit colour (RGB) and its players' track ids. */
export interface ReportTeam {
  colour?: number[];
  /** Track ids (one player may have several over a match). */
  players?: number[];
  /** Players of the team per analysed frame (the analyze stage's team size), when it says. */
  playersPerFrame?: number;
}

/**
 * The teams of an analytics summary by name, without the flags the analyze stage keeps beside
 * them (`balanced`).
 */
export function teamsOf(analytics: ReportData['analytics']): Record<string, ReportTeam> {
  return Object.fromEntries(
    Object.entries(analytics?.teams ?? {}).filter(
      (entry): entry is [string, ReportTeam] => typeof entry[1] === 'object' && entry[1] !== null,
    ),
  );
}
