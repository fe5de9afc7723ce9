import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sharedAsset } from '../../../../test/support/index.ts';
import {
  Detector,
  probeVideo,
  readDetectionsFile,
  readVideoFrames,
  runDetect,
} from '../../../src/workers/detect/index.ts';
import { drawTracksPng, readTracksFile, trackDetections, writeTracksFile } from '../../../src/workers/track/index.ts';

const WALKING_MP4 = sharedAsset('footage/walking.mp4');
const YOLOX_NANO = sharedAsset('models/yolox_nano.onnx');

const ARTIFACTS = new URL('../../../../test-artifacts/', import.meta.url).pathname;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pv-walking-'));
  await mkdir(ARTIFACTS, { recursive: true });
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe.skipIf(!WALKING_MP4 || !YOLOX_NANO)('walking.mp4 as a one-camera rig: detect → track', () => {
  it('follows the walkers with stable ids and draws them on a frame', async () => {
    const detector = await Detector.open({
      model: { path: YOLOX_NANO! },
      modelVersion: 'yolox-nano-coco',
      classMap: { 0: 'player' },
    });
    const detectionsPath = join(dir, 'detections.jsonl');
    try {
      await runDetect({ inputPath: WALKING_MP4!, outputPath: detectionsPath, detector, analysisFps: 12.5 });
    } finally {
      await detector.close();
    }
    const detections = await readDetectionsFile(detectionsPath);
    const tracks = trackDetections(detections);
    const tracksPath = join(dir, 'tracks.json');
    await writeTracksFile(tracksPath, tracks);
    const reread = await readTracksFile(tracksPath);
    expect(reread.tracks.length).toBe(tracks.tracks.length);

    // "Confident" at the tracker's own high threshold (calibrated on the clip: 0.465 for YOLOX-Nano here).
    const high = (tracks.tracker.options.scoreThresholds as { high: number }).high;
    expect(high).toBeGreaterThan(0.1);
    expect(high).toBeLessThan(0.6);
    const confidentPerFrame = detections.frames.map((f) => f.detections.filter((d) => d.score >= high).length);
    const medianPeople = [...confidentPerFrame].sort((a, b) => a - b)[Math.floor(confidentPerFrame.length / 2)]!;
    const fps = detections.header.analysisFps;
    const long = tracks.tracks.filter((t) => t.frames.length >= 5 * fps);
    // Most walkers are visible for the whole 13.6 s clip: at least half of them keep one id for ≥ 5 s.
    expect(long.length).toBeGreaterThanOrEqual(Math.floor(medianPeople / 2));
    // Identity churn stays bounded: few more ids than people seen over the clip.
    expect(tracks.tracks.length).toBeLessThan(medianPeople * 3);
    for (const t of tracks.tracks) {
      for (let i = 1; i < t.frames.length; i++) expect(t.frames[i]!.frame).toBeGreaterThan(t.frames[i - 1]!.frame);
    }

    // Draw the tracks on analysed frame 150 (12 s; trails show the paths so far).
    const info = await probeVideo(WALKING_MP4!);
    let png: Buffer | undefined;
    for await (const frame of readVideoFrames(WALKING_MP4!, { info, fps: 12.5 })) {
      if (frame.index === 150) {
        png = drawTracksPng(frame, tracks.tracks, 150);
        break;
      }
    }
    expect(png).toBeDefined();
    await writeFile(join(ARTIFACTS, 'walking-tracks.png'), png!);
    const decoded = PNG.sync.read(png!);
    expect([decoded.width, decoded.height]).toEqual([1280, 720]);
    await writeFile(
      join(ARTIFACTS, 'walking-tracks.json'),
      JSON.stringify({ tracks: tracks.tracks.length, long: long.length, medianPeople }, null, 2),
    );
  }, 300_000);
});
