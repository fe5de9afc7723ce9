/**
 * The ball track across segment boundaries (issue #18): the synthetic match clip as `pnpm demo` makes
 * it (seed 7, 20 s, 2880×392 panorama, venue calibration), detected once at the demo's analysis rate
 * (10 fps, the stage's detector; cached beside the clip), split into segments of `--segment-s` seconds,
 * and the ball tracked by the track stage's code (`trackClip`, model-card floors, the venue's pitch):
 * - **carry**: each segment continues from the previous one's `track-carry` (its last 2 s of ball
 *   candidates, `BallCarry`);
 * - **no carry**: a fresh ball tracker per segment (the state before 2026-11-29);
 * - **whole clip**: one run, no segments; and the same with the ball's motion model before 2026-11-29
 *   (acceleration noise 1.5 · width per s², now 0.15).
 * Two inputs: the stage's own detections, whose ball class does not work (3.6 ball boxes a frame
 * above the card's floor, mostly boots), and the same person boxes with a **simulated ball detector** in place of its ball
 * boxes — the true ball, missed in bursts (a two-state chain: 20 % of frames, mean run 2.5 frames),
 * centre jitter σ 1 px, scores 0.3–0.8; four static marks on the pitch (each in 60 % of frames) and
 * one boot a frame at a random person's feet (scores 0.1–0.6) as false alarms — what a ball-capable
 * detector would give, at stated rates. Scored per analysed frame (detected and interpolated positions;
 * right = centre within 5 px of the truth), over the clip and within 1 s of a boundary.
 *
 *   node bench/segments/ball-continuity.ts [--seed 7] [--duration 20] [--fps 10] [--segment-s 2,5,10]
 *
 * Writes bench/results/segments-ball-continuity.json.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import type { BoxXyxy, DetectionsFile } from '../../core/src/workers/detect/index.ts';
import { type BallFrame, trackClip } from '../../core/src/workers/track/index.ts';
import { Prng } from '../../shared/src/index.ts';
import { syntheticClip } from '../workers/synthetic-clip.ts';
import { splitDetections } from './split-detections.ts';
import { SEGMENT_BENCH_OPTIONS, stageDetections, stageTrackOptions } from './stage-detections.ts';
import { trackSegments } from './track-segments.ts';

const { values } = parseArgs({
  options: { ...SEGMENT_BENCH_OPTIONS, simulations: { type: 'string', default: '8' } },
});
const RADIUS_PX = 5;

const loadBefore = loadavg();
const clip = await syntheticClip(Number(values.seed), Number(values.duration));
const fps = Number(values.fps);
const { detections } = await stageDetections(clip, fps);
const options = await stageTrackOptions(clip, detections);
const truthBall = new Map(
  clip.truth.tracks.find((t) => t.class === 'ball')?.frames.map((f) => [f.frame, f.box] as const) ?? [],
);

/** The stage's person boxes with a simulated ball detector's boxes in place of its ball boxes (see above). */
function withSimulatedBall(file: DetectionsFile, seed: number): DetectionsFile {
  const rng = new Prng(seed);
  const box = (x: number, y: number, half: number): BoxXyxy => [x - half, y - half, x + half, y + half];
  const feet = file.frames.flatMap((f) =>
    f.detections.filter((d) => d.class !== 'ball').map((d) => [(d.box[0] + d.box[2]) / 2, d.box[3]] as const),
  );
  const marks = Array.from({ length: 4 }, () => rng.pick(feet));
  let missing = false;
  return {
    header: file.header,
    frames: file.frames.map((f) => {
      const people = f.detections.filter((d) => d.class !== 'ball');
      const balls = [];
      missing = missing ? rng.next() < 0.6 : rng.next() < 0.1;
      const truth = truthBall.get(f.sourceFrame ?? -1);
      if (truth && !missing) {
        const x = (truth[0] + truth[2]) / 2 + rng.gaussian();
        const y = (truth[1] + truth[3]) / 2 + rng.gaussian();
        balls.push({ class: 'ball' as const, score: rng.range(0.3, 0.8), box: box(x, y, (truth[2] - truth[0]) / 2) });
      }
      for (const [x, y] of marks) {
        if (rng.next() < 0.6) balls.push({ class: 'ball' as const, score: rng.range(0.1, 0.6), box: box(x, y, 2) });
      }
      const boot = people.length > 0 ? rng.pick(people) : null;
      if (boot) {
        const x = (boot.box[0] + boot.box[2]) / 2 + rng.range(-3, 3);
        balls.push({ class: 'ball' as const, score: rng.range(0.1, 0.6), box: box(x, boot.box[3] - 2, 2) });
      }
      return { ...f, detections: [...people, ...balls] };
    }),
  };
}

/** Precision/recall of the ball positions (detected, interpolated) over `frames` of the match, overall and near boundaries. */
function score(file: DetectionsFile, frames: readonly BallFrame[], boundaries: readonly number[]) {
  const near = (m: number) => boundaries.some((b) => Math.abs(m + 0.5 - b) <= fps);
  const all = { truth: 0, positions: 0, right: 0 };
  const edge = { truth: 0, positions: 0, right: 0 };
  frames.forEach((f, m) => {
    const truth = truthBall.get(file.frames[m]!.sourceFrame ?? -1);
    const counters = near(m) ? [all, edge] : [all];
    for (const c of counters) if (truth) c.truth += 1;
    if (f.x === null || f.y === null || (f.state !== 'detected' && f.state !== 'interpolated')) return;
    const right = truth && Math.hypot((truth[0] + truth[2]) / 2 - f.x, (truth[1] + truth[3]) / 2 - f.y) <= RADIUS_PX;
    for (const c of counters) {
      c.positions += 1;
      if (right) c.right += 1;
    }
  });
  const pr = (c: typeof all) => ({
    precision: c.positions > 0 ? +(c.right / c.positions).toFixed(3) : 0,
    recall: c.truth > 0 ? +(c.right / c.truth).toFixed(3) : 0,
    truthFrames: c.truth,
  });
  return { all: pr(all), nearBoundaries: pr(edge) };
}

const simulations = Number(values.simulations);
const inputs: { input: string; files: DetectionsFile[] }[] = [
  { input: 'stage detector', files: [detections] },
  {
    input: `simulated ball detector (${simulations} draws)`,
    files: Array.from({ length: simulations }, (_, k) => withSimulatedBall(detections, Number(values.seed) * 1000 + k)),
  },
];
type Scored = ReturnType<typeof score>;
const file0Width = (files: DetectionsFile[]) => files[0]!.header.source.width;
/** Mean over the draws (and the range when there are several). */
function mean(scores: Scored[]) {
  const of = (pick: (s: Scored) => number) => {
    const v = scores.map(pick);
    const m = +(v.reduce((a, b) => a + b, 0) / v.length).toFixed(3);
    return v.length > 1 ? { mean: m, min: Math.min(...v), max: Math.max(...v) } : m;
  };
  return {
    precision: of((s) => s.all.precision),
    recall: of((s) => s.all.recall),
    nearBoundaries: { precision: of((s) => s.nearBoundaries.precision), recall: of((s) => s.nearBoundaries.recall) },
  };
}
const runs = [];
for (const { input, files } of inputs) {
  const wholes = files.map((file) => trackClip(file, options).ballTrack.frames);
  // The motion model before 2026-11-29: acceleration noise 1.5 · width per s² (now 0.15).
  const oldMotion = { ...options, ball: { ...options.ball, accelerationPxPerS2: 1.5 * file0Width(files) } };
  const wholesOldMotion = files.map((file) => trackClip(file, oldMotion).ballTrack.frames);
  for (const segmentS of values['segment-s']!.split(',').map(Number)) {
    const variants = {
      carry: [] as Scored[],
      noCarry: [] as Scored[],
      wholeClip: [] as Scored[],
      wholeClipOldMotion: [] as Scored[],
    };
    let segments = 0;
    files.forEach((file, k) => {
      const segs = splitDetections(file, segmentS);
      segments = segs.length;
      const boundaries: number[] = [];
      let frame = 0;
      for (const s of segs.slice(0, -1)) {
        frame += s.detections.frames.length;
        boundaries.push(frame);
      }
      const joined = (carry: boolean) => trackSegments(segs, options, carry).ballTracks.flatMap((b) => b.frames);
      variants.carry.push(score(file, joined(true), boundaries));
      variants.noCarry.push(score(file, joined(false), boundaries));
      variants.wholeClip.push(score(file, wholes[k]!, boundaries));
      variants.wholeClipOldMotion.push(score(file, wholesOldMotion[k]!, boundaries));
    });
    const run = {
      input,
      segmentS,
      segments,
      carry: mean(variants.carry),
      noCarry: mean(variants.noCarry),
      wholeClip: mean(variants.wholeClip),
      wholeClipOldMotion: mean(variants.wholeClipOldMotion),
    };
    console.log(JSON.stringify(run));
    runs.push(run);
  }
}
const result = {
  name: 'segments-ball-continuity',
  command: `node bench/segments/ball-continuity.ts --seed ${values.seed} --duration ${values.duration} --fps ${fps} --segment-s ${values['segment-s']} --simulations ${simulations}`,
  host: { cpus: cpus().length, model: cpus()[0]?.model, loadAverage1m: { before: loadBefore[0], after: loadavg()[0] } },
  clip: { seed: Number(values.seed), durationS: Number(values.duration), width: clip.width, height: clip.height },
  analysisFps: fps,
  radiusPx: RADIUS_PX,
  detections: { frames: detections.frames.length, model: detections.header.model.version },
  runs,
};
await mkdir('bench/results', { recursive: true });
await writeFile('bench/results/segments-ball-continuity.json', `${JSON.stringify(result, null, 2)}\n`);
