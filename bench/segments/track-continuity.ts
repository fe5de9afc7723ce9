/**
 * Track continuity across segment boundaries (issue #18): the synthetic match clip as `pnpm demo`
 * makes it (seed 7, 20 s, 2880×392 panorama at 25 fps, venue calibration), detected once at the
 * demo's analysis rate (10 fps, the detector as the stage opens it; cached beside the clip), split into
 * segments of `--segment-s` seconds (each renumbered from frame 0 / t = 0, as a segment's own detect
 * run writes it) and tracked by the track stage's code (`trackClip`, model-card thresholds, the
 * venue's pitch):
 * - **carry**: segment by segment, each continuing from the previous one's `track-carry`
 *   (ByteTracker state), merged with `mergeSegmentTracks`;
 * - **no carry** (the baseline: every segment its own job, as ingest does today): a fresh tracker
 *   per segment, ids made disjoint per segment;
 * - **whole clip**: one run, no segments (the tracker's own switches at the same frames).
 * Id switches at the boundaries are counted against the ground truth (`boundary-switches.ts`).
 * Also prints the detector's CPU seconds per second of video (process + ffmpeg children).
 *
 *   node bench/segments/track-continuity.ts [--seed 7] [--duration 20] [--fps 10] [--segment-s 2,5,10]
 *
 * Writes bench/results/segments-track-continuity.json.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { type TracksFile, trackClip } from '../../core/src/workers/track/index.ts';
import { syntheticClip } from '../workers/synthetic-clip.ts';
import { boundarySwitches } from './boundary-switches.ts';
import { splitDetections } from './split-detections.ts';
import { SEGMENT_BENCH_OPTIONS, stageDetections, stageTrackOptions } from './stage-detections.ts';
import { trackSegments } from './track-segments.ts';

const { values } = parseArgs({ options: SEGMENT_BENCH_OPTIONS });

const loadBefore = loadavg();
const clip = await syntheticClip(Number(values.seed), Number(values.duration));
const fps = Number(values.fps);
const { path: detectionsPath, detections, detect } = await stageDetections(clip, fps);
const options = await stageTrackOptions(clip, detections);
const times = detections.frames.map((f) => f.tMs);

const runs = [];
for (const segmentS of values['segment-s']!.split(',').map(Number)) {
  const segs = splitDetections(detections, segmentS);
  const boundaries: number[] = [];
  let frame = 0;
  for (const s of segs.slice(0, -1)) {
    frame += s.detections.frames.length;
    boundaries.push(frame);
  }
  const withCarry = trackSegments(segs, options, true);
  const without = trackSegments(segs, options, false);
  const wholeStarted = performance.now();
  const whole = trackClip(detections, options).tracks;
  const wholeMs = performance.now() - wholeStarted;
  const count = (tracks: TracksFile) => boundarySwitches(tracks, clip.truth, boundaries, times, clip.fps);
  const people = (tracks: TracksFile) => tracks.tracks.filter((t) => t.class !== 'ball').length;
  const run = {
    segmentS,
    segments: segs.length,
    boundaries: boundaries.length,
    carry: { ...count(withCarry.tracks), people: people(withCarry.tracks), trackMs: Math.round(withCarry.ms) },
    noCarry: { ...count(without.tracks), people: people(without.tracks), trackMs: Math.round(without.ms) },
    wholeClip: { ...count(whole), people: people(whole), trackMs: Math.round(wholeMs) },
  };
  console.log(JSON.stringify(run));
  runs.push(run);
}
const result = {
  name: 'segments-track-continuity',
  command: `node bench/segments/track-continuity.ts --seed ${values.seed} --duration ${values.duration} --fps ${fps} --segment-s ${values['segment-s']}`,
  host: { cpus: cpus().length, model: cpus()[0]?.model, loadAverage1m: { before: loadBefore[0], after: loadavg()[0] } },
  clip: {
    seed: Number(values.seed),
    durationS: Number(values.duration),
    width: clip.width,
    height: clip.height,
    sourceFps: clip.fps,
  },
  analysisFps: fps,
  detections: {
    frames: detections.frames.length,
    model: detections.header.model.version,
    tiles: detections.header.model.tiles,
  },
  detect: detect
    ? { ...detect, cpuSecondsPerVideoSecond: detect.cpuSeconds / Number(values.duration) }
    : { cached: detectionsPath },
  truthPeople: clip.truth.tracks.filter((t) => t.class !== 'ball').length,
  runs,
};
await mkdir('bench/results', { recursive: true });
await writeFile('bench/results/segments-track-continuity.json', `${JSON.stringify(result, null, 2)}\n`);
console.log(JSON.stringify({ detect: result.detect, loadAverage1m: result.host.loadAverage1m }));
