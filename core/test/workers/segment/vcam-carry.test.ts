import { describe, expect, it } from 'vitest';
import { type CameraPath, type CameraPathCarry, planCameraPath } from '../../../src/workers/vcam/index.ts';
import { movingTrack, tracksFile } from '../support/tracks.ts';

const FPS = 25;
const SEGMENT_FRAMES = 50; // 2 s
const SEGMENTS = 3;

/** Play that speeds up to the right: the camera is panning fast at every boundary. */
const centreAt = (matchFrame: number, player: number): [number, number] => {
  const t = matchFrame / FPS;
  return [400 + 40 * t * t + (player - 2) * 60, 540 + (player % 2) * 80];
};

/** Segment `index`'s tracks, frames from 0 (what the track stage writes for a segment). */
function segmentTracks(index: number) {
  const offset = index * SEGMENT_FRAMES;
  return tracksFile(
    Array.from({ length: 5 }, (_, p) => movingTrack(p + 1, 'player', SEGMENT_FRAMES, (f) => centreAt(offset + f, p))),
    SEGMENT_FRAMES,
    FPS,
  );
}

function segmentedPath(carry: boolean): CameraPath[] {
  const paths: CameraPath[] = [];
  let state: CameraPathCarry | null = null;
  for (let i = 0; i < SEGMENTS; i++) {
    const path = planCameraPath(segmentTracks(i), { carry: carry ? state : null });
    state = path.carry ?? null;
    paths.push(path);
  }
  return paths;
}

/** Largest |Δcx| between consecutive frames inside the segments, and at each boundary. */
function steps(paths: CameraPath[]): { inside: number; boundaries: number[] } {
  let inside = 0;
  for (const p of paths) {
    for (let f = 1; f < p.windows.length; f++)
      inside = Math.max(inside, Math.abs(p.windows[f]!.cx - p.windows[f - 1]!.cx));
  }
  const boundaries = paths.slice(1).map((p, i) => Math.abs(p.windows[0]!.cx - paths[i]!.windows.at(-1)!.cx));
  return { inside, boundaries };
}

describe('vcam path over a match segment by segment', () => {
  it('continues across the boundaries with the carried camera state: no jump', () => {
    const { inside, boundaries } = steps(segmentedPath(true));
    expect(inside).toBeGreaterThan(1); // the camera really pans
    for (const step of boundaries) expect(step).toBeLessThanOrEqual(inside * 1.05);
  });

  it('without the carry, the camera jumps at a boundary', () => {
    const carried = steps(segmentedPath(true));
    const fresh = steps(segmentedPath(false));
    expect(Math.max(...fresh.boundaries)).toBeGreaterThan(2 * Math.max(carried.inside, ...carried.boundaries));
  });

  it('carries the window and velocity the path ended with', () => {
    const [first] = segmentedPath(true);
    const last = first!.windows.at(-1)!;
    expect(first!.carry!.camera.cx).toBeCloseTo(last.cx, 6);
    expect(first!.carry!.camera.width).toBeCloseTo(last.width, 6);
    expect(first!.carry!.camera.vx).toBeGreaterThan(0);
    expect(first!.carry!.recentTargets.length).toBeGreaterThan(0);
  });
});
