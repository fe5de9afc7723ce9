/**
 * report.html from the files of a match folder: the "check this" list flags
 * an analysis that looks wrong (and a failed job with its reason), analytics
 * are tables and charts (no JSON dump), the videos are embedded.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeReport } from '../src/demo/report.ts';
import type { DemoResult } from '../src/demo/run-demo.ts';
import { formatSummary } from '../src/demo/summary.ts';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'pv-report-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const FRAMES = 30;

/** Writes a match folder: `people` confident detections per frame, `tracked` people tracks, optional ball. */
async function matchFolder(
  name: string,
  o: {
    tracked: number;
    ball: boolean;
    cropOnPitch: number;
    unit: 'm' | 'px';
    teams: [number, number];
    /** Frames whose ball the camera did not follow (far from every player). @defaultValue 0 */
    ballOutOfPlay?: number;
    /** The analyze stage's players per frame of A and B (and its balance verdict on them). */
    perFrame?: { A: number; B: number; balanced: boolean };
    /** Tracks of neither team (class goalkeeper, 3 s each of the 3 s), after the teams' ids. @defaultValue 0 */
    others?: number;
    /** Analysed frames each tracked person is followed in, from the first. @defaultValue all */
    trackedFrames?: number;
  },
) {
  const dir = join(root, name);
  const write = async (path: string, text: string) => {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  };
  const header = { format: 'polyvision.detections', version: 1, analysisFps: 10, source: { width: 2880, height: 392 } };
  const frames = Array.from({ length: FRAMES }, (_, frame) =>
    JSON.stringify({
      frame,
      tMs: frame * 100,
      detections: Array.from({ length: 20 }, () => ({ class: 'player', score: 0.8, box: [0, 0, 10, 20] })),
    }),
  );
  await write('detect/detections.jsonl', `${[JSON.stringify(header), ...frames].join('\n')}\n`);
  const track = (id: number, cls: string) => ({
    id,
    class: cls,
    frames: Array.from({ length: FRAMES }, (_, frame) => ({
      frame,
      tMs: frame * 100,
      box: [0, 0, 10, 20],
      score: 0.8,
    })),
  });
  const tracks = Array.from({ length: o.tracked }, (_, i) => {
    const t = track(i + 1, 'player');
    return { ...t, frames: t.frames.slice(0, o.trackedFrames ?? FRAMES) };
  });
  if (o.ball) tracks.push(track(99, 'ball'));
  await write(
    'track/tracks.json',
    JSON.stringify({ format: 'polyvision.tracks', version: 1, frameCount: FRAMES, tracks }),
  );
  await write(
    'vcam/camera-path.json',
    JSON.stringify({
      quality: {
        ballInCropShare: o.ball ? (o.ballOutOfPlay ? 0.5 : 0.97) : null,
        framesWithBall: o.ball ? FRAMES : 0,
        cropOnPitchShare: o.cropOnPitch,
      },
      output: {
        outputWidth: 696,
        outputHeight: 392,
        sizeSource: 'auto',
        worstUpscale: 1.5,
        maxUpscale: 1.5,
        warning: null,
      },
      ballSource: o.ball ? 'tracks' : 'none',
      pitch: { source: 'calibration' },
      people: { onPitch: o.tracked * FRAMES, total: o.tracked * FRAMES },
      follow: {
        ballFrames: o.ball ? FRAMES - (o.ballOutOfPlay ?? 0) : 0,
        playerFrames: o.ball ? (o.ballOutOfPlay ?? 0) : FRAMES,
        heldFrames: 0,
        firstObservedFrame: 0,
        ballOutOfPlayFrames: o.ballOutOfPlay ?? 0,
      },
    }),
  );
  const ids = Array.from({ length: o.teams[0] + o.teams[1] }, (_, i) => i + 1);
  await write(
    'analyze/summary.json',
    JSON.stringify({
      unit: o.unit,
      durationSeconds: 3,
      teams: {
        A: {
          colour: [200, 30, 30],
          players: ids.slice(0, o.teams[0]),
          ...(o.perFrame ? { playersPerFrame: o.perFrame.A } : {}),
        },
        B: {
          colour: [30, 30, 200],
          players: ids.slice(o.teams[0]),
          ...(o.perFrame ? { playersPerFrame: o.perFrame.B } : {}),
        },
        // The analyze stage's balance flag sits beside the teams (not a team).
        balanced: o.perFrame ? o.perFrame.balanced : o.teams[0] === o.teams[1],
      },
      players: [
        ...ids.map((id) => ({
          trackId: id,
          class: 'player',
          team: id <= o.teams[0] ? 'A' : 'B',
          durationSeconds: 3,
          distance: 10 + id,
          maxSpeed: 4.5,
          meanSpeed: 3.3,
          sprints: id === 1 ? 2 : 0,
        })),
        ...Array.from({ length: o.others ?? 0 }, (_, i) => ({
          trackId: ids.length + i + 1,
          class: 'goalkeeper',
          team: 'other',
          durationSeconds: 3,
          distance: 5,
          maxSpeed: 2,
          meanSpeed: 1.7,
          sprints: 0,
        })),
      ],
    }),
  );
  return dir;
}

function result(outDir: string, failure: DemoResult['failure']): DemoResult {
  return {
    matchId: 'm-1',
    outDir,
    services: { bus: 'memory', database: 'pglite', redis: 'memory' },
    job: { job_id: 'job-1', status: failure ? 'failed' : 'completed', stages: [] },
    timings: [],
    placements: [],
    stored: [],
    executions: {},
    panorama: { stitched: true },
    panoramaPlacement: null,
    segments: [
      { index: 0, durationS: 2, frameCount: 50, sizeBytes: 1000 },
      { index: 1, durationS: 2, frameCount: 50, sizeBytes: 1000 },
    ],
    segmentS: 2,
    leaders: { capacityMonitor: null, orchestratorPartitions: {}, workers: [] },
    upload: { state: 'deleted', insufficientStorageResponses: 0 },
    calibration: { placedOn: null },
    detector: null,
    vcamSize: '696x392',
    analysisFps: 10,
    failure,
    totalMs: 1000,
    outputs: {
      panorama: 'panorama.mp4',
      vcam: failure ? null : 'vcam/vcam.mp4',
      cameraPath: 'vcam/camera-path.json',
      overlay: failure ? null : 'vcam/overlay.mp4',
      ballTrack: null,
      hlsMaster: null,
      hlsPlaylists: [],
      poster: null,
      detections: 'detect/detections.jsonl',
      tracks: 'track/tracks.json',
      analytics: 'analyze/summary.json',
      heatmaps: [],
      segments: 2,
      joined: ['vcam/vcam.mp4'],
      files: [],
    },
  } as unknown as DemoResult;
}

const checksOf = (html: string) => [...html.matchAll(/data-check="([a-z-]+)"/g)].map((m) => m[1]);

describe('report.html', () => {
  it('says what looks wrong, and why a failed job has no video', async () => {
    const dir = await matchFolder('bad', { tracked: 4, ball: false, cropOnPitch: 0.3, unit: 'px', teams: [3, 20] });
    const html = await readFile(
      await writeReport(result(dir, { stage: 'vcam', reason: 'job job-1 failed: stage vcam failed: {"code":"x"}' })),
      'utf8',
    );
    expect(checksOf(html)).toEqual([
      'job-failed',
      'tracks-below-detections',
      'no-ball',
      'crop-off-pitch',
      'teams-unbalanced',
      'pixels',
    ]);
    expect(html).toContain('stage vcam failed');
    expect(html).toMatch(/<h2 id="vcam">Virtual camera<\/h2>\s*<p><em>missing<\/em>/);
    // Analytics as a table and a chart, never a raw JSON dump.
    expect(html).not.toContain('<pre>');
    expect(html.match(/<tr><td class="num">\d+<\/td><td>player<\/td>/g)).toHaveLength(23);
    expect(html).toContain('<svg class="chart"');
    expect(html).toContain('image pixels (no calibration: no sprint counts)');
  });

  it('shows the videos and no warnings for an analysis that looks right', async () => {
    const dir = await matchFolder('good', { tracked: 20, ball: true, cropOnPitch: 0.9, unit: 'm', teams: [11, 11] });
    const html = await readFile(await writeReport(result(dir, null)), 'utf8');
    expect(checksOf(html)).toEqual([]);
    expect(html).toContain('Nothing looks wrong');
    expect(html).toContain('<video controls muted src="vcam/vcam.mp4"');
    expect(html).toContain('<video controls muted src="vcam/overlay.mp4"');
    expect(html).toContain('97.0 % of 30 frames with a ball');
    // Sprints are shown in metres: team A's total is player 1's 2 sprints.
    // Team A: players per frame (not given here), 11 tracks, its distance, 2 sprints.
    expect(html).toMatch(
      /A<\/td><td class="num">–<\/td><td class="num">11<\/td><td class="num">[\d.]+<\/td><td class="num">2<\/td>/,
    );
    // The match: its segments, and which files were joined from them.
    expect(html).toContain('uploaded them in order');
    expect(html.match(/<tr><td>\d+<\/td><td class="num">2\.00 s<\/td>/g)).toHaveLength(2);
    expect(html).toContain('the match as one job: 2 segments of 2 s uploaded by the edge');
    // Only teams are rows of the team table: the balance flag is not a third team.
    expect(html).not.toMatch(/<\/span> balanced<\/td>/);
    // No one of neither team: no `other` row.
    expect(html).not.toContain('shirts of neither team');
  });

  it('shows where the goalkeepers and the referee went: an `other` row under the teams', async () => {
    const dir = await matchFolder('others', {
      tracked: 20,
      ball: true,
      cropOnPitch: 0.9,
      unit: 'm',
      teams: [10, 10],
      others: 2,
    });
    const html = await readFile(await writeReport(result(dir, null)), 'utf8');
    // Two goalkeepers tracked the whole 3 s: 2.0 per frame, 2 tracks, 10 m, no sprints.
    expect(html).toMatch(
      /other <small>\(goalkeepers, the referee, shirts of neither team\)<\/small><\/td><td class="num">2\.0<\/td><td class="num">2<\/td><td class="num">10\.0<\/td><td class="num">0<\/td>/,
    );
  });

  it('calls a completed job that tracked nobody an error, in the report and in the printed summary', async () => {
    // What the football detector does on a street clip: the job completes, no person is tracked.
    const dir = await matchFolder('nobody', { tracked: 0, ball: false, cropOnPitch: 0.9, unit: 'px', teams: [0, 0] });
    const done = result(dir, null);
    const html = await readFile(await writeReport(done), 'utf8');
    expect(checksOf(html)[0]).toBe('nobody-tracked');
    expect(checksOf(html)).not.toContain('tracks-below-detections');
    expect(html).toContain('No person was tracked in any of the 30 analysed frames');
    expect(done.checks?.map((c) => c.id)).toEqual(checksOf(html));
    const summary = formatSummary(done, dir);
    expect(summary).toMatch(/\nCHECK: No person was tracked in any of the 30 analysed frames .*--model/);
    // The football detector on walking.mp4 (player-detector 3.2): a few short tracks, far under one a frame.
    const few = result(
      await matchFolder('few', {
        tracked: 1,
        trackedFrames: 6,
        ball: false,
        cropOnPitch: 0.9,
        unit: 'px',
        teams: [0, 0],
      }),
      null,
    );
    const fewHtml = await readFile(await writeReport(few), 'utf8');
    expect(checksOf(fewHtml)[0]).toBe('nobody-tracked');
    expect(fewHtml).toContain('Almost nobody was tracked: 0.20 people per analysed frame over 30 frames');
    expect(formatSummary(few, dir)).toMatch(/\nCHECK: Almost nobody was tracked: 0\.20 .*--model/);
    // A job that tracked people prints no CHECK line.
    const good = result(
      await matchFolder('tracked', { tracked: 20, ball: true, cropOnPitch: 0.9, unit: 'm', teams: [11, 11] }),
      null,
    );
    await writeReport(good);
    expect(formatSummary(good, dir)).not.toContain('CHECK:');
    // Metres from pitch points: the summary says how well they fit.
    expect(formatSummary(good, dir)).not.toContain('pitch points');
    good.analyticsUnit = 'm';
    good.panorama.pitchRegistration = { points: 17, parts: 2, rmsErrorM: 0.43, maxErrorM: 0.89, worstPoint: 'p' };
    expect(formatSummary(good, dir)).toContain(
      "the pitch registered from 17 pitch points (--pitch-points): RMS 0.43 m, worst 0.89 m, one homography per camera's part",
    );
  });

  it('warns when the match completed without a segment that failed', async () => {
    const dir = await matchFolder('partial', { tracked: 20, ball: true, cropOnPitch: 0.9, unit: 'm', teams: [11, 11] });
    const partial = result(dir, null);
    partial.job.error = {
      code: 'segments_failed',
      message: 'segment 1 (detect: video_corrupt) failed; the match went on without it — moov atom not found',
      retriable: false,
      segments: [1],
    };
    const html = await readFile(await writeReport(partial), 'utf8');
    expect(checksOf(html)).toEqual(['segments-failed']);
    expect(html).toContain('segment 1 (detect: video_corrupt) failed');
  });

  it('says when the ball track left the play and the camera followed the players instead', async () => {
    const dir = await matchFolder('false-ball', {
      tracked: 20,
      ball: true,
      cropOnPitch: 0.9,
      unit: 'm',
      teams: [11, 11],
      ballOutOfPlay: 15,
    });
    const html = await readFile(await writeReport(result(dir, null)), 'utf8');
    // Not "the ball is out of the crop": the camera chose not to follow a track far from every player.
    expect(checksOf(html)).toEqual(['ball-out-of-play']);
    expect(html).toContain('outside the players&#39; window in 15 of 30 frames');
    expect(html).toContain('the ball track out of play in 15 of the players');
  });

  it("judges the teams by the analyze stage's players per frame, not by track ids", async () => {
    // A match whose players broke into several tracks each: 13 v 22 ids, 10 v 8 players per frame.
    const base = { tracked: 20, ball: true, cropOnPitch: 0.9, unit: 'm' as const, teams: [13, 22] as [number, number] };
    const fair = await matchFolder('ids-not-players', { ...base, perFrame: { A: 10, B: 8, balanced: true } });
    const html = await readFile(await writeReport(result(fair, null)), 'utf8');
    expect(checksOf(html)).toEqual([]);
    expect(html).toContain('players per frame');
    const lopsided = await matchFolder('lopsided', { ...base, perFrame: { A: 10, B: 3, balanced: false } });
    const warned = await readFile(await writeReport(result(lopsided, null)), 'utf8');
    expect(checksOf(warned)).toEqual(['teams-unbalanced']);
    expect(warned).toContain('10 v 3 players per frame');
  });
});
