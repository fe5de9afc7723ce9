/**
 * A synthetic match clip for the workers' benchmarks (shared/src/synthetic),
 * cached in `.work/bench-synth-<seed>-<duration>s/`, and its panorama ground
 * truth as tracks (MOTChallenge rows → a tracks file).
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { DetectionClass } from '../../core/src/workers/detect/index.ts';
import type { Track, TracksFile } from '../../core/src/workers/track/index.ts';
import { generateMatch, type VenueCalibration } from '../../shared/src/index.ts';

const CLASS_OF: Record<string, DetectionClass> = { '1': 'player', '2': 'goalkeeper', '3': 'referee', '4': 'ball' };

export interface SyntheticClip {
  dir: string;
  panoramaPath: string;
  venue: VenueCalibration;
  fps: number;
  frameCount: number;
  width: number;
  height: number;
  /** Ground truth of the panorama as tracks (0-based frames), every class. */
  truth: TracksFile;
}

export async function syntheticClip(seed: number, durationS: number): Promise<SyntheticClip> {
  const dir = join('.work', `bench-synth-${seed}-${durationS}s`);
  const done = await stat(join(dir, 'manifest.json')).then(
    () => true,
    () => false,
  );
  if (!done) await generateMatch({ outDir: dir, seed, durationS, panoramaVideo: true });
  const manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8'));
  const venue = JSON.parse(await readFile(join(dir, 'venue.json'), 'utf8')) as VenueCalibration;
  const width = venue.panorama.width_px;
  const height = venue.panorama.height_px;
  const byId = new Map<number, Track>();
  for (const line of (await readFile(join(dir, 'gt', 'panorama.mot.txt'), 'utf8')).split('\n')) {
    if (!line.trim()) continue;
    const [frame, id, left, top, w, h, , cls] = line.split(',');
    let track = byId.get(Number(id));
    if (!track) {
      track = { id: Number(id), class: CLASS_OF[cls!] ?? 'player', frames: [] };
      byId.set(Number(id), track);
    }
    const f = Number(frame) - 1;
    track.frames.push({
      frame: f,
      tMs: (f * 1000) / manifest.fps,
      box: [Number(left), Number(top), Number(left) + Number(w), Number(top) + Number(h)],
      score: 1,
    });
  }
  const truth: TracksFile = {
    format: 'polyvision.tracks',
    version: 1,
    detections: {
      format: 'polyvision.detections',
      version: 1,
      source: { width, height, fps: manifest.fps, frameCount: manifest.frame_count, durationMs: durationS * 1000 },
      analysisFps: manifest.fps,
      model: {
        version: 'ground-truth',
        sha256: '-',
        layout: '-',
        inputWidth: 0,
        inputHeight: 0,
        executionProvider: '-',
        tiles: 1,
      },
      classes: ['player', 'goalkeeper', 'referee', 'ball'],
    },
    tracker: { name: 'ground-truth', options: {} },
    frameCount: manifest.frame_count,
    tracks: [...byId.values()].sort((a, b) => a.id - b.id),
  };
  return {
    dir,
    panoramaPath: join(dir, 'panorama.mp4'),
    venue,
    fps: manifest.fps,
    frameCount: manifest.frame_count,
    width,
    height,
    truth,
  };
}
