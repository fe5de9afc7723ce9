/**
 * Quality of the analysis stages on synthetic ground truth.
 *
 *   node bench/workers/quality.ts [--seed 901] [--duration 12] [--model PATH --class-map 0:player,...] [--tiles N]
 *
 * Measures, on the panorama of a synthetic clip (shared/src/synthetic):
 * - ByteTrack fed with the ground-truth boxes (the tracker alone; the
 *   SoccerNet "GT detections" setting) and with degraded ground truth
 *   (jitter, 10 % dropped, random scores): HOTA, IDF1, MOTA;
 * - detection precision/recall at IoU 0.5 for people and ball with the
 *   model (default: the repository's player detector when present, else
 *   ../shared/models/yolox_nano.onnx with COCO classes), and tracking
 *   metrics of ByteTrack on those detections;
 * - the virtual camera: share of frames with the true ball inside the crop, RMS jerk.
 * Writes bench/results/workers-quality.json.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_MODEL_PATH } from '../../core/src/workers/detect/handler.ts';
import {
  type DetectionClass,
  type DetectionsFile,
  Detector,
  readDetectionsFile,
  runDetect,
} from '../../core/src/workers/detect/index.ts';
import {
  buildSequence,
  detectionQuality,
  evaluateTracking,
  type TrackingMetrics,
  tracksToIdBoxes,
} from '../../core/src/workers/quality/index.ts';
import { type TracksFile, trackDetections } from '../../core/src/workers/track/index.ts';
import { ballFromTracks, measureCameraPath, planCameraPath } from '../../core/src/workers/vcam/index.ts';
import { syntheticClip } from './synthetic-clip.ts';

const { values } = parseArgs({
  options: {
    seed: { type: 'string', default: '901' },
    duration: { type: 'string', default: '12' },
    model: { type: 'string' },
    'class-map': { type: 'string' },
    // 3 tiles suit the 2880×392 synthetic panorama with the default 1280×720 model (tile scale ≈ 1.2); auto gives 5.
    tiles: { type: 'string', default: '3' },
  },
});

const PEOPLE = ['player', 'goalkeeper', 'referee'];
const pick = (m: TrackingMetrics) => ({
  HOTA: +(100 * m.HOTA).toFixed(1),
  DetA: +(100 * m.DetA).toFixed(1),
  AssA: +(100 * m.AssA).toFixed(1),
  IDF1: +(100 * m.IDF1).toFixed(1),
  MOTA: +(100 * m.MOTA).toFixed(1),
  IDSW: m.IDSW,
});

function tracking(truth: TracksFile, tracks: TracksFile, classes: string[]) {
  const seq = buildSequence(
    tracksToIdBoxes(truth, 0, classes),
    tracksToIdBoxes(tracks, 0, classes),
    0,
    truth.frameCount - 1,
  );
  return pick(evaluateTracking(seq));
}

/** People are one class for scoring (the tracker follows whatever the detector calls them). */
function asPeople(tracks: TracksFile): TracksFile {
  return {
    ...tracks,
    tracks: tracks.tracks.map((t) => ({ ...t, class: PEOPLE.includes(t.class) ? 'player' : t.class })),
  };
}

const clip = await syntheticClip(Number(values.seed), Number(values.duration));
const truth = clip.truth;
const truthPeople = asPeople(truth);

// 1. ByteTrack on ground-truth boxes.
const gtDetections: DetectionsFile = {
  header: truth.detections,
  frames: Array.from({ length: truth.frameCount }, (_, frame) => ({
    frame,
    tMs: (frame * 1000) / clip.fps,
    detections: truthPeople.tracks.flatMap((t) =>
      t.frames
        .filter((f) => f.frame === frame)
        .map((f) => ({ class: t.class as DetectionClass, score: 0.95, box: f.box })),
    ),
  })),
};
const gtTracks = trackDetections(gtDetections);
const byteTrackOnTruth = {
  people: tracking(truthPeople, gtTracks, ['player']),
  ball: tracking(truth, gtTracks, ['ball']),
};

// 1b. ByteTrack on degraded ground truth: boxes jittered (centre σ = 10 % of the size, size ±10 %),
// 10 % of boxes dropped, scores uniform in [0.2, 1] — a detector's typical errors, reproducibly (seeded).
let state = 12345;
const random = () => {
  state = (Math.imul(state, 1103515245) + 12345) >>> 0;
  return state / 2 ** 32;
};
const gauss = () => Math.sqrt(-2 * Math.log(random() + 1e-12)) * Math.cos(2 * Math.PI * random());
const noisyDetections: DetectionsFile = {
  header: truth.detections,
  frames: gtDetections.frames.map((f) => ({
    ...f,
    detections: f.detections
      .filter(() => random() >= 0.1)
      .map((d) => {
        const w = d.box[2] - d.box[0];
        const h = d.box[3] - d.box[1];
        const cx = (d.box[0] + d.box[2]) / 2 + gauss() * 0.1 * w;
        const cy = (d.box[1] + d.box[3]) / 2 + gauss() * 0.1 * h;
        const s = 1 + (random() - 0.5) * 0.2;
        return {
          ...d,
          score: 0.2 + 0.8 * random(),
          box: [cx - (w * s) / 2, cy - (h * s) / 2, cx + (w * s) / 2, cy + (h * s) / 2] as [
            number,
            number,
            number,
            number,
          ],
        };
      }),
  })),
};
const noisyTracks = trackDetections(noisyDetections);
const byteTrackOnNoisyTruth = {
  people: tracking(truthPeople, noisyTracks, ['player']),
  ball: tracking(truth, noisyTracks, ['ball']),
};

// 2. The detector.
const modelPath =
  values.model ?? (existsSync(DEFAULT_MODEL_PATH) ? DEFAULT_MODEL_PATH : '../shared/models/yolox_nano.onnx');
const defaultMap = modelPath === DEFAULT_MODEL_PATH ? '0:player,1:goalkeeper,2:referee,3:ball' : '0:player,32:ball';
const classMap = Object.fromEntries(
  (values['class-map'] ?? defaultMap).split(',').map((p) => {
    const [id, name] = p.split(':');
    return [Number(id), name as DetectionClass];
  }),
);
const detector = await Detector.open({
  model: { path: modelPath },
  modelVersion: 'bench',
  classMap,
  tiling: { columns: values.tiles === 'auto' ? 'auto' : Number(values.tiles) },
});
const work = await mkdtemp(join(tmpdir(), 'pv-bench-quality-'));
let detectSummary: Awaited<ReturnType<typeof runDetect>>;
let detections: DetectionsFile;
try {
  detectSummary = await runDetect({
    inputPath: clip.panoramaPath,
    outputPath: join(work, 'detections.jsonl'),
    detector,
    failOnZeroDetections: false,
  });
  detections = await readDetectionsFile(join(work, 'detections.jsonl'));
} finally {
  await detector.close();
  await rm(work, { recursive: true, force: true });
}
const prFor = (classes: string[], minScore: number) =>
  detectionQuality(
    detections.frames.map((f) => ({
      gt: truth.tracks
        .filter((t) => classes.includes(t.class))
        .flatMap((t) => t.frames.filter((k) => k.frame === f.frame).map((k) => k.box)),
      detections: f.detections.filter(
        (d) => classes.includes(d.class === 'ball' ? 'ball' : 'player') || classes.includes(d.class),
      ),
    })),
    0.5,
    minScore,
  );
const detectionPr = {
  people: prFor(PEOPLE, 0.3),
  ball: prFor(['ball'], 0.3),
};
const detTracks = trackDetections(detections);
const byteTrackOnDetections = {
  people: tracking(truthPeople, asPeople(detTracks), ['player']),
  ball: tracking(truth, detTracks, ['ball']),
};

// 3. Virtual camera, judged against the true ball.
const truthBall: TracksFile = { ...truth, tracks: truth.tracks.filter((t) => t.class === 'ball') };
const vcam = {
  fromTruth: measureCameraPath(planCameraPath(truth), ballFromTracks(truthBall)),
  fromDetections: measureCameraPath(planCameraPath(detTracks), ballFromTracks(truthBall)),
};

const results = {
  date: new Date().toISOString(),
  clip: {
    seed: Number(values.seed),
    durationS: Number(values.duration),
    width: clip.width,
    height: clip.height,
    fps: clip.fps,
  },
  model: {
    path: modelPath,
    classMap,
    tiles: detectSummary.header.model.tiles,
    executionProvider: detectSummary.header.model.executionProvider,
  },
  byteTrackOnTruth,
  byteTrackOnNoisyTruth,
  detectionPr,
  byteTrackOnDetections,
  vcam,
};
await mkdir('bench/results', { recursive: true });
await writeFile('bench/results/workers-quality.json', `${JSON.stringify(results, null, 2)}\n`);
console.log(JSON.stringify(results, null, 2));
