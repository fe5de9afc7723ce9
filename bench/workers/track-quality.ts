/**
 * Tracking quality against analysis rate, on the synthetic demo clip as `pnpm demo` makes it
 * (seed 7, 20 s, 3 cameras 1280×720 at 25 fps → the 2880×392 panorama; venue calibration present),
 * with the demo's detector (the repository's default model, `auto` tiling — what the demo's worker
 * runs without flags).
 *
 *   node bench/workers/cache-detections.ts --seed 7 --duration 20      # once: detections at 25 fps
 *   node bench/workers/track-quality.ts [--seed 7] [--duration 20] [--tiles auto] [--rates 3,5,10,12.5,25]
 *
 * The detector runs once at the source rate; an analysis rate r takes the source frames
 * round(k · 25 / r) (what the detect stage does: one source frame per analysed frame, selected by
 * index, never resampled), so every rate sees exactly the detector's output on its frames.
 * Per rate: the track stage's own code and defaults (`trackClip`: the model card's thresholds when the
 * detections come from the default model — as the stage does — else calibrated ones, the venue's
 * pitch region, appearance features from the panorama (`TRACK_APPEARANCE=on`, the default), the ball
 * tracker), the same by motion only (`TRACK_APPEARANCE=off`) and, as the baseline in the same run, ByteTrack's fixed MOT17
 * thresholds (high 0.5, new track 0.6, score fusion; the rest as the stage); HOTA / IDF1 / MOTA of the people (players,
 * goalkeepers and referee as one class, our TrackEval port), people tracked per frame vs visible,
 * the ball track's precision/recall (centre within 5 px of the truth) against the single-frame
 * ball detections, and at the chosen rate the analyze stage's team split (needs the panorama).
 * Writes bench/results/track-quality.json.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runAnalyze } from '../../core/src/workers/analyze/index.ts';
import { DEFAULT_MODEL_PATH } from '../../core/src/workers/detect/handler.ts';
import { type DetectionsFile, iou, readDetectionsFile } from '../../core/src/workers/detect/index.ts';
import { buildSequence, evaluateTracking, tracksToIdBoxes } from '../../core/src/workers/quality/index.ts';
import {
  appearanceFeatures,
  modelCardThresholds,
  pitchRegionOf,
  storedAppearanceFeatures,
  type TrackedClip,
  type TrackOptions,
  type TracksFile,
  trackClip,
} from '../../core/src/workers/track/index.ts';
import { detectionsCachePath } from './cache-detections-path.ts';
import { syntheticClip } from './synthetic-clip.ts';

const { values } = parseArgs({
  options: {
    seed: { type: 'string', default: '7' },
    duration: { type: 'string', default: '20' },
    tiles: { type: 'string', default: 'auto' },
    rates: { type: 'string', default: '3,5,10,12.5,25' },
    'teams-at': { type: 'string', default: '10' },
    'ball-radius': { type: 'string', default: '5' },
  },
});

const PEOPLE = ['player', 'goalkeeper', 'referee'];
const clip = await syntheticClip(Number(values.seed), Number(values.duration));
const source = await readDetectionsFile(detectionsCachePath(clip.dir, values.tiles!));
const sourceFps = source.header.analysisFps;
const ballRadius = Number(values['ball-radius']);

// Visibility of every ground-truth box (MOT column 9), to count the people one can see.
const visibility = new Map<string, number>();
for (const line of (await readFile(join(clip.dir, 'gt', 'panorama.mot.txt'), 'utf8')).split('\n')) {
  if (!line.trim()) continue;
  const v = line.split(',');
  visibility.set(`${Number(v[0]) - 1}:${v[1]}`, Number(v[8]));
}

/** Source frames analysed at `rate`: round(k · source / rate), k = 0, 1, … within the clip. */
function selectFrames(rate: number): number[] {
  const out: number[] = [];
  for (let k = 0; ; k++) {
    const i = Math.round((k * sourceFps) / rate);
    if (i >= source.frames.length) return out;
    out.push(i);
  }
}

function detectionsAt(rate: number, picked: number[]): DetectionsFile {
  return {
    header: { ...source.header, analysisFps: rate },
    frames: picked.map((i, k) => ({ frame: k, tMs: source.frames[i]!.tMs, detections: source.frames[i]!.detections })),
  };
}

function truthAt(picked: number[]): TracksFile {
  const index = new Map(picked.map((i, k) => [i, k]));
  return {
    ...clip.truth,
    frameCount: picked.length,
    tracks: clip.truth.tracks
      .map((t) => ({
        ...t,
        class: PEOPLE.includes(t.class) ? 'player' : t.class,
        frames: t.frames.flatMap((f) => (index.has(f.frame) ? [{ ...f, frame: index.get(f.frame)! }] : [])),
      }))
      .filter((t) => t.frames.length > 0),
  } as TracksFile;
}

const pct = (v: number) => +(100 * v).toFixed(1);

function measure(rate: number, picked: number[], result: TrackedClip, truth: TracksFile) {
  const asPeople = {
    ...result.tracks,
    tracks: result.tracks.tracks.map((t) => ({ ...t, class: PEOPLE.includes(t.class) ? 'player' : t.class })),
  } as TracksFile;
  const m = evaluateTracking(
    buildSequence(
      tracksToIdBoxes(truth, 0, ['player']),
      tracksToIdBoxes(asPeople, 0, ['player']),
      0,
      picked.length - 1,
    ),
  );
  // People per frame: visible in the truth (visibility ≥ 0.25), tracked (a person track has a box),
  // and tracked right (a track box at IoU ≥ 0.5 with a visible person, one-to-one, greedy).
  let visible = 0;
  let tracked = 0;
  let trackedRight = 0;
  const personTracks = asPeople.tracks.filter((t) => t.class === 'player');
  for (let k = 0; k < picked.length; k++) {
    const gt = truth.tracks
      .filter((t) => t.class === 'player')
      .flatMap((t) => t.frames.filter((f) => f.frame === k && (visibility.get(`${picked[k]}:${t.id}`) ?? 1) >= 0.25));
    const boxes = personTracks.flatMap((t) => t.frames.filter((f) => f.frame === k));
    visible += gt.length;
    tracked += boxes.length;
    const used = new Set<number>();
    for (const g of gt) {
      let best = -1;
      let bestIou = 0.5;
      boxes.forEach((b, j) => {
        const v = iou(g.box, b.box);
        if (!used.has(j) && v >= bestIou) {
          best = j;
          bestIou = v;
        }
      });
      if (best >= 0) {
        used.add(best);
        trackedRight += 1;
      }
    }
  }
  // Ball: the track's positions vs the truth centre, and the single-frame detections (top score per frame).
  const truthBall = truth.tracks.find((t) => t.class === 'ball');
  const ballAt = new Map(truthBall?.frames.map((f) => [f.frame, f.box]) ?? []);
  const near = (k: number, x: number, y: number) => {
    const b = ballAt.get(k);
    return b !== undefined && Math.hypot((b[0] + b[2]) / 2 - x, (b[1] + b[3]) / 2 - y) <= ballRadius;
  };
  const ballFrames = ballAt.size;
  const track = { positions: 0, right: 0, detected: 0, detectedRight: 0 };
  for (const f of result.ballTrack.frames) {
    if (f.x === null || f.y === null || f.state === 'predicted') continue;
    track.positions += 1;
    if (near(f.frame, f.x, f.y)) track.right += 1;
  }
  const single = { frames: 0, right: 0, anyRight: 0 };
  detectionsAt(rate, picked).frames.forEach((f, k) => {
    const balls = f.detections.filter((d) => d.class === 'ball').sort((a, b) => b.score - a.score);
    if (balls.length === 0) return;
    single.frames += 1;
    const c = (d: (typeof balls)[number]) => [(d.box[0] + d.box[2]) / 2, (d.box[1] + d.box[3]) / 2] as const;
    if (near(k, ...c(balls[0]!))) single.right += 1;
    if (balls.some((d) => near(k, ...c(d)))) single.anyRight += 1;
  });
  return {
    rate,
    analysedFrames: picked.length,
    thresholds: result.thresholds,
    offPitchTracksDropped: result.offPitchTracksDropped,
    people: {
      HOTA: pct(m.HOTA),
      DetA: pct(m.DetA),
      AssA: pct(m.AssA),
      IDF1: pct(m.IDF1),
      MOTA: pct(m.MOTA),
      IDSW: m.IDSW,
      tracks: personTracks.length,
      truthIds: truth.tracks.filter((t) => t.class === 'player').length,
      visiblePerFrame: +(visible / picked.length).toFixed(2),
      trackedPerFrame: +(tracked / picked.length).toFixed(2),
      trackedRightPerFrame: +(trackedRight / picked.length).toFixed(2),
    },
    ball: {
      truthFrames: ballFrames,
      track: {
        precision: track.positions > 0 ? +(track.right / track.positions).toFixed(3) : 0,
        recall: ballFrames > 0 ? +(track.right / ballFrames).toFixed(3) : 0,
        summary: result.ballTrack.summary,
      },
      singleFrameTopScore: {
        precision: single.frames > 0 ? +(single.right / single.frames).toFixed(3) : 0,
        recall: ballFrames > 0 ? +(single.right / ballFrames).toFixed(3) : 0,
      },
      singleFrameAnyDetection: { recall: ballFrames > 0 ? +(single.anyRight / ballFrames).toFixed(3) : 0 },
    },
  };
}

// As the track stage: the colours detect stored with the boxes; a cache written before it has them decodes the panorama.
const sourceFeatures = storedAppearanceFeatures(source) ?? (await appearanceFeatures(clip.panoramaPath, source));
const region = pitchRegionOf(clip.venue, clip.width, clip.height) ?? undefined;
// As the track stage: the model card's thresholds for the model that made the detections (track/handler.ts).
const card = await modelCardThresholds(DEFAULT_MODEL_PATH, source.header.model);
const stageDefaults: TrackOptions = {
  lostTrackBufferAt30Fps: 30,
  interpolateGapFrames: 20,
  pitchRegion: region,
  ...(card ? { modelCardThresholds: { high: card.high, low: card.low } } : {}),
  ...(card?.ball !== undefined ? { ball: { minScore: card.ball } } : {}),
};
const baseline: TrackOptions = {
  ...stageDefaults,
  highScoreThreshold: 0.5,
  lowScoreThreshold: 0.1,
  newTrackThreshold: 0.6,
  fuseScore: true,
};
const rows = [];
let teams: unknown = null;
for (const rate of values.rates!.split(',').map(Number)) {
  const picked = selectFrames(rate);
  const detections = detectionsAt(rate, picked);
  const truth = truthAt(picked);
  const appearance = new Map(picked.map((i, k) => [k, sourceFeatures.get(i) ?? []]));
  const started = performance.now();
  const ours = trackClip(detections, { ...stageDefaults, appearance });
  const trackMs = performance.now() - started;
  const row = {
    ...measure(rate, picked, ours, truth),
    trackMs: Math.round(trackMs),
    motionOnly: measure(rate, picked, trackClip(detections, stageDefaults), truth).people,
    baselineFixedThresholds: measure(rate, picked, trackClip(detections, baseline), truth).people,
  };
  rows.push(row);
  console.error(
    JSON.stringify({
      rate,
      people: row.people,
      motionOnly: row.motionOnly,
      baseline: row.baselineFixedThresholds,
    }),
  );
  if (rate === Number(values['teams-at'])) {
    const work = await mkdtemp(join(tmpdir(), 'pv-bench-track-'));
    try {
      const summary = await runAnalyze({
        tracks: ours.tracks,
        videoPath: clip.panoramaPath,
        venue: clip.venue,
        outputDir: join(work, 'analytics'),
      });
      teams = {
        rate,
        A: { tracks: summary.teams.A.players.length, playersPerFrame: summary.teams.A.playersPerFrame },
        B: { tracks: summary.teams.B.players.length, playersPerFrame: summary.teams.B.playersPerFrame },
        other: summary.players.filter((p) => p.team === 'other').length,
        balanced: summary.teams.balanced,
        warnings: summary.warnings,
      };
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }
}

const results = {
  date: new Date().toISOString(),
  command: `node bench/workers/track-quality.ts --seed ${values.seed} --duration ${values.duration} --tiles ${values.tiles} --rates ${values.rates}`,
  clip: {
    seed: Number(values.seed),
    durationS: Number(values.duration),
    width: clip.width,
    height: clip.height,
    fps: clip.fps,
  },
  detector: { model: source.header.model, sourceRateFrames: source.frames.length },
  ballRadiusPx: ballRadius,
  rates: rows,
  teams,
};
await mkdir('bench/results', { recursive: true });
await writeFile('bench/results/track-quality.json', `${JSON.stringify(results, null, 2)}\n`);
console.log(JSON.stringify(results, null, 2));
